//! Every response, success or error, built in one place: a handler's result goes through
//! [`respond`], its success as a [`Reply`].

use aws_smithy_types::error::display::DisplayErrorContext;
use http::StatusCode;
use http::header::{ALLOW, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use lambda_http::{Body, Response};
use serde::Serialize;

use crate::ApiError;
use crate::error::ErrorBody;

pub(super) const APPLICATION_JSON: &str = "application/json";

/// A JSON response with `status`.
pub fn json_response<T: Serialize>(status: StatusCode, body: &T) -> Response<Body> {
    match serde_json::to_vec(body) {
        Ok(bytes) => build(status, bytes),
        Err(error) => error_response(&ApiError::internal(error)),
    }
}

/// A response whose JSON body is already serialized (an answer kept for a replay).
pub fn json_bytes_response(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    build(status, bytes)
}

fn build(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Body::Binary(bytes));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(APPLICATION_JSON));
    response
}

/// The response for an error: the contract's status, body and headers. Server-side failures are
/// logged here with their cause (the caller sees only the code).
pub fn error_response(error: &ApiError) -> Response<Body> {
    match error {
        ApiError::Internal(source) => {
            tracing::error!(error = %DisplayErrorContext(source.as_ref()), "request failed")
        }
        ApiError::Unavailable(source) => {
            tracing::warn!(error = %DisplayErrorContext(source), "store unavailable")
        }
        _ => {}
    }
    let bytes = serde_json::to_vec(&ErrorBody::from(error)).unwrap_or_else(|_| {
        br#"{"error":"Internal server error","code":"INTERNAL_SERVER_ERROR"}"#.to_vec()
    });
    let mut response = build(error.status(), bytes);
    let headers = response.headers_mut();
    if matches!(error, ApiError::Unauthorized) {
        headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if let Some(seconds) = error.retry_after() {
        headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    if let ApiError::MethodNotAllowed { allow } = error {
        headers.insert(ALLOW, HeaderValue::from_static(allow));
    }
    response
}

/// A handler's successful result, turned into its response; every handler ends in [`respond`].
pub trait Reply {
    fn into_response(self) -> Response<Body>;
}

/// A JSON body answered 200.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T: Serialize> Reply for Json<T> {
    fn into_response(self) -> Response<Body> {
        json_response(StatusCode::OK, &self.0)
    }
}

/// `{"status": "OK"}`: the answer of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StatusOk {
    pub status: &'static str,
}

/// A delete's answer, 200 `{"status": "OK"}`.
pub fn status_ok() -> Json<StatusOk> {
    Json(StatusOk { status: "OK" })
}

/// The agent object, 200 with its `ETag`.
impl Reply for crate::agent::AgentRecord {
    fn into_response(self) -> Response<Body> {
        match serde_json::to_vec(&self.view()) {
            Ok(body) => with_etag(json_bytes_response(StatusCode::OK, body), &self.etag()),
            Err(error) => error_response(&ApiError::internal(error)),
        }
    }
}

/// GET /v1/agents/{name}'s answer: the agent object and the same object under `body`, 200 with
/// its `ETag`.
impl Reply for crate::agent::AgentRead {
    fn into_response(self) -> Response<Body> {
        let etag = self.etag.clone();
        match serde_json::to_vec(&self) {
            Ok(body) => with_etag(json_bytes_response(StatusCode::OK, body), &etag),
            Err(error) => error_response(&ApiError::internal(error)),
        }
    }
}

/// The answer of a create or an update: the agent as written, with its `ETag`; or the first
/// answer to the request's `Idempotency-Key`, replayed byte for byte and marked so.
impl Reply for crate::agent::lifecycle::Answer {
    fn into_response(self) -> Response<Body> {
        use crate::agent::lifecycle::Answer;
        match self {
            Answer::Agent {
                status,
                agent,
                body,
            } => with_etag(json_bytes_response(status, body), &agent.etag()),
            Answer::Replayed { status, body } => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
                let mut response = json_bytes_response(status, body.into_bytes());
                response.headers_mut().insert(
                    crate::idempotency::REPLAYED_HEADER,
                    HeaderValue::from_static("true"),
                );
                response
            }
        }
    }
}

fn with_etag(mut response: Response<Body>, etag: &str) -> Response<Body> {
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.headers_mut().insert(http::header::ETAG, value);
    }
    response
}

/// The response for a handler's result.
pub fn respond<T: Reply>(result: Result<T, ApiError>) -> Response<Body> {
    match result {
        Ok(reply) => reply.into_response(),
        Err(error) => error_response(&error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_responses_carry_the_contract_headers() {
        let unauthorized = error_response(&ApiError::Unauthorized);
        assert_eq!(unauthorized.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(unauthorized.headers()[WWW_AUTHENTICATE], "Bearer");
        assert_eq!(unauthorized.headers()[CONTENT_TYPE], "application/json");
        let body: serde_json::Value = serde_json::from_slice(unauthorized.body().as_ref()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"error": "Unauthorized", "code": "UNAUTHORIZED"})
        );

        let wrong_method = error_response(&ApiError::MethodNotAllowed { allow: "POST" });
        assert_eq!(wrong_method.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(wrong_method.headers()[ALLOW], "POST");

        let busy = error_response(&ApiError::from(crate::error::StoreError::Throttled(
            "x".into(),
        )));
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(busy.headers()[RETRY_AFTER], "1");
    }
}
