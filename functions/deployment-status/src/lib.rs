//! `Deployment Status` events of the data plane, as an EventBridge rule delivers them (contract
//! section 7): each applied to the agent it names when it is the newest report of a deployment
//! that agent runs, and otherwise dropped and counted in this function's log.
//!
//! EventBridge delivers at least once and in any order, so applying is idempotent and ordered by
//! the report's own `observedAt` (shared::agent::status). An event that is not a report at all is
//! an error: Lambda retries it, then sends it to the failure destination, where it can be read. A
//! report with a member past its bound (shared::validation::OutOfBounds) is refused before anything
//! is read: dropped and counted, never an error, since retrying it cannot help.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use shared::StoreError;
use shared::agent::{AgentStore, ReportOutcome, StatusReport, lifecycle};
use shared::stream_events::DEPLOYMENT_STATUS;
use shared::validation::echoed;

/// Why an event could not be applied at all.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("not a Deployment Status event (detail-type {0:?})")]
    NotAReport(String),
    #[error("the Deployment Status detail is not a report")]
    Malformed(#[source] serde_json::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[tracing::instrument(skip_all, fields(source = %event.source, namespace, agent, deployment_id))]
pub async fn handle<A: AgentStore>(
    agents: &A,
    event: EventBridgeEvent<serde_json::Value>,
) -> Result<ReportOutcome, StatusError> {
    if event.detail_type != DEPLOYMENT_STATUS {
        return Err(StatusError::NotAReport(event.detail_type));
    }
    let report: StatusReport =
        serde_json::from_value(event.detail).map_err(StatusError::Malformed)?;
    let span = tracing::Span::current();
    // Echoed, as a name past its bound (a megabyte of namespace) is logged.
    span.record("namespace", echoed(&report.namespace));
    span.record("agent", echoed(&report.agent));
    span.record("deployment_id", echoed(&report.deployment_id));
    let outcome = lifecycle::apply_report(agents, &report).await?;
    match outcome {
        ReportOutcome::Applied => tracing::info!(state = ?report.state, "report applied"),
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
    use shared::store::memory::MemoryStore;
    use shared::testing::seed_fixture_agents;

    fn event(name: &str) -> EventBridgeEvent<serde_json::Value> {
        shared::testing::fixture_event(name)
    }

    #[tokio::test]
    async fn a_ready_report_makes_the_demo_agent_ready_once() {
        let store = MemoryStore::default();
        seed_fixture_agents(&store).await.unwrap();
        let outcome = handle(&store, event("deployment-status.json"))
            .await
            .unwrap();
        assert_eq!(outcome, ReportOutcome::Applied);
        let view = store.agent("dev-local", "demo-agent").unwrap().view();
        assert!(view.ready && view.active_deployment_ready);
        // EventBridge delivers at least once: the same report again changes nothing.
        let again = handle(&store, event("deployment-status.json"))
            .await
            .unwrap();
        assert_eq!(again, ReportOutcome::Stale);
    }

    #[tokio::test]
    async fn a_failed_report_shows_in_errors() {
        let store = MemoryStore::default();
        seed_fixture_agents(&store).await.unwrap();
        let outcome = handle(&store, event("deployment-status-failed.json"))
            .await
            .unwrap();
        assert_eq!(outcome, ReportOutcome::Applied);
        let view = store.agent("dev-local", "demo-agent").unwrap().view();
        assert!(!view.ready);
        assert_eq!(view.errors.unwrap()[0].code, "ImagePullBackOff");
    }

    #[tokio::test]
    async fn a_report_for_a_deployment_the_agent_never_had_is_dropped() {
        let store = MemoryStore::default();
        seed_fixture_agents(&store).await.unwrap();
        let before = store.agent("dev-local", "demo-agent").unwrap();
        let outcome = handle(&store, event("deployment-status-unknown.json"))
            .await
            .unwrap();
        assert_eq!(outcome, ReportOutcome::UnknownDeployment);
        assert_eq!(store.agent("dev-local", "demo-agent").unwrap(), before);
    }

    #[tokio::test]
    async fn a_report_dated_go_zero_time_is_refused_and_changes_nothing() {
        let store = MemoryStore::default();
        seed_fixture_agents(&store).await.unwrap();
        let before = store.agent("dev-local", "demo-agent").unwrap();
        let outcome = handle(&store, event("deployment-status-zero-time.json"))
            .await
            .unwrap();
        assert_eq!(outcome, ReportOutcome::Refused);
        assert_eq!(store.agent("dev-local", "demo-agent").unwrap(), before);
        // The next report of the deployment, dated as reports are, is applied.
        let applied = handle(&store, event("deployment-status.json"))
            .await
            .unwrap();
        assert_eq!(applied, ReportOutcome::Applied);
    }

    #[tokio::test]
    async fn an_event_that_is_not_a_report_is_an_error_for_the_failure_destination() {
        let store = MemoryStore::default();
        let mut other = event("deployment-status.json");
        other.detail_type = "Deployment Requested".into();
        assert!(matches!(
            handle(&store, other).await,
            Err(StatusError::NotAReport(_))
        ));
        let mut malformed = event("deployment-status.json");
        malformed.detail = serde_json::json!({"state": "ready"});
        assert!(matches!(
            handle(&store, malformed).await,
            Err(StatusError::Malformed(_))
        ));
    }
}
