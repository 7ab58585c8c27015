//! Wiring only: logs, configuration, the DynamoDB client (the accounts table) and the
//! gateway-keys function's client (when `GATEWAY_KEYS_FUNCTION` is set) once at cold start, then
//! the loop.

use std::time::{Duration, UNIX_EPOCH};

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;
use shared::config::ACCOUNTS_TABLE;
use shared::error::DisplayErrorContext;
use shared::store::dynamodb::DynamoStore;

use people_signup::gateway_keys::LambdaGatewayKeys;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, _) = DynamoStore::from_env(&[ACCOUNTS_TABLE])?;
    let keys = LambdaGatewayKeys::from_env()?;
    let (store, keys) = (&store, keys.as_ref());
    run(service_fn(move |event: LambdaEvent<Value>| async move {
        // The context's deadline: milliseconds since the epoch.
        let deadline = UNIX_EPOCH + Duration::from_millis(event.context.deadline);
        people_signup::handle(store, keys, event.payload, deadline)
            .await
            .map_err(|error| {
                tracing::error!(error = %DisplayErrorContext(&error), "no account for the confirmation; Cognito answers it with an error");
                Error::from(error)
            })
    }))
    .await
}
