//! The agents table's stream, published (contract sections 7 and 11): Lambda's event source
//! mapping hands this function the records its filters select (shared::stream_events::FILTERS),
//! oldest first, a batch of at most ten; each becomes its event on the agents bus, so an event
//! follows its committed write and is never lost with the request that wrote it.
//!
//! A record whose event the bus refused or could not take is answered in `batchItemFailures` by
//! its sequence number: Lambda retries the batch from the lowest of them (events already
//! published are published again: consumers deduplicate), and past the mapping's retries sends
//! the batch's place in the stream to the failure queue. A record no event can be made of is
//! logged (an alarm watches for it) and passed: retrying could not help, and would hold every
//! later event of its shard. The function itself never fails a batch.

use serde::Serialize;
use serde_json::Value;
use shared::stream_events::{self, EventBus};

/// A record Lambda is to retry, by its sequence number.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ItemFailure {
    pub item_identifier: String,
}

/// The answer Lambda reads with `ReportBatchItemFailures`.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BatchResponse {
    pub batch_item_failures: Vec<ItemFailure>,
}

/// The records of a DynamoDB stream event as their JSON (DynamoDB's typed JSON kept as it is),
/// each with its sequence number; a record without one is answered as failed by `""`, which
/// Lambda reads as the whole batch failing.
fn records(event: &Value) -> Vec<(String, Value)> {
    event["Records"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|record| {
            let sequence = record["dynamodb"]["SequenceNumber"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (sequence, record.clone())
        })
        .collect()
}

#[tracing::instrument(skip_all, fields(records))]
pub async fn handle<B: EventBus>(bus: &B, event: Value) -> BatchResponse {
    let records = records(&event);
    tracing::Span::current().record("records", records.len());
    let outcome = stream_events::publish(bus, &records).await;
    tracing::info!(
        published = outcome.published,
        failed = outcome.failed.len(),
        unpublishable = outcome.unpublishable,
        "stream records published"
    );
    BatchResponse {
        batch_item_failures: outcome
            .failed
            .into_iter()
            .map(|item_identifier| ItemFailure { item_identifier })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    //! The handler on the fixture's batch with a bus in memory; tests/ puts the events on
    //! moto's EventBridge and reads them back from a rule's queue.

    use super::*;
    use shared::StoreError;
    use shared::stream_events::Published;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Bus {
        put: Mutex<Vec<Published>>,
        refuse: Option<&'static str>,
    }

    impl EventBus for Bus {
        async fn put(&self, events: &[Published]) -> Result<Vec<bool>, StoreError> {
            let refused: Vec<bool> = events
                .iter()
                .map(|event| Some(event.detail_type.as_str()) == self.refuse)
                .collect();
            let mut put = self.put.lock().unwrap();
            for (event, refused) in events.iter().zip(&refused) {
                if !refused {
                    put.push(event.clone());
                }
            }
            Ok(refused)
        }
    }

    fn fixture() -> Value {
        shared::testing::fixture_event("stream-publisher.json")
    }

    #[tokio::test]
    async fn the_fixture_s_writes_are_published_in_order_and_the_rest_left_alone() {
        let bus = Bus::default();
        let answer = handle(&bus, fixture()).await;
        assert_eq!(answer.batch_item_failures, []);
        let put: Vec<&str> = bus
            .put
            .lock()
            .unwrap()
            .iter()
            .map(|event| event.detail_type.as_str())
            .collect();
        assert_eq!(
            put,
            [
                "Deployment Requested",
                "Session Requested",
                "Session Stop Requested",
                "Agent Deleted"
            ]
        );
    }

    #[tokio::test]
    async fn a_refused_event_is_retried_by_its_record_s_sequence_number() {
        let bus = Bus {
            refuse: Some("Session Requested"),
            ..Bus::default()
        };
        let answer = handle(&bus, fixture()).await;
        let session = fixture()["Records"][1]["dynamodb"]["SequenceNumber"].clone();
        assert_eq!(
            answer.batch_item_failures,
            [ItemFailure {
                item_identifier: session.as_str().unwrap().to_owned()
            }]
        );
    }
}
