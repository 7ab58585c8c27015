//! Wiring only: logs, configuration, the DynamoDB client (the accounts table: the credential
//! check, the keys and their account) once at cold start, then the loop.

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
    let store = &store;
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(keys::handle(store, request).await)
    }))
    .await
}
