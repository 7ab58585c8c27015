//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::config::{self, ACCOUNTS_TABLE, DYNAMODB_ENDPOINT};
use shared::store::dynamodb::DynamoStore;

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    // The authorizer reads only the accounts table.
    let accounts_table = config::required(ACCOUNTS_TABLE)?;
    let client = shared::aws::dynamodb_client(config::optional(DYNAMODB_ENDPOINT).as_deref()).await;
    let store = DynamoStore::new(client, String::new(), accounts_table);
    let store = &store;
    run(service_fn(move |event: LambdaEvent<_>| async move {
        authorizer::authorize(store, event.payload).await.map_err(|error| {
            tracing::error!(error = %error, cause = ?std::error::Error::source(&error), "key check failed");
            Error::from(error)
        })
    }))
    .await
}
