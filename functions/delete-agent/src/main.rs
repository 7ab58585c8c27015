//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use lambda_http::{Error, service_fn};
use shared::config::{ACCOUNTS_TABLE, AGENTS_TABLE};
use shared::lambda::run;
use shared::session::lifecycle::SessionRetention;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, and init starts no worker threads (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, config) = DynamoStore::from_env(&[AGENTS_TABLE, ACCOUNTS_TABLE])?;
    let retention = SessionRetention::days(config.log_retention_days);
    let store = &store;
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(
            delete_agent::handle(store, store, store, retention, request).await,
        )
    }))
    .await
}
