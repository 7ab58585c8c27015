//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::config::AGENTS_TABLE;
use shared::error::DisplayErrorContext;
use shared::session::lifecycle::SessionRetention;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, and init starts no worker threads (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, config) = DynamoStore::from_env(&[AGENTS_TABLE])?;
    let retention = SessionRetention::days(config.log_retention_days);
    let store = &store;
    run(service_fn(move |event: LambdaEvent<_>| async move {
        session_status::handle(store, store, retention, event.payload)
            .await
            .map_err(|error| {
                tracing::error!(error = %DisplayErrorContext(&error), "report not applied; Lambda will retry it");
                Error::from(error)
            })
    }))
    .await
}
