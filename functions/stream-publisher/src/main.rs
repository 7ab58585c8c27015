//! Wiring only: logs, configuration and the EventBridge client once at cold start, then the loop.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::store::eventbridge::EventBridgeBus;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let bus_name = std::env::var("EVENT_BUS_NAME").map_err(|_| "EVENT_BUS_NAME is not set")?;
    let endpoint = std::env::var("EVENTBRIDGE_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty());
    let bus = EventBridgeBus::new(
        shared::aws::eventbridge_client(endpoint.as_deref())?,
        bus_name,
    );
    let bus = &bus;
    run(service_fn(move |event: LambdaEvent<_>| async move {
        Ok::<_, std::convert::Infallible>(stream_publisher::handle(bus, event.payload).await)
    }))
    .await
}
