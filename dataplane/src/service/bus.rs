//! Reports onto the agents bus (EventBridge PutEvents), as the status functions' rules take
//! them: source `agent-hosting.data-plane`, detail-type `Deployment Status` or `Session Status`,
//! the report's JSON as the detail (what devplane's delivery puts on its simulated bus).
//! `shared::store::eventbridge` is not reused: its source is the control plane's own.

use aws_sdk_eventbridge::Client;
use aws_sdk_eventbridge::error::DisplayErrorContext;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use serde::Serialize;

/// The source of the data plane's reports (the template's rules match it).
pub const SOURCE: &str = "agent-hosting.data-plane";

/// Why a report did not reach the bus. Never holds the detail (a session's room token).
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("the report could not be written as JSON: {0}")]
    Detail(#[from] serde_json::Error),
    #[error("PutEvents failed: {0}")]
    Call(String),
    #[error("PutEvents refused the event: {0}")]
    Refused(String),
}

/// The agents bus, named or by ARN.
#[derive(Debug, Clone)]
pub struct ReportBus {
    client: Client,
    bus: String,
}

impl ReportBus {
    pub fn new(client: Client, bus: impl Into<String>) -> Self {
        ReportBus {
            client,
            bus: bus.into(),
        }
    }

    /// Puts one event of `detail_type` whose detail is `detail`; `Ok` once the bus took it.
    pub async fn put(&self, detail_type: &str, detail: &impl Serialize) -> Result<(), BusError> {
        let entry = PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(SOURCE)
            .detail_type(detail_type)
            .detail(serde_json::to_string(detail)?)
            .build();
        let output = self
            .client
            .put_events()
            .entries(entry)
            .send()
            .await
            .map_err(|error| BusError::Call(DisplayErrorContext(error).to_string()))?;
        // PutEvents answers 200 with a failed entry (throttled, internal): said per entry.
        match output.entries().first() {
            Some(entry) if entry.event_id().is_some() && entry.error_code().is_none() => Ok(()),
            Some(entry) => Err(BusError::Refused(
                entry.error_code().unwrap_or("no event id").to_owned(),
            )),
            None => Err(BusError::Refused("no entry answered".to_owned())),
        }
    }
}
