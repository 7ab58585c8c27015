//! Sessions in memory, kept with the agents (one lock: a start and an end each change a session
//! and its agent's count at once, as one DynamoDB transaction does).

use super::{MemoryStore, lock};
use crate::error::StoreError;
use crate::session::{
    SessionKey, SessionRecord, SessionStore, SessionSummary, SessionWrite, StartOutcome,
    StartedWithin, SummaryChunk, admits, most_overdue, session_id_floor,
};

/// Sessions one read answers (DynamoDB answers up to 1 MB): small, so that the loops over
/// several reads run in the memory store's tests too.
const CHUNK: usize = 25;

/// (namespace, service id, session id).
pub(super) type MemoryKey = (String, String, String);

fn key_of(namespace: &str, service_id: &str, session_id: &str) -> MemoryKey {
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

    async fn session_summaries(
        &self,
        namespace: &str,
        service_id: &str,
        within: StartedWithin,
        before: Option<&str>,
    ) -> Result<SummaryChunk, StoreError> {
        let from = within.from.map(session_id_floor).unwrap_or_default();
        let until = within.until.map(session_id_floor);
        let state = lock(&self.agents);
        let oldest_first: Vec<&SessionRecord> = state
            .sessions
            .range(key_of(namespace, service_id, &from)..)
            .take_while(|((ns, service, _), _)| ns == namespace && service == service_id)
            .map(|(_, session)| session)
            .filter(|session| {
                until
                    .as_ref()
                    .is_none_or(|until| session.session_id < *until)
            })
            .filter(|session| before.is_none_or(|before| session.session_id.as_str() < before))
            .collect();
        let summaries: Vec<SessionSummary> = oldest_first
            .iter()
            .rev()
            .take(CHUNK)
            .map(|session| SessionSummary::from(*session))
            .collect();
        let more = oldest_first.len() > CHUNK;
        Ok(SummaryChunk { summaries, more })
    }

    async fn get_sessions(
        &self,
        namespace: &str,
        service_id: &str,
        session_ids: &[String],
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let state = lock(&self.agents);
        Ok(session_ids
            .iter()
            .filter_map(|id| state.sessions.get(&key_of(namespace, service_id, id)))
            .cloned()
            .collect())
    }

    async fn overdue_sessions(&self, now: i64, max: usize) -> Result<Vec<SessionKey>, StoreError> {
        let state = lock(&self.agents);
        let due: Vec<(i64, SessionKey)> = state
            .sessions
            .iter()
            .filter(|(_, session)| session.is_active())
            .filter_map(|((namespace, service_id, session_id), session)| {
                let deadline = session.deadline.filter(|deadline| *deadline <= now)?;
                let key = SessionKey {
                    namespace: namespace.clone(),
                    service_id: service_id.clone(),
                    session_id: session_id.clone(),
                };
                Some((deadline, key))
            })
            .collect();
        Ok(most_overdue(due, max))
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
