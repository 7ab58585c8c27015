//! Wiring only: logs, configuration and the EventBridge client once at cold start, then the loop.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::config;
use shared::store::eventbridge::EventBridgeBus;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let bus_name = config::required(config::EVENT_BUS_NAME)?;
    let endpoint = config::optional(config::EVENTBRIDGE_ENDPOINT);
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
