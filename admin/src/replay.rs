//! Replays the ingest function's failure destination into the store (contract section 8: no
//! line is lost).
//!
//! CloudWatch Logs invokes the ingest function asynchronously. A batch it still fails on after
//! Lambda's retries (the store unavailable or throttling past the SDK's retries) lands in the
//! function's failure queue (template.yaml: `IngestLogsFailureQueue`) as Lambda's destination
//! record, whose `requestPayload` is the subscription event itself. Each message is put through
//! the ingest function's own code (shared::logs::intake) again and deleted once stored. A line's key is its timestamp
//! and event id, so a batch replayed twice (or replayed after a late success) is stored once.
//! A message that is not such a record, or whose batch fails again, is left in the queue and
//! reported.

use std::collections::HashSet;

use aws_lambda_events::cloudwatch_logs::LogsEvent;
use aws_sdk_sqs::Client;
use serde::Deserialize;
use shared::agent::AgentStore;
use shared::error::BoxError;
use shared::logs::LogStore;
use shared::logs::intake::{self, IngestReport, KnownDeployments};

/// What a replay did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReplayReport {
    /// Messages whose batch was stored, then deleted from the queue.
    pub replayed: usize,
    /// What those batches did (lines stored, dropped and why), summed.
    pub ingested: IngestReport,
    /// Messages left in the queue: (message id, why).
    pub not_replayed: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// An SQS call on the failure queue failed (the SDK's error as its source).
    #[error("the failure queue: {operation} failed")]
    Queue {
        operation: &'static str,
        #[source]
        source: BoxError,
    },
}

fn queue_failed<E: std::error::Error + Send + Sync + 'static>(
    operation: &'static str,
) -> impl FnOnce(E) -> ReplayError {
    move |error| ReplayError::Queue {
        operation,
        source: Box::new(error),
    }
}

/// Lambda's destination record; only the request payload is replayed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DestinationRecord {
    request_payload: LogsEvent,
}

/// Replays at most `max_messages` messages of `queue_url`. Messages are received in batches of
/// ten, hidden from other readers for `visibility_seconds` while this replay works on them; the
/// replay stops when the queue is empty or a message comes round a second time (one that was
/// left in the queue).
pub async fn replay_ingest_failures<A: AgentStore, L: LogStore>(
    sqs: &Client,
    queue_url: &str,
    agents: &A,
    logs: &L,
    retention_days: u32,
    max_messages: usize,
    visibility_seconds: i32,
) -> Result<ReplayReport, ReplayError> {
    let known = KnownDeployments::default();
    let mut report = ReplayReport::default();
    let mut seen = HashSet::new();
    while seen.len() < max_messages {
        let want = (max_messages - seen.len()).min(10);
        let received = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(i32::try_from(want).unwrap_or(10))
            .visibility_timeout(visibility_seconds)
            .wait_time_seconds(1)
            .send()
            .await
            .map_err(queue_failed("ReceiveMessage"))?;
        let messages = received.messages.unwrap_or_default();
        if messages.is_empty() {
            break;
        }
        let mut came_round = false;
        for message in messages {
            let id = message.message_id.clone().unwrap_or_default();
            if !seen.insert(id.clone()) {
                came_round = true;
                continue;
            }
            let body = message.body.as_deref().unwrap_or_default();
            let data = match serde_json::from_str::<DestinationRecord>(body) {
                Ok(record) => record.request_payload.aws_logs.data,
                Err(error) => {
                    let reason = format!("not a failure record of the ingest function: {error}");
                    report.not_replayed.push((id, reason));
                    continue;
                }
            };
            match intake::ingest(agents, logs, &known, retention_days, data).await {
                Ok(ingested) => {
                    report.ingested += &ingested;
                    if let Some(handle) = &message.receipt_handle {
                        sqs.delete_message()
                            .queue_url(queue_url)
                            .receipt_handle(handle)
                            .send()
                            .await
                            .map_err(queue_failed("DeleteMessage"))?;
                    }
                    report.replayed += 1;
                }
                Err(error) => report
                    .not_replayed
                    .push((id, format!("the store refused the batch again: {error}"))),
            }
        }
        if came_round {
            break;
        }
    }
    Ok(report)
}
