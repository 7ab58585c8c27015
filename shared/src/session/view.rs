//! What the API shows of a session (contract section 11).

use serde::Serialize;

use super::record::{Connection, SessionRecord, SessionState, completion};
use super::store::SessionSummary;

/// The start's answer: the session, its deployment, and what the data plane reported for
/// connecting (nothing yet while it is `starting`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StartAnswer<'a> {
    pub session_id: &'a str,
    pub status: SessionState,
    pub deployment_id: &'a str,
    #[serde(flatten)]
    pub connection: Option<&'a Connection>,
    /// Why it ended, when the data plane ended it before the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_status: Option<&'a str>,
}

impl<'a> From<&'a SessionRecord> for StartAnswer<'a> {
    fn from(session: &'a SessionRecord) -> Self {
        StartAnswer {
            session_id: &session.session_id,
            status: session.state,
            deployment_id: &session.deployment_id,
            connection: session.connection.as_ref(),
            completion_status: session.completion_status.as_deref(),
        }
    }
}

/// A session as read and listed. Every member is written, `null` when unknown: the anchor's CLI
/// indexes them directly.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionView<'a> {
    pub session_id: &'a str,
    pub service_id: &'a str,
    pub deployment_id: &'a str,
    pub status: SessionState,
    pub created_at: &'a str,
    pub updated_at: &'a str,
    pub ended_at: Option<&'a str>,
    pub completion_status: Option<&'a str>,
    pub bot_start_seconds: Option<f64>,
    pub cold_start: Option<bool>,
    /// The anchor's CLI's name for where the session is ([`EndState`]).
    pub end_state: EndState,
    /// On a read of one active session: what the data plane reported for connecting.
    #[serde(flatten)]
    pub connection: Option<&'a Connection>,
}

impl<'a> SessionView<'a> {
    /// A session as listed: without what it connects with.
    pub fn listed(session: &'a SessionRecord) -> Self {
        SessionView {
            session_id: &session.session_id,
            service_id: &session.service_id,
            deployment_id: &session.deployment_id,
            status: session.state,
            created_at: &session.created_at,
            updated_at: &session.updated_at,
            ended_at: session.ended_at.as_deref(),
            completion_status: session.completion_status.as_deref(),
            bot_start_seconds: session.bot_start_seconds,
            cold_start: session.cold_start,
            end_state: EndState::of(session),
            connection: None,
        }
    }

    /// A session as read by its id: with what it connects with while active.
    pub fn read(session: &'a SessionRecord) -> Self {
        SessionView {
            connection: session.connection.as_ref(),
            ..SessionView::listed(session)
        }
    }
}

/// The anchor's CLI's vocabulary for a session (`pipecat cloud agent sessions --end-state`): its
/// status column shows it, and its filter sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndState {
    Active,
    Completed,
    EndedBeforeAgentStart,
    AgentStartTimeout,
    Terminated,
    AgentError,
    Unknown,
}

impl EndState {
    pub const ALL: [EndState; 7] = [
        EndState::Active,
        EndState::Completed,
        EndState::EndedBeforeAgentStart,
        EndState::AgentStartTimeout,
        EndState::Terminated,
        EndState::AgentError,
        EndState::Unknown,
    ];

    pub fn of(session: &SessionRecord) -> Self {
        EndState::of_parts(
            session.state,
            session.completion_status.as_deref(),
            session.started_at.is_some(),
        )
    }

    /// The end state of a session as a list reads it.
    pub fn of_summary(session: &SessionSummary) -> Self {
        EndState::of_parts(
            session.state,
            session.completion_status.as_deref(),
            session.started_at.is_some(),
        )
    }

    fn of_parts(state: SessionState, completion_status: Option<&str>, started: bool) -> Self {
        match (state, completion_status) {
            (SessionState::Starting | SessionState::Started, _) => EndState::Active,
            (SessionState::Failed, Some(completion::START_TIMEOUT)) => EndState::AgentStartTimeout,
            (SessionState::Failed, _) => EndState::AgentError,
            (SessionState::Ended, Some(completion::EXPIRED)) => EndState::Unknown,
            (SessionState::Ended, _) if !started => EndState::EndedBeforeAgentStart,
            (SessionState::Ended, Some(completion::TERMINATED | completion::AGENT_DELETED)) => {
                EndState::Terminated
            }
            // The data plane ends a session `agentError` when its replica answered `/bot` with
            // an error, broke the connection or died: the agent's error, not a completion.
            (SessionState::Ended, Some(completion::AGENT_ERROR)) => EndState::AgentError,
            (SessionState::Ended, _) => EndState::Completed,
        }
    }

    /// The CLI's word for it (`--end-state`).
    pub fn as_str(self) -> &'static str {
        match self {
            EndState::Active => "active",
            EndState::Completed => "completed",
            EndState::EndedBeforeAgentStart => "ended_before_agent_start",
            EndState::AgentStartTimeout => "agent_start_timeout",
            EndState::Terminated => "terminated",
            EndState::AgentError => "agent_error",
            EndState::Unknown => "unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionRequest;
    use serde_json::{Value, json};

    fn session() -> SessionRecord {
        let agent = crate::agent::record::tests::record();
        SessionRecord::new(
            &agent,
            "dep-1",
            SessionRequest::default(),
            time::macros::datetime!(2026-11-25 10:00 UTC),
        )
    }

    #[test]
    fn a_listed_session_writes_every_member_out_null_when_unknown() {
        let session = session();
        let view = serde_json::to_value(SessionView::listed(&session)).unwrap();
        let Value::Object(members) = &view else {
            panic!("{view}")
        };
        for name in [
            "sessionId",
            "serviceId",
            "deploymentId",
            "status",
            "createdAt",
            "updatedAt",
            "endedAt",
            "completionStatus",
            "botStartSeconds",
            "coldStart",
            "endState",
        ] {
            assert!(members.contains_key(name), "{name} missing from {view}");
        }
        assert_eq!(view["status"], "starting");
        assert_eq!(view["endState"], "active");
        assert_eq!(view["endedAt"], Value::Null);
    }

    #[test]
    fn connection_details_show_on_a_read_and_a_start_never_in_a_list() {
        let mut session = session();
        session.state = SessionState::Started;
        session.connection = Some(Connection {
            ws_url: Some("ws://simulated.invalid/s".into()),
            ..Connection::default()
        });
        let read = serde_json::to_value(SessionView::read(&session)).unwrap();
        assert_eq!(read["wsUrl"], "ws://simulated.invalid/s");
        assert!(read.get("dailyToken").is_none());
        let listed = serde_json::to_value(SessionView::listed(&session)).unwrap();
        assert!(listed.get("wsUrl").is_none());
        let started = serde_json::to_value(StartAnswer::from(&session)).unwrap();
        assert_eq!(
            started,
            json!({"sessionId": session.session_id, "status": "started",
                   "deploymentId": "dep-1", "wsUrl": "ws://simulated.invalid/s"})
        );
    }

    #[test]
    fn end_states_speak_the_cli_s_vocabulary() {
        for state in EndState::ALL {
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
        let never_started = session();
        assert_eq!(
            EndState::of(&never_started.ended(SessionState::Ended, completion::TERMINATED, "t")),
            EndState::EndedBeforeAgentStart
        );
        let session = {
            let now = time::OffsetDateTime::now_utc();
            never_started.started(Connection::default(), now, now)
        };
        let ended = |state, status| EndState::of(&session.ended(state, status, "t"));
        assert_eq!(EndState::of(&session), EndState::Active);
        assert_eq!(ended(SessionState::Ended, "completed"), EndState::Completed);
        assert_eq!(
            ended(SessionState::Ended, completion::TERMINATED),
            EndState::Terminated
        );
        assert_eq!(
            ended(SessionState::Ended, completion::EXPIRED),
            EndState::Unknown
        );
        assert_eq!(
            ended(SessionState::Failed, completion::START_TIMEOUT),
            EndState::AgentStartTimeout
        );
        assert_eq!(ended(SessionState::Failed, "crashed"), EndState::AgentError);
        assert_eq!(
            ended(SessionState::Ended, completion::AGENT_ERROR),
            EndState::AgentError,
            "a session the data plane ended agentError (its /bot failed, its replica died)"
        );
    }
}
