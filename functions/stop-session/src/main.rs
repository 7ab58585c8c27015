//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use lambda_http::{Error, service_fn};
use shared::config::{ACCOUNTS_TABLE, AGENTS_TABLE};
use shared::lambda::run;
use shared::store::dynamodb::DynamoStore;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, _) = DynamoStore::from_env(&[AGENTS_TABLE, ACCOUNTS_TABLE])?;
    let store = &store;
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(stop_session::handle(store, store, store, request).await)
    }))
    .await
}
