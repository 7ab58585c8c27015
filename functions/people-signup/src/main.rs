//! Wiring only: logs, configuration and the DynamoDB client (the accounts table) once at cold
//! start, then the loop.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;
use shared::config::ACCOUNTS_TABLE;
use shared::error::DisplayErrorContext;
use shared::store::dynamodb::DynamoStore;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, _) = DynamoStore::from_env(&[ACCOUNTS_TABLE])?;
    let store = &store;
    run(service_fn(move |event: LambdaEvent<Value>| async move {
        people_signup::handle(store, event.payload)
            .await
            .map_err(|error| {
                tracing::error!(error = %DisplayErrorContext(&error), "no account for the confirmation; Cognito answers it with an error");
                Error::from(error)
            })
    }))
    .await
}
