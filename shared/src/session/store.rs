//! The port sessions are kept behind. A start is one conditioned write, never a read then a
//! write: the cap holds under any concurrency.

use std::future::Future;

use super::record::SessionRecord;
use super::start::StartRefusal;
use crate::error::StoreError;

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
