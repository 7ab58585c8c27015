//! The gateway-keys function, asked through Lambda's asynchronous Invoke: Lambda queues the
//! event and answers at once (202), so the trigger stays inside Cognito's 5 seconds; the
//! function's retries and failure queue are the template's (`GatewayKeysFunction`).

use std::time::Duration;

use aws_sdk_lambda::config::timeout::TimeoutConfig;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use shared::config::{GATEWAY_KEYS_FUNCTION, LAMBDA_ENDPOINT, MissingVariable, optional};
use shared::error::DisplayErrorContext;

use crate::{GatewayKeyRequests, KeyRequestError};

/// One attempt of the Invoke; the whole Invoke, retries included, is bounded by the caller's
/// timeout (`crate::invoke_timeout`: at most `INVOKE_TIMEOUT`, less when the invocation's time is
/// running out).
const INVOKE_ATTEMPT_TIMEOUT: Duration = Duration::from_millis(700);

/// The function named `function_name` (a literal name: the template cannot reference the
/// function without a cycle), invoked with `{"account_id": ...}`.
pub struct LambdaGatewayKeys {
    client: aws_sdk_lambda::Client,
    function_name: String,
}

impl LambdaGatewayKeys {
    /// Each Invoke's bounds are its own (`request`'s timeout), set on the call.
    pub fn new(client: aws_sdk_lambda::Client, function_name: String) -> Self {
        LambdaGatewayKeys {
            client,
            function_name,
        }
    }

    /// From `GATEWAY_KEYS_FUNCTION` (and `LAMBDA_ENDPOINT` for an emulator); None when it is
    /// unset (locally).
    pub fn from_env() -> Result<Option<Self>, MissingVariable> {
        let Some(function_name) = optional(GATEWAY_KEYS_FUNCTION) else {
            return Ok(None);
        };
        let client = shared::aws::lambda_client(optional(LAMBDA_ENDPOINT).as_deref())?;
        Ok(Some(LambdaGatewayKeys::new(client, function_name)))
    }
}

/// The event the gateway-keys function reads.
pub fn request_event(account_id: &str) -> serde_json::Value {
    serde_json::json!({ "account_id": account_id })
}

impl GatewayKeyRequests for LambdaGatewayKeys {
    async fn request(&self, account_id: &str, timeout: Duration) -> Result<(), KeyRequestError> {
        let bound = aws_sdk_lambda::Config::builder().timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(shared::aws::CONNECT_TIMEOUT)
                .operation_attempt_timeout(INVOKE_ATTEMPT_TIMEOUT.min(timeout))
                .operation_timeout(timeout)
                .build(),
        );
        self.client
            .invoke()
            .function_name(&self.function_name)
            .invocation_type(InvocationType::Event)
            .payload(Blob::new(request_event(account_id).to_string()))
            .customize()
            .config_override(bound)
            .send()
            .await
            .map_err(|error| KeyRequestError {
                account_id: account_id.to_owned(),
                message: DisplayErrorContext(&error).to_string(),
            })?;
        Ok(())
    }
}
