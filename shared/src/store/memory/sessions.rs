//! Sessions in memory, kept with the agents (one lock: a start and an end each change a session
//! and its agent's count at once, as one DynamoDB transaction does).

use super::{MemoryStore, lock};
use crate::error::StoreError;
use crate::session::{SessionRecord, SessionStore, SessionWrite, StartOutcome, admits};

/// (namespace, service id, session id).
pub(super) type SessionKey = (String, String, String);

fn key_of(namespace: &str, service_id: &str, session_id: &str) -> SessionKey {
    (
        namespace.to_owned(),
        service_id.to_owned(),
        session_id.to_owned(),
    )
}

impl SessionStore for MemoryStore {
    async fn start_session(&self, session: &SessionRecord) -> Result<StartOutcome, StoreError> {
        let mut state = lock(&self.agents);
        let agent_key = (session.namespace.clone(), session.agent_name.clone());
        if let Err(refusal) = admits(state.agents.get(&agent_key), session) {
            return Ok(StartOutcome::Refused(refusal));
        }
        let key = key_of(&session.namespace, &session.service_id, &session.session_id);
        if state.sessions.contains_key(&key) {
            return Err(StoreError::Unexpected("a new session's id is taken".into()));
        }
        if let Some(agent) = state.agents.get_mut(&agent_key) {
            agent.active_sessions += 1;
        }
        state.sessions.insert(key, session.clone());
        Ok(StartOutcome::Started)
    }

    async fn get_session(
        &self,
        namespace: &str,
        service_id: &str,
        session_id: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        Ok(lock(&self.agents)
            .sessions
            .get(&key_of(namespace, service_id, session_id))
            .cloned())
    }

    async fn write_session(
        &self,
        read: &SessionRecord,
        next: &SessionRecord,
    ) -> Result<SessionWrite, StoreError> {
        let mut state = lock(&self.agents);
        let key = key_of(&next.namespace, &next.service_id, &next.session_id);
        if state
            .sessions
            .get(&key)
            .is_none_or(|stored| stored.version != read.version)
        {
            return Ok(SessionWrite::Conflict);
        }
        if read.is_ended_by(next)
            && let Some(agent) = state
                .agents
                .get_mut(&(next.namespace.clone(), next.agent_name.clone()))
                .filter(|agent| agent.service_id == next.service_id)
        {
            agent.active_sessions = agent.active_sessions.saturating_sub(1);
        }
        state.sessions.insert(key, next.clone());
        Ok(SessionWrite::Written)
    }
}
