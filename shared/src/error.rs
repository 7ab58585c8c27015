//! The one error type of the API and its mapping to a status and a body.
//!
//! Every handler returns `Result<_, ApiError>`; `http::error_response` (the HTTP edge) is the
//! only place that turns one into a response. Messages are written for the caller: never an SDK
//! message, a table name or a Debug dump. Internal detail travels in `source` and reaches only our own logs.

use http::StatusCode;

/// Renders an error with its whole chain of causes, for our own logs.
pub use aws_smithy_types::error::display::DisplayErrorContext;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How a store call failed (the error of every store port). The store throttling, timing out or
/// failing on its side is the caller's 503 (contract section 1: it may pass); the rest, a request
/// the store could not take or an answer we could not read, is a bug and a 500.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the store throttled the request after retries")]
    Throttled(#[source] BoxError),
    #[error("the store timed out or could not be reached after retries")]
    Timeout(#[source] BoxError),
    /// A server error of the store's (HTTP 5xx: `InternalServerError`, DynamoDB Local's
    /// `InternalFailure`, `ServiceUnavailable`) that the SDK's retries did not get past.
    #[error("the store failed on its side after retries")]
    Unavailable(#[source] BoxError),
    #[error("unexpected store failure")]
    Unexpected(#[source] BoxError),
}

/// Seconds a caller is asked to wait after the store throttled, timed out or failed.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// Seconds a session start is asked to wait when the agent is not ready or full: a deployment
/// takes seconds to become ready, a session frees its place when it ends.
pub const SESSION_RETRY_AFTER_SECONDS: u32 = 5;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Body not JSON, wrong type, unknown member, rule broken, bad query parameter.
    #[error("{message}")]
    BadRequest {
        message: String,
        /// JSON path of the offending member, or the query parameter's name.
        field: Option<String>,
    },
    #[error("Unauthorized")]
    Unauthorized,
    /// A public key on a route other than a session start (contract section 11).
    #[error(
        "A public key may only start sessions (POST /v1/public/{{agentName}}/start); use a private key"
    )]
    Forbidden,
    /// An API key on the keys routes (contract section 13): a leaked key cannot mint more.
    #[error("API keys cannot manage keys: sign in to the console and manage them there")]
    KeysNeedAPerson,
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// `If-Match` names another version than the agent's.
    #[error(
        "The agent changed since the version If-Match names; read it again (its ETag) and retry"
    )]
    PreconditionFailed,
    /// An `Idempotency-Key` already used, within its 24 hours, with another request body.
    #[error(
        "This Idempotency-Key was used with a different request body in the last 24 hours; send a new key for a new request"
    )]
    IdempotencyKeyReused,
    /// A method the path does not serve; `allow` lists those it does (the `Allow` header).
    #[error("Method not allowed; this resource accepts {allow}")]
    MethodNotAllowed { allow: &'static str },
    #[error("Request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error(
        "Unsupported Content-Type; send the body as JSON with 'Content-Type: application/json'"
    )]
    UnsupportedMediaType,
    /// A session start before any deployment of the agent is ready (contract section 11).
    #[error(
        "No deployment of this agent is ready to take a session yet; retry after {SESSION_RETRY_AFTER_SECONDS} seconds"
    )]
    AgentNotReady,
    /// A session start when the agent has `maxReplicas` active sessions (contract section 11).
    #[error(
        "The agent has as many active sessions as its maxReplicas; retry after {SESSION_RETRY_AFTER_SECONDS} seconds, or raise autoScaling.maxAgents"
    )]
    AgentAtCapacity,
    /// The store throttled, timed out or failed on its side after the SDK's retries.
    #[error("The service is busy; retry after {RETRY_AFTER_SECONDS} second(s)")]
    Unavailable(#[source] StoreError),
    /// A bug or an unexpected failure of a dependency. The caller learns only that it happened.
    #[error("Internal server error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    pub fn bad_request(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// A 400 about the request as a whole (the body is not JSON, not an object...).
    pub fn bad_body(message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            message: message.into(),
            field: None,
        }
    }

    /// A 404 for an agent name the caller's account does not have (whether or not another
    /// account has it: the answer is the same).
    pub fn no_agent() -> Self {
        ApiError::NotFound("No agent of that name in this account".to_owned())
    }

    pub fn no_session() -> Self {
        ApiError::NotFound("No session of that id for this agent".to_owned())
    }

    pub fn internal(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError::Internal(Box::new(error))
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden | ApiError::KeysNeedAPerson => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unavailable(_) | ApiError::AgentNotReady => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::AgentAtCapacity => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The contract's error code (contract section 1).
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest { .. } => "GENERIC_BAD_REQUEST",
            ApiError::Unauthorized => "UNAUTHORIZED",
            ApiError::Forbidden | ApiError::KeysNeedAPerson => "FORBIDDEN",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::Conflict(_) => "CONFLICT",
            ApiError::PreconditionFailed => "PRECONDITION_FAILED",
            ApiError::MethodNotAllowed { .. } => "METHOD_NOT_ALLOWED",
            ApiError::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            ApiError::PayloadTooLarge { .. } => "PAYLOAD_TOO_LARGE",
            ApiError::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::Unavailable(_) => "SERVICE_UNAVAILABLE",
            ApiError::AgentNotReady => "AGENT_NOT_READY",
            ApiError::AgentAtCapacity => "AGENT_AT_CAPACITY",
            ApiError::Internal(_) => "INTERNAL_SERVER_ERROR",
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            ApiError::BadRequest { field, .. } => field.as_deref(),
            _ => None,
        }
    }

    /// Whether the caller is told to come back later (`Retry-After`).
    pub fn retry_after(&self) -> Option<u32> {
        match self {
            ApiError::Unavailable(_) => Some(RETRY_AFTER_SECONDS),
            ApiError::AgentNotReady | ApiError::AgentAtCapacity => {
                Some(SESSION_RETRY_AFTER_SECONDS)
            }
            _ => None,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Throttled(_) | StoreError::Timeout(_) | StoreError::Unavailable(_) => {
                ApiError::Unavailable(error)
            }
            StoreError::Unexpected(_) => ApiError::internal(error),
        }
    }
}

/// The JSON body of every error response (contract section 1).
#[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ErrorBody {
    pub error: String,
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub field: Option<String>,
}

impl From<&ApiError> for ErrorBody {
    fn from(error: &ApiError) -> Self {
        ErrorBody {
            error: error.to_string(),
            code: error.code().to_owned(),
            field: error.field().map(str::to_owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdk_like_error() -> Box<dyn std::error::Error + Send + Sync> {
        "ProvisionedThroughputExceededException: table agents-prod-AgentsTable-XYZ".into()
    }

    #[test]
    fn every_variant_has_its_contract_status_and_code() {
        let cases: Vec<(ApiError, u16, &str)> = vec![
            (
                ApiError::bad_request("serviceName", "bad"),
                400,
                "GENERIC_BAD_REQUEST",
            ),
            (ApiError::Unauthorized, 401, "UNAUTHORIZED"),
            (ApiError::Forbidden, 403, "FORBIDDEN"),
            (ApiError::KeysNeedAPerson, 403, "FORBIDDEN"),
            (ApiError::AgentNotReady, 503, "AGENT_NOT_READY"),
            (ApiError::AgentAtCapacity, 429, "AGENT_AT_CAPACITY"),
            (ApiError::NotFound("no".into()), 404, "NOT_FOUND"),
            (ApiError::Conflict("dup".into()), 409, "CONFLICT"),
            (ApiError::PreconditionFailed, 412, "PRECONDITION_FAILED"),
            (
                ApiError::MethodNotAllowed { allow: "POST" },
                405,
                "METHOD_NOT_ALLOWED",
            ),
            (
                ApiError::IdempotencyKeyReused,
                422,
                "IDEMPOTENCY_KEY_REUSED",
            ),
            (
                ApiError::PayloadTooLarge { limit: 65536 },
                413,
                "PAYLOAD_TOO_LARGE",
            ),
            (
                ApiError::UnsupportedMediaType,
                415,
                "UNSUPPORTED_MEDIA_TYPE",
            ),
            (
                ApiError::from(StoreError::Throttled(sdk_like_error())),
                503,
                "SERVICE_UNAVAILABLE",
            ),
            (
                ApiError::from(StoreError::Timeout(sdk_like_error())),
                503,
                "SERVICE_UNAVAILABLE",
            ),
            (
                ApiError::from(StoreError::Unavailable(sdk_like_error())),
                503,
                "SERVICE_UNAVAILABLE",
            ),
            (
                ApiError::from(StoreError::Unexpected(sdk_like_error())),
                500,
                "INTERNAL_SERVER_ERROR",
            ),
        ];
        for (error, status, code) in cases {
            assert_eq!(error.status().as_u16(), status, "{error:?}");
            assert_eq!(error.code(), code, "{error:?}");
        }
    }

    #[test]
    fn store_failures_never_leak_their_text_to_the_body() {
        for error in [
            ApiError::from(StoreError::Throttled(sdk_like_error())),
            ApiError::from(StoreError::Unavailable(sdk_like_error())),
            ApiError::from(StoreError::Unexpected(sdk_like_error())),
        ] {
            let body = serde_json::to_string(&ErrorBody::from(&error)).unwrap();
            assert!(!body.contains("Provisioned"), "{body}");
            assert!(!body.contains("AgentsTable"), "{body}");
        }
    }

    #[test]
    fn only_validation_errors_carry_a_field_and_only_503_and_429_a_retry_after() {
        assert_eq!(
            ErrorBody::from(&ApiError::bad_request("autoScaling.maxAgents", "x"))
                .field
                .as_deref(),
            Some("autoScaling.maxAgents")
        );
        assert_eq!(ErrorBody::from(&ApiError::Unauthorized).field, None);
        assert_eq!(ApiError::Unauthorized.retry_after(), None);
        assert_eq!(
            ApiError::from(StoreError::Timeout(sdk_like_error())).retry_after(),
            Some(RETRY_AFTER_SECONDS)
        );
        for session in [ApiError::AgentNotReady, ApiError::AgentAtCapacity] {
            assert_eq!(session.retry_after(), Some(SESSION_RETRY_AFTER_SECONDS));
        }
    }
}
