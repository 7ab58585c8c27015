//! What a session start does over the ports: reads the agent to find the deployment a session
//! runs on, then records the session in one conditioned write ([`super::SessionStore`]), reading
//! again after a write that lost a race.

use crate::ApiError;
use crate::agent::AgentStore;
use crate::auth::Principal;
use crate::races::Races;

use super::{SessionRecord, SessionRequest, SessionStore, StartOutcome, StartRefusal};

impl From<StartRefusal> for ApiError {
    fn from(refusal: StartRefusal) -> Self {
        match refusal {
            StartRefusal::NoAgent => ApiError::no_agent(),
            StartRefusal::NotReady => ApiError::AgentNotReady,
            StartRefusal::AtCapacity => ApiError::AgentAtCapacity,
        }
    }
}

/// A new session of `caller`'s agent `agent_name`, recorded and counted; 404, 503
/// `AGENT_NOT_READY` or 429 `AGENT_AT_CAPACITY` otherwise, with nothing written.
#[tracing::instrument(skip_all, fields(namespace = %caller.namespace, agent = agent_name))]
pub async fn start<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    caller: &Principal,
    agent_name: &str,
    request: &SessionRequest,
    now: &str,
) -> Result<SessionRecord, ApiError> {
    let mut races = Races::new();
    loop {
        let agent = agents
            .get_agent(&caller.namespace, agent_name)
            .await?
            .ok_or_else(ApiError::no_agent)?;
        let deployment = super::serving_deployment(&agent).ok_or(ApiError::AgentNotReady)?;
        let session = SessionRecord::new(&agent, deployment, request.clone(), now);
        match sessions.start_session(&session).await? {
            StartOutcome::Started => {
                tracing::info!(session = %session.session_id, "session started");
                return Ok(session);
            }
            StartOutcome::Refused(refusal) => return Err(refusal.into()),
            StartOutcome::Raced => races.lost().await?,
        }
    }
}
