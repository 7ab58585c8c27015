// The handler's future holds the key and token checks (auth::authenticate): deeper than rustc's
// default layout query depth of 128.
#![recursion_limit = "256"]

//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::config::ACCOUNTS_TABLE;
use shared::error::DisplayErrorContext;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, and init starts no worker threads (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    // The authorizer reads only the accounts table.
    let (store, _) = DynamoStore::from_env(&[ACCOUNTS_TABLE])?;
    let store = &store;
    run(service_fn(move |event: LambdaEvent<_>| async move {
        authorizer::authorize(store, event.payload)
            .await
            .map_err(|error| {
                tracing::error!(error = %DisplayErrorContext(&error), "key check failed");
                Error::from(error)
            })
    }))
    .await
}
