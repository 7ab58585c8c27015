//! The agents bus as EventBridge (PutEvents), for the stream publisher: one request a batch of
//! at most ten events, each answered on its own.

use aws_sdk_eventbridge::Client;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;

use crate::error::StoreError;
use crate::store::dynamodb::classify;
use crate::stream_events::{EventBus, Published, SOURCE};

/// One bus, on one client built at cold start.
#[derive(Debug, Clone)]
pub struct EventBridgeBus {
    client: Client,
    bus: String,
}

impl EventBridgeBus {
    /// The bus named (or by ARN) `bus`.
    pub fn new(client: Client, bus: impl Into<String>) -> Self {
        EventBridgeBus {
            client,
            bus: bus.into(),
        }
    }
}

impl EventBus for EventBridgeBus {
    async fn put(&self, events: &[Published]) -> Result<Vec<bool>, StoreError> {
        let entries = events
            .iter()
            .map(|event| {
                PutEventsRequestEntry::builder()
                    .event_bus_name(&self.bus)
                    .source(SOURCE)
                    .detail_type(event.detail_type.as_str())
                    .detail(event.detail.to_string())
                    .build()
            })
            .collect();
        let output = self
            .client
            .put_events()
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(classify)?;
        let answered = output.entries();
        if answered.len() != events.len() {
            return Err(StoreError::Unexpected(
                format!(
                    "PutEvents answered {} of {} entries",
                    answered.len(),
                    events.len()
                )
                .into(),
            ));
        }
        Ok(answered
            .iter()
            .map(|entry| entry.error_code().is_some())
            .collect())
    }
}
