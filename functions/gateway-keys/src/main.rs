//! Wiring only: logs, the stack's gateway names and the API Gateway client once at cold start,
//! then the loop.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;
use shared::config::{
    ACCOUNTS_USAGE_PLAN_ID, API_STAGE, APIGATEWAY_ENDPOINT, REST_API_ID, optional, required,
};
use shared::error::DisplayErrorContext;
use shared::gateway::Gateway;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let client = shared::aws::apigateway_client(optional(APIGATEWAY_ENDPOINT).as_deref())?;
    let gateway = Gateway::new(
        client,
        required(REST_API_ID)?,
        required(API_STAGE)?,
        required(ACCOUNTS_USAGE_PLAN_ID)?,
    );
    let gateway = &gateway;
    run(service_fn(move |event: LambdaEvent<Value>| async move {
        gateway_keys::handle(gateway, event.payload)
            .await
            .map_err(|error| {
                tracing::error!(error = %DisplayErrorContext(&error), "no gateway key made; Lambda retries, then the failure queue keeps the request");
                Error::from(error)
            })
    }))
    .await
}
