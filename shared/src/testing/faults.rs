//! A session store whose writes of one session fail, for the tests that check that one session
//! the store fails on keeps no other from being ended (contract section 11). DynamoDB Local
//! fails no single item, and a mocked client answers no real reads.

use std::sync::Mutex;

use crate::error::StoreError;
use crate::session::{
    SessionKey, SessionRecord, SessionStore, SessionWrite, StartOutcome, StartedWithin,
    SummaryChunk,
};

/// `inner`, but every write of the first session written through it fails, as a store failing
/// on its side after retries does (`Unavailable`): whichever session a caller ends first, so
/// that the failure comes before the others whatever their order.
pub struct FailsOneSession<S> {
    pub inner: S,
    failing: Mutex<Option<String>>,
}

impl<S> FailsOneSession<S> {
    pub fn new(inner: S) -> Self {
        FailsOneSession {
            inner,
            failing: Mutex::new(None),
        }
    }

    /// The session whose writes fail, once one was written.
    pub fn failing(&self) -> Option<String> {
        self.failing.lock().unwrap().clone()
    }

    fn fails(&self, session_id: &str) -> bool {
        let mut failing = self.failing.lock().unwrap();
        failing.get_or_insert_with(|| session_id.to_owned()) == session_id
    }
}

impl<S: SessionStore> SessionStore for FailsOneSession<S> {
    async fn start_session(&self, session: &SessionRecord) -> Result<StartOutcome, StoreError> {
        self.inner.start_session(session).await
    }

    async fn get_session(
        &self,
        namespace: &str,
        service_id: &str,
        session_id: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        self.inner
            .get_session(namespace, service_id, session_id)
            .await
    }

    async fn session_summaries(
        &self,
        namespace: &str,
        service_id: &str,
        within: StartedWithin,
        before: Option<&str>,
    ) -> Result<SummaryChunk, StoreError> {
        self.inner
            .session_summaries(namespace, service_id, within, before)
            .await
    }

    async fn get_sessions(
        &self,
        namespace: &str,
        service_id: &str,
        session_ids: &[String],
    ) -> Result<Vec<SessionRecord>, StoreError> {
        self.inner
            .get_sessions(namespace, service_id, session_ids)
            .await
    }

    async fn overdue_sessions(&self, now: i64, max: usize) -> Result<Vec<SessionKey>, StoreError> {
        self.inner.overdue_sessions(now, max).await
    }

    async fn write_session(
        &self,
        read: &SessionRecord,
        next: &SessionRecord,
    ) -> Result<SessionWrite, StoreError> {
        match self.fails(&read.session_id) {
            true => Err(StoreError::Unavailable("injected: the store failed".into())),
            false => self.inner.write_session(read, next).await,
        }
    }
}
