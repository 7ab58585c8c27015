//! Wiring only: logs, configuration, the DynamoDB client and the cursor key once at cold start,
//! then the loop.

use lambda_http::{Error, service_fn};
use shared::config::{ACCOUNTS_TABLE, AGENTS_TABLE};
use shared::lambda::run;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, and init starts no worker threads (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, _) = DynamoStore::from_env(&[AGENTS_TABLE, ACCOUNTS_TABLE])?;
    let cursor_key = shared::store::cursor_secret::cursor_key_from_env().await?;
    let (store, cursor_key) = (&store, &cursor_key);
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(
            list_deployments::handle(store, store, cursor_key, request).await,
        )
    }))
    .await
}
