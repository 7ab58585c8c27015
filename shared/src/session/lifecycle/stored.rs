//! A session read by its id, for the routes and the reports alike.

use crate::error::StoreError;
use crate::session::{SessionRecord, SessionStore};

/// The session `session_id` of the agent's service, if it has one; an id that is no UUID names
/// none (and is not looked up).
pub(super) async fn stored_session<S: SessionStore>(
    sessions: &S,
    namespace: &str,
    service_id: &str,
    session_id: &str,
) -> Result<Option<SessionRecord>, StoreError> {
    if !crate::validation::is_uuid(session_id) {
        return Ok(None);
    }
    sessions
        .get_session(namespace, service_id, session_id)
        .await
}
