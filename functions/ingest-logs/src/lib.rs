//! CloudWatch Logs subscription → an agent's stored lines (contract section 5): the event's
//! batch handed to `shared::logs::intake`, which the operator's replay of this function's
//! failure queue runs too.

use aws_lambda_events::cloudwatch_logs::LogsEvent;
use shared::StoreError;
use shared::agent::AgentStore;
use shared::logs::LogStore;
use shared::logs::intake::{self, IngestReport, KnownDeployments};

/// Stores the lines of one subscription event. A store failure fails the invocation, so Lambda
/// retries it (then sends it to the failure queue): writing a batch again stores nothing twice.
/// (The ingest's own future, not one more around it: the runtime's future type stays within the
/// compiler's depth.)
pub fn handle<'a, A: AgentStore, L: LogStore>(
    agents: &'a A,
    logs: &'a L,
    known: &'a KnownDeployments,
    retention_days: u32,
    event: LogsEvent,
) -> impl Future<Output = Result<IngestReport, StoreError>> + 'a {
    intake::ingest(agents, logs, known, retention_days, event.aws_logs.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lambda_events::cloudwatch_logs::LogData;
    use shared::store::memory::MemoryStore;
    use shared::testing::seed_fixture_agents;

    fn fixture() -> LogsEvent {
        let path = format!(
            "{}/../../events/ingest-logs.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    async fn store_with_demo_agent() -> MemoryStore {
        let store = MemoryStore::default();
        seed_fixture_agents(&store).await.unwrap();
        store
    }

    async fn run(store: &MemoryStore, data: LogData) -> IngestReport {
        intake::ingest(store, store, &KnownDeployments::default(), 30, data)
            .await
            .unwrap()
    }

    #[test]
    fn the_fixture_is_the_readable_payload_gzipped() {
        let path = format!(
            "{}/../../events/ingest-logs.decoded.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let readable: LogData =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(fixture().aws_logs.data, readable);
    }

    #[tokio::test]
    async fn the_fixture_decodes_and_its_lines_are_stored() {
        let store = store_with_demo_agent().await;
        let data = fixture().aws_logs.data;
        let events = data.log_events.len();
        let report = run(&store, data).await;
        assert_eq!(report.stored, events);
        assert_eq!(report.dropped_unknown_agent, 0);
    }

    #[tokio::test]
    async fn lines_of_an_unknown_agent_are_dropped_not_failed() {
        let store = MemoryStore::default();
        let data = fixture().aws_logs.data;
        let events = data.log_events.len();
        let report = run(&store, data).await;
        assert_eq!(report.dropped_unknown_agent, events);
        assert_eq!(report.stored, 0);
    }

    #[tokio::test]
    async fn foreign_groups_and_control_messages_store_nothing() {
        let store = store_with_demo_agent().await;
        let mut foreign = fixture().aws_logs.data;
        foreign.log_group = "/aws/lambda/something".into();
        let report = run(&store, foreign).await;
        assert_eq!(report.stored, 0);
        assert!(report.dropped_unrecognised_source > 0);

        let mut control = fixture().aws_logs.data;
        control.message_type = "CONTROL_MESSAGE".into();
        assert_eq!(run(&store, control).await, IngestReport::default());
    }

    #[tokio::test]
    async fn a_bad_line_is_dropped_alone() {
        let store = store_with_demo_agent().await;
        let mut data = fixture().aws_logs.data;
        data.log_events[0].id = String::new();
        let events = data.log_events.len();
        let report = run(&store, data).await;
        assert_eq!(report.dropped_bad_line, 1);
        assert_eq!(report.stored, events - 1);
    }

    #[tokio::test]
    async fn lines_of_an_agent_deleted_since_the_last_batch_are_dropped_and_counted() {
        let store = store_with_demo_agent().await;
        let known = KnownDeployments::default();
        let data = fixture().aws_logs.data;
        let events = data.log_events.len();
        let first = intake::ingest(&store, &store, &known, 30, data.clone())
            .await
            .unwrap();
        assert_eq!(first.stored, events);
        let demo = store.agent("dev-local", "demo-agent").unwrap();
        assert_eq!(
            store.delete_agent(&demo).await.unwrap(),
            shared::agent::WriteOutcome::Written
        );
        // The same warm function, the next batch of that stream.
        let after = intake::ingest(&store, &store, &known, 30, data)
            .await
            .unwrap();
        assert_eq!(after.dropped_unknown_agent, events);
        assert_eq!(after.stored, 0);
    }

    #[tokio::test]
    async fn lines_of_a_deployment_the_agent_never_ran_are_dropped() {
        let store = store_with_demo_agent().await;
        let mut data = fixture().aws_logs.data;
        // Another agent's deployment (a deleted agent's, say) under demo-agent's log group.
        let other = store.agent("dev-local", "video-bot").unwrap();
        data.log_stream = format!("{}/session-0001", other.active.deployment.id);
        let events = data.log_events.len();
        let report = run(&store, data).await;
        assert_eq!(report.dropped_unknown_deployment, events);
        assert_eq!(report.stored, 0);
    }
}
