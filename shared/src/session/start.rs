//! Whether an agent takes one more session: the rule a start's one conditioned write states
//! (the DynamoDB adapter as its condition expression, the memory store under its lock), and what
//! a refused write is told apart by.

use crate::agent::AgentRecord;

use super::record::SessionRecord;

/// Why a start was refused; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartRefusal {
    /// The account has no such agent (or it was deleted and made again: another service).
    NoAgent,
    /// No deployment of the agent is ready, or not the one the session was to run on.
    NotReady,
    /// The agent has `maxReplicas` active sessions (one session a replica, as the anchor).
    AtCapacity,
}

/// The deployment a new session of `agent` runs on: the active one when it is ready, otherwise,
/// during a rollout, the one the agent still serves from when that one is.
pub fn serving_deployment(agent: &AgentRecord) -> Option<&str> {
    if agent.active.status.is_ready() {
        return Some(&agent.active.deployment.id);
    }
    agent
        .serving
        .as_ref()
        .filter(|serving| serving.status.is_ready())
        .map(|serving| serving.deployment_id.as_str())
}

/// Whether `agent`, as stored now, takes `session`: still the session's service, its deployment
/// ready, fewer than `maxReplicas` active sessions.
pub fn admits(agent: Option<&AgentRecord>, session: &SessionRecord) -> Result<(), StartRefusal> {
    let agent = agent
        .filter(|agent| agent.service_id == session.service_id)
        .ok_or(StartRefusal::NoAgent)?;
    if !agent
        .status_of(&session.deployment_id)
        .is_some_and(|status| status.is_ready())
    {
        return Err(StartRefusal::NotReady);
    }
    if agent.active_sessions >= agent.config().auto_scaling.max_replicas {
        return Err(StartRefusal::AtCapacity);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::DeploymentState;
    use crate::agent::record::tests::record;
    use crate::session::SessionRequest;

    fn session_of(agent: &AgentRecord, deployment_id: &str) -> SessionRecord {
        let at = time::macros::datetime!(2026-11-25 10:00 UTC);
        SessionRecord::new(agent, deployment_id, SessionRequest::default(), at)
    }

    fn ready(mut agent: AgentRecord) -> AgentRecord {
        agent.active.status.state = DeploymentState::Ready;
        agent
    }

    #[test]
    fn a_session_runs_on_the_ready_deployment_and_only_while_there_is_room() {
        let agent = record();
        let id = agent.active.deployment.id.clone();
        assert_eq!(serving_deployment(&agent), None, "nothing ready yet");
        assert_eq!(
            admits(Some(&agent), &session_of(&agent, &id)),
            Err(StartRefusal::NotReady)
        );

        let mut agent = ready(agent);
        assert_eq!(serving_deployment(&agent), Some(id.as_str()));
        let session = session_of(&agent, &id);
        let max = agent.config().auto_scaling.max_replicas;
        agent.active_sessions = max - 1;
        assert_eq!(admits(Some(&agent), &session), Ok(()));
        agent.active_sessions = max;
        assert_eq!(
            admits(Some(&agent), &session),
            Err(StartRefusal::AtCapacity)
        );
    }

    #[test]
    fn another_service_of_the_name_or_none_is_no_agent() {
        let agent = ready(record());
        let session = session_of(&agent, &agent.active.deployment.id);
        assert_eq!(admits(None, &session), Err(StartRefusal::NoAgent));
        let remade = ready(record());
        assert_eq!(admits(Some(&remade), &session), Err(StartRefusal::NoAgent));
    }

    #[test]
    fn during_a_rollout_sessions_run_on_the_deployment_still_serving() {
        let first = ready(record());
        let rolled = first.deploy(
            first.config().clone(),
            crate::manifest::DeploymentMode::Simulated,
            "2026-11-25T10:00:00.000Z",
        );
        let serving = first.active.deployment.id.as_str();
        assert_eq!(serving_deployment(&rolled), Some(serving));
        assert_eq!(admits(Some(&rolled), &session_of(&rolled, serving)), Ok(()));
        assert_eq!(
            admits(
                Some(&rolled),
                &session_of(&rolled, &rolled.active.deployment.id)
            ),
            Err(StartRefusal::NotReady)
        );
    }
}
