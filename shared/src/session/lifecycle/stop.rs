//! A session found by its id under its agent, and stopped: the data plane asked once.

use super::stored::stored_session;
use crate::ApiError;
use crate::agent::AgentStore;
use crate::auth::Principal;
use crate::races::Races;
use crate::session::{SessionRecord, SessionStore, SessionWrite};

/// Session `session_id` of `caller`'s agent `agent_name`: 404 when the agent is absent, or has
/// no such session (an id that is no UUID names none).
pub async fn find<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    caller: &Principal,
    agent_name: &str,
    session_id: &str,
) -> Result<SessionRecord, ApiError> {
    let agent = agents
        .get_agent(&caller.namespace, agent_name)
        .await?
        .ok_or_else(ApiError::no_agent)?;
    stored_session(sessions, &caller.namespace, &agent.service_id, session_id)
        .await?
        .ok_or_else(ApiError::no_session)
}

/// Asks the data plane to stop the session (`Session Stop Requested`, published from the write);
/// its report then ends it. A session ended, or already asked to stop, is answered again
/// without a write.
#[tracing::instrument(skip_all, fields(namespace = %caller.namespace, agent = agent_name))]
pub async fn stop<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    caller: &Principal,
    agent_name: &str,
    session_id: &str,
    now: &str,
) -> Result<SessionRecord, ApiError> {
    let mut races = Races::new();
    loop {
        let session = find(agents, sessions, caller, agent_name, session_id).await?;
        if !session.is_active() || session.stop_requested_at.is_some() {
            return Ok(session);
        }
        let stopping = session.stop_requested(now);
        match sessions.write_session(&session, &stopping).await? {
            SessionWrite::Written => {
                tracing::info!(session = session_id, "session stop requested");
                return Ok(stopping);
            }
            SessionWrite::Conflict => races.lost().await?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionState;
    use crate::testing::started_session;

    #[tokio::test]
    async fn a_stop_is_asked_once_and_answered_again_without_a_write() {
        let (store, session) = started_session().await;
        let owner = crate::auth::Principal {
            account_id: "acme".into(),
            namespace: session.namespace.clone(),
        };
        let (agent, id) = (session.agent_name.as_str(), session.session_id.as_str());
        let at = "2026-11-25T10:01:00.000Z";
        let stopping = stop(&*store, &*store, &owner, agent, id, at).await.unwrap();
        assert_eq!(stopping.stop_requested_at.as_deref(), Some(at));
        assert_eq!(stopping.version, session.version + 1);
        assert!(stopping.is_active(), "the data plane's report ends it");

        let later = "2026-11-25T10:02:00.000Z";
        let again = stop(&*store, &*store, &owner, agent, id, later)
            .await
            .unwrap();
        assert_eq!(again, stopping, "asked once");

        let ended = stopping.ended(SessionState::Ended, "completed", later);
        store.write_session(&stopping, &ended).await.unwrap();
        let after = stop(&*store, &*store, &owner, agent, id, later)
            .await
            .unwrap();
        assert_eq!(after, ended, "an ended session answers as it is");
    }

    #[tokio::test]
    async fn a_session_is_found_only_under_its_agent_and_by_a_uuid() {
        let (store, session) = started_session().await;
        let owner = crate::auth::Principal {
            account_id: "acme".into(),
            namespace: session.namespace.clone(),
        };
        let agent = session.agent_name.as_str();
        let found = find(&*store, &*store, &owner, agent, &session.session_id).await;
        assert_eq!(found.unwrap(), session);
        for (agent, id) in [
            (agent, "not-a-uuid"),
            (agent, "0193a000-0000-7000-8000-000000000000"),
            ("another-agent", session.session_id.as_str()),
        ] {
            let error = find(&*store, &*store, &owner, agent, id).await.unwrap_err();
            assert_eq!(error.status().as_u16(), 404, "{agent} {id}");
        }
    }
}
