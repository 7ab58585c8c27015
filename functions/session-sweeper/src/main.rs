//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::config::AGENTS_TABLE;
use shared::error::DisplayErrorContext;
use shared::session::lifecycle::SessionRetention;
use shared::store::dynamodb::DynamoStore;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, config) = DynamoStore::from_env(&[AGENTS_TABLE])?;
    let retention = SessionRetention::days(config.log_retention_days);
    let clock = session_sweeper::SweepClock::from_env();
    let store = &store;
    run(service_fn(move |event: LambdaEvent<_>| async move {
        session_sweeper::handle(store, retention, clock, event.payload)
            .await
            .map_err(|error| {
                tracing::error!(error = %DisplayErrorContext(&error), "sweep failed; the next one takes what is left");
                Error::from(error)
            })
    }))
    .await
}
