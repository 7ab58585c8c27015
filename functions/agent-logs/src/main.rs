//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use agent_logs::Settings;
use lambda_http::{Error, service_fn};
use shared::config::{ACCOUNTS_TABLE, AGENTS_TABLE, LOGS_TABLE};
use shared::lambda::run;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, a cursor page's two queries still overlap, and init starts no worker threads
// (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, config) = DynamoStore::from_env(&[AGENTS_TABLE, ACCOUNTS_TABLE, LOGS_TABLE])?;
    let settings = Settings {
        retention_days: config.log_retention_days,
        cursor_key: shared::store::cursor_secret::cursor_key_from_env().await?,
    };
    let store = &store;
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(
            agent_logs::handle(store, store, store, settings, request).await,
        )
    }))
    .await
}
