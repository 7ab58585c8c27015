//! `Session Status` events of the data plane, as an EventBridge rule delivers them (contract
//! section 11): each applied to the session it names when it is the newest report of an active
//! session of that agent, and otherwise dropped and counted in this function's log. The report
//! that ends a session frees its place (the agent's `activeSessions`), once.
//!
//! EventBridge delivers at least once and in any order, so applying is idempotent and ordered by
//! the report's own `observedAt`. An event that is not a report at all is an error: Lambda retries
//! it, then sends it to the failure destination, where it can be read. A report with a member past
//! its bound (shared::validation::OutOfBounds) is refused before anything is read: dropped and
//! counted, never an error, since retrying it cannot help.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use shared::StoreError;
use shared::agent::AgentStore;
use shared::session::SessionStore;
use shared::session::lifecycle::{self, SessionRetention};
use shared::session::report::{SessionReport, SessionReportOutcome};
use shared::stream_events::SESSION_STATUS;
use shared::validation::echoed;

/// Why an event could not be applied at all.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("not a Session Status event (detail-type {0:?})")]
    NotAReport(String),
    #[error("the Session Status detail is not a report")]
    Malformed(#[source] serde_json::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[tracing::instrument(skip_all, fields(source = %event.source, namespace, agent, session))]
pub async fn handle<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    retention: SessionRetention,
    event: EventBridgeEvent<serde_json::Value>,
) -> Result<SessionReportOutcome, StatusError> {
    if event.detail_type != SESSION_STATUS {
        return Err(StatusError::NotAReport(event.detail_type));
    }
    let report: SessionReport =
        serde_json::from_value(event.detail).map_err(StatusError::Malformed)?;
    let span = tracing::Span::current();
    // Echoed, as a name past its bound (a megabyte of namespace) is logged.
    span.record("namespace", echoed(&report.namespace));
    span.record("agent", echoed(&report.agent));
    span.record("session", echoed(&report.session_id));
    let outcome = lifecycle::apply_report(agents, sessions, &report, retention).await?;
    match outcome {
        SessionReportOutcome::Applied => tracing::info!(state = ?report.state, "report applied"),
        dropped => tracing::warn!(
            outcome = ?dropped,
            out_of_bounds = ?report.out_of_bounds(),
            state = ?report.state,
            "report dropped"
        ),
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs the ordering,
    //! duplicate and tenancy cases against DynamoDB Local.

    use super::*;
    use shared::testing::{SESSION_FIXTURE_AGENT, SESSION_FIXTURE_ID, session_fixtures_owner};

    const KEPT: SessionRetention = SessionRetention(time::Duration::days(30));

    fn event(name: &str) -> EventBridgeEvent<serde_json::Value> {
        shared::testing::fixture_event(name)
    }

    #[tokio::test]
    async fn an_ended_report_ends_the_seeded_session_once_and_frees_its_place() {
        let store = shared::testing::seeded_memory_store().await;
        let owner = session_fixtures_owner();
        let agent = store
            .agent(&owner.namespace, SESSION_FIXTURE_AGENT)
            .unwrap();
        assert_eq!(agent.active_sessions, 1);
        let outcome = handle(&store, &store, KEPT, event("session-status.json")).await;
        assert_eq!(outcome.unwrap(), SessionReportOutcome::Applied);
        let session = store
            .get_session(&owner.namespace, &agent.service_id, SESSION_FIXTURE_ID)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(session.completion_status.as_deref(), Some("completed"));
        // Observed 2026-11-22T19:10:00Z, kept 30 days.
        assert_eq!(session.expires_at, Some(1_795_374_600 + 30 * 86_400));
        let agent = store
            .agent(&owner.namespace, SESSION_FIXTURE_AGENT)
            .unwrap();
        assert_eq!(agent.active_sessions, 0);
        // EventBridge delivers at least once: the same report again changes nothing.
        let again = handle(&store, &store, KEPT, event("session-status.json")).await;
        assert_eq!(again.unwrap(), SessionReportOutcome::Settled);
        let agent = store
            .agent(&owner.namespace, SESSION_FIXTURE_AGENT)
            .unwrap();
        assert_eq!(agent.active_sessions, 0, "counted out once");
    }

    #[tokio::test]
    async fn another_account_s_report_and_a_deployment_report_change_nothing() {
        let store = shared::testing::seeded_memory_store().await;
        let other = event("session-status-other-account.json");
        let outcome = handle(&store, &store, KEPT, other).await;
        assert_eq!(outcome.unwrap(), SessionReportOutcome::UnknownAgent);
        let wrong = handle(&store, &store, KEPT, event("deployment-status.json")).await;
        assert!(matches!(wrong, Err(StatusError::NotAReport(_))));
    }
}
