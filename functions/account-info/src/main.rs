//! Wiring only: logs, configuration, the DynamoDB client (the key check's accounts table) and
//! the region once at cold start, then the loop.

use lambda_http::{Error, service_fn};
use shared::config::ACCOUNTS_TABLE;
use shared::lambda::run;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, and init starts no worker threads (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, _) = DynamoStore::from_env(&[ACCOUNTS_TABLE])?;
    let region = shared::config::region();
    let (store, region) = (&store, region.as_str());
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(account_info::handle(store, region, request).await)
    }))
    .await
}
