//! The one DynamoDB client of a function, built at cold start with explicit time and retry
//! bounds, so a slow store turns into a 503 well inside the Lambda timeout.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region};

/// Attempts per call (the first and two retries, with the SDK's jittered backoff).
pub const MAX_ATTEMPTS: u32 = 3;
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(1_000);
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1_500);
pub const OPERATION_TIMEOUT: Duration = Duration::from_millis(4_000);

/// A client for AWS, or for DynamoDB Local when `endpoint` is set (then a region and dummy
/// credentials are supplied when the environment has none, since DynamoDB Local ignores them).
pub async fn dynamodb_client(endpoint: Option<&str>) -> aws_sdk_dynamodb::Client {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .operation_attempt_timeout(ATTEMPT_TIMEOUT)
                .operation_timeout(OPERATION_TIMEOUT)
                .build(),
        );
    if let Some(endpoint) = endpoint {
        loader = loader.endpoint_url(endpoint);
        if std::env::var_os("AWS_REGION").is_none()
            && std::env::var_os("AWS_DEFAULT_REGION").is_none()
        {
            loader = loader.region(Region::new("us-east-1"));
        }
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            loader = loader.credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                "local",
                "local",
                None,
                None,
                "dynamodb-local",
            ));
        }
    }
    aws_sdk_dynamodb::Client::new(&loader.load().await)
}
