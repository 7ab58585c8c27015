//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use lambda_http::{Error, service_fn};
use shared::config::{self, ACCOUNTS_TABLE, AGENTS_TABLE, DEPLOYMENT_MODE};
use shared::lambda::run;
use shared::manifest::DeploymentMode;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, and init starts no worker threads (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, _) = DynamoStore::from_env(&[AGENTS_TABLE, ACCOUNTS_TABLE])?;
    // The engine every manifest names: a misspelt one stops the function here.
    let mode = DeploymentMode::of_setting(config::optional(DEPLOYMENT_MODE).as_deref())?;
    let store = &store;
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(create_agent::handle(store, store, mode, request).await)
    }))
    .await
}
