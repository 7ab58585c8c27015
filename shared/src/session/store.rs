//! The port sessions are kept behind. A start is one conditioned write, never a read then a
//! write: the cap holds under any concurrency.

use std::future::Future;

use super::record::{SessionRecord, SessionState};
use super::start::StartRefusal;
use crate::error::StoreError;

/// The sessions of an agent that started within a stretch of time: `from` inclusive, `until`
/// exclusive, in Unix seconds (ids are UUIDv7s of their start, so this is a range of keys).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StartedWithin {
    pub from: Option<i64>,
    pub until: Option<i64>,
}

/// What a list reads of each session to filter and count it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub session_id: String,
    pub deployment_id: String,
    pub state: SessionState,
    pub completion_status: Option<String>,
    pub started_at: Option<String>,
}

impl From<&SessionRecord> for SessionSummary {
    fn from(session: &SessionRecord) -> Self {
        SessionSummary {
            session_id: session.session_id.clone(),
            deployment_id: session.deployment_id.clone(),
            state: session.state,
            completion_status: session.completion_status.clone(),
            started_at: session.started_at.clone(),
        }
    }
}

/// One read of an agent's sessions, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryChunk {
    pub summaries: Vec<SessionSummary>,
    /// Whether older sessions follow (read them before the last id of this chunk).
    pub more: bool,
}

/// An agent's sessions read newest first, one read of the store at a time (the loop the list and
/// a delete's end of sessions share).
pub struct SummaryReader<'a, S> {
    sessions: &'a S,
    namespace: &'a str,
    service_id: &'a str,
    within: StartedWithin,
    before: Option<String>,
    done: bool,
}

impl<'a, S: SessionStore> SummaryReader<'a, S> {
    pub fn new(
        sessions: &'a S,
        namespace: &'a str,
        service_id: &'a str,
        within: StartedWithin,
    ) -> Self {
        SummaryReader {
            sessions,
            namespace,
            service_id,
            within,
            before: None,
            done: false,
        }
    }

    /// The reader of the sessions older than `session_id` only.
    pub fn older_than(mut self, session_id: Option<String>) -> Self {
        self.before = session_id;
        self
    }

    /// The next read's sessions, older than every one before; `None` once all are read.
    pub async fn next(&mut self) -> Result<Option<Vec<SessionSummary>>, StoreError> {
        if self.done {
            return Ok(None);
        }
        let chunk = self
            .sessions
            .session_summaries(
                self.namespace,
                self.service_id,
                self.within,
                self.before.as_deref(),
            )
            .await?;
        match chunk.summaries.last() {
            Some(last) if chunk.more => self.before = Some(last.session_id.clone()),
            _ => self.done = true,
        }
        Ok(Some(chunk.summaries))
    }
}

/// The `max` most overdue of `due` (deadline, session), the earliest deadline first: what a
/// store answers [`SessionStore::overdue_sessions`] with.
pub fn most_overdue(mut due: Vec<(i64, SessionKey)>, max: usize) -> Vec<SessionKey> {
    due.sort();
    due.into_iter().take(max).map(|(_, key)| key).collect()
}

/// Where a session is kept: what the deadlines index gives back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    pub namespace: String,
    pub service_id: String,
    pub session_id: String,
}

/// The result of a start's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartOutcome {
    /// The session is recorded and counted among its agent's active sessions.
    Started,
    /// Nothing was written.
    Refused(StartRefusal),
    /// Writers of the agent at the same moment kept the write from running; nothing was
    /// written, and trying again may succeed.
    Raced,
}

/// The result of a write of an existing session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionWrite {
    Written,
    /// The session is no longer the version it was read at; nothing was written.
    Conflict,
}

pub trait SessionStore: Send + Sync {
    /// Records `session` (new, starting) and counts it among its agent's active sessions, in one
    /// write conditioned on [`super::start::admits`] of the agent as stored at that moment; refused as
    /// that rule says otherwise.
    fn start_session(
        &self,
        session: &SessionRecord,
    ) -> impl Future<Output = Result<StartOutcome, StoreError>> + Send;

    /// The session of the agent's service, read after every write that preceded the call.
    fn get_session(
        &self,
        namespace: &str,
        service_id: &str,
        session_id: &str,
    ) -> impl Future<Output = Result<Option<SessionRecord>, StoreError>> + Send;

    /// Sessions of the agent's service that started `within`, newest first, older than the
    /// session `before` when given: as many as one read of the store returns (DynamoDB: 1 MB).
    fn session_summaries(
        &self,
        namespace: &str,
        service_id: &str,
        within: StartedWithin,
        before: Option<&str>,
    ) -> impl Future<Output = Result<SummaryChunk, StoreError>> + Send;

    /// The sessions of the agent's service with these ids (at most 100), in no order; an id
    /// with no session is left out.
    fn get_sessions(
        &self,
        namespace: &str,
        service_id: &str,
        session_ids: &[String],
    ) -> impl Future<Output = Result<Vec<SessionRecord>, StoreError>> + Send;

    /// Active sessions, of any account, whose deadline is at or before `now` (Unix seconds): at
    /// most `max`, the most overdue first where the store can tell.
    fn overdue_sessions(
        &self,
        now: i64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<SessionKey>, StoreError>> + Send;

    /// Writes `next` over `read` (the session as read), conditioned on its version. When `next`
    /// ends it ([`SessionRecord::is_ended_by`]), the same write takes it out of its agent's
    /// count, once: while the agent is still the session's service (an agent deleted took its
    /// count with it).
    fn write_session(
        &self,
        read: &SessionRecord,
        next: &SessionRecord,
    ) -> impl Future<Output = Result<SessionWrite, StoreError>> + Send;
}
