//! CloudWatch Logs subscription → log items (contract section 5).
//!
//! One subscription event carries the lines of one log stream of one log group:
//! `/agent-hosting/{namespace}/{agentName}`, stream `{deploymentId}/{sessionId}` or
//! `{deploymentId}`. Lines of an unknown agent, or of a group or stream outside that scheme, are
//! dropped and counted in this function's log; they never fail the batch. A store failure does
//! fail it, so Lambda retries the delivery, which is safe: a line's key is its timestamp and
//! event id, and writing it again overwrites it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aws_lambda_events::cloudwatch_logs::LogData;
use serde::Serialize;
use shared::logs::{self, LogLine};
use shared::store::{LogStore, StoreError};

/// An event id longer than this is not CloudWatch's and the line is dropped.
const MAX_EVENT_ID_LENGTH: usize = 128;
/// How long an agent seen to exist is remembered (agents are not deleted through this API).
const KNOWN_AGENT_TTL: Duration = Duration::from_secs(300);

/// What one delivery did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestReport {
    pub stored: usize,
    pub dropped_unknown_agent: usize,
    pub dropped_unrecognised_source: usize,
    pub dropped_bad_line: usize,
}

/// Agents known to exist, kept across invocations of a warm function to spare a read per batch.
#[derive(Debug, Default)]
pub struct KnownAgents(Mutex<HashMap<(String, String), Instant>>);

impl KnownAgents {
    async fn exists<S: LogStore>(
        &self,
        store: &S,
        namespace: &str,
        agent: &str,
    ) -> Result<bool, StoreError> {
        let key = (namespace.to_owned(), agent.to_owned());
        let fresh = |seen: &Instant| seen.elapsed() < KNOWN_AGENT_TTL;
        if self
            .0
            .lock()
            .map(|known| known.get(&key).is_some_and(fresh))
            .unwrap_or(false)
        {
            return Ok(true);
        }
        let exists = store.agent_exists(namespace, agent).await?;
        if exists && let Ok(mut known) = self.0.lock() {
            known.insert(key, Instant::now());
        }
        Ok(exists)
    }
}

#[tracing::instrument(skip_all, fields(log_group = %data.log_group, log_stream = %data.log_stream, events = data.log_events.len()))]
pub async fn ingest<S: LogStore>(
    store: &S,
    known: &KnownAgents,
    retention_days: u32,
    data: LogData,
) -> Result<IngestReport, StoreError> {
    let mut report = IngestReport::default();
    // CloudWatch sends a CONTROL_MESSAGE when a subscription is created, to check the target.
    if data.message_type != "DATA_MESSAGE" {
        tracing::info!(message_type = %data.message_type, "not a data message; nothing to store");
        return Ok(report);
    }
    let source =
        logs::parse_log_group(&data.log_group).zip(logs::parse_log_stream(&data.log_stream));
    let Some(((namespace, agent), (deployment_id, session_id))) = source else {
        report.dropped_unrecognised_source = data.log_events.len();
        tracing::warn!(
            dropped = report.dropped_unrecognised_source,
            "log group or stream outside the agent-hosting scheme"
        );
        return Ok(report);
    };
    if !known.exists(store, namespace, agent).await? {
        report.dropped_unknown_agent = data.log_events.len();
        tracing::warn!(%namespace, %agent, dropped = report.dropped_unknown_agent, "lines of an unknown agent dropped");
        return Ok(report);
    }

    let mut lines = Vec::with_capacity(data.log_events.len());
    for event in &data.log_events {
        if event.id.is_empty() || event.id.len() > MAX_EVENT_ID_LENGTH {
            report.dropped_bad_line += 1;
            continue;
        }
        let (timestamp_nanos, text) = logs::parse_message(&event.message, event.timestamp);
        lines.push(LogLine {
            namespace: namespace.to_owned(),
            agent: agent.to_owned(),
            deployment_id: deployment_id.to_owned(),
            session_id: session_id.map(str::to_owned),
            event_id: event.id.clone(),
            timestamp_nanos,
            text: text.to_owned(),
        });
    }
    store.put_lines(&lines, retention_days).await?;
    report.stored = lines.len();
    if report.dropped_bad_line > 0 {
        tracing::warn!(
            dropped = report.dropped_bad_line,
            "lines without a usable event id dropped"
        );
    }
    tracing::info!(stored = report.stored, "lines stored");
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lambda_events::cloudwatch_logs::LogsEvent;
    use shared::agent::{Agent, AgentSpec};
    use shared::auth::Principal;
    use shared::store::AgentStore;
    use shared::store::memory::MemoryStore;

    fn fixture() -> LogsEvent {
        let path = format!(
            "{}/../../events/ingest-logs.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    async fn store_with_demo_agent() -> MemoryStore {
        let store = MemoryStore::default();
        let spec = AgentSpec::from_json(
            serde_json::json!({"serviceName": "demo-agent", "image": "ghcr.io/acme/agent:1.0"}),
        )
        .unwrap();
        let owner = Principal {
            account_id: "dev".into(),
            namespace: "dev-local".into(),
        };
        store
            .create_agent(
                &owner,
                &Agent::new(&spec, &owner.namespace, "2026-01-01T00:00:00.000Z"),
                None,
            )
            .await
            .unwrap();
        store
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
        let report = ingest(&store, &KnownAgents::default(), 30, data)
            .await
            .unwrap();
        assert_eq!(report.stored, events);
        assert_eq!(report.dropped_unknown_agent, 0);
    }

    #[tokio::test]
    async fn lines_of_an_unknown_agent_are_dropped_not_failed() {
        let store = MemoryStore::default();
        let data = fixture().aws_logs.data;
        let events = data.log_events.len();
        let report = ingest(&store, &KnownAgents::default(), 30, data)
            .await
            .unwrap();
        assert_eq!(report.dropped_unknown_agent, events);
        assert_eq!(report.stored, 0);
    }

    #[tokio::test]
    async fn foreign_groups_and_control_messages_store_nothing() {
        let store = store_with_demo_agent().await;
        let mut foreign = fixture().aws_logs.data;
        foreign.log_group = "/aws/lambda/something".into();
        let report = ingest(&store, &KnownAgents::default(), 30, foreign)
            .await
            .unwrap();
        assert_eq!(report.stored, 0);
        assert!(report.dropped_unrecognised_source > 0);

        let mut control = fixture().aws_logs.data;
        control.message_type = "CONTROL_MESSAGE".into();
        assert_eq!(
            ingest(&store, &KnownAgents::default(), 30, control)
                .await
                .unwrap(),
            IngestReport::default()
        );
    }

    #[tokio::test]
    async fn a_bad_line_is_dropped_alone() {
        let store = store_with_demo_agent().await;
        let mut data = fixture().aws_logs.data;
        data.log_events[0].id = String::new();
        let events = data.log_events.len();
        let report = ingest(&store, &KnownAgents::default(), 30, data)
            .await
            .unwrap();
        assert_eq!(report.dropped_bad_line, 1);
        assert_eq!(report.stored, events - 1);
    }
}
