//! The HTTP edge shared by every endpoint: reading a JSON body safely, and building every
//! response (success or error) in one place.

use aws_smithy_types::error::display::DisplayErrorContext;
use http::header::{ALLOW, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderMap, Method, StatusCode};
use lambda_http::{Body, Request, Response};
use serde::Serialize;

use crate::ApiError;
use crate::error::ErrorBody;
use crate::strict_json::StrictJsonError;

/// Bodies over this size are refused before they are parsed (contract section 1).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

const APPLICATION_JSON: &str = "application/json";

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

/// The methods each path serves, one function per method (the `Allow` of a 405).
pub mod allow {
    /// `/v1/agents`: list (GET), create (POST), and update (PUT: the agent the body's
    /// `serviceName` names, the anchor CLI's update).
    pub const AGENTS: &str = "GET, POST, PUT";
    /// `/v1/agents/{agentName}`: get, update, delete.
    pub const AGENT: &str = "GET, POST, DELETE";
    /// `/v1/agents/{agentName}/logs`.
    pub const AGENT_LOGS: &str = "GET";
    /// `/v1/secrets`: the list.
    pub const SECRETS: &str = "GET";
    /// `/v1/secrets/{setName}`: read, create or change, delete.
    pub const SECRET_SET: &str = "GET, PUT, DELETE";
    /// `/v1/secrets/{setName}/{secretKey}`: delete one key.
    pub const SECRET: &str = "DELETE";
    /// `/v1/public/{agentName}/start`: start a session.
    pub const SESSION_START: &str = "POST";
    /// `/v1/agents/{agentName}/sessions/{sessionId}`: read, stop.
    pub const SESSION: &str = "GET, DELETE";
    /// `/v1/agents/{agentName}/sessions`: the list.
    pub const SESSIONS: &str = "GET";
}

/// A function serves one method of its path. The gateway (an `ANY` route beside the methods'
/// own) and `cargo lambda watch` send it the path's other methods too, which get a 405 with the
/// path's `Allow` (one of [`allow`]) rather than a 404.
pub fn require_method(
    request: &Request,
    method: Method,
    allow: &'static str,
) -> Result<(), ApiError> {
    if *request.method() == method {
        Ok(())
    } else {
        Err(ApiError::MethodNotAllowed { allow })
    }
}

/// The `If-Match` of a request, if it has one (several are one list, RFC 9110).
pub fn if_match(request: &Request) -> Option<crate::agent::lifecycle::IfMatch> {
    let values: Vec<&str> = request
        .headers()
        .get_all(http::header::IF_MATCH)
        .iter()
        .map(|value| value.to_str().unwrap_or_default())
        .collect();
    (!values.is_empty()).then(|| crate::agent::lifecycle::IfMatch::parse(&values.join(",")))
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

/// What every handler checks first, in the order the contract answers: the caller's key (401),
/// then the method (405); the caller recorded on the current span as `namespace`.
pub async fn route<K: crate::auth::KeyStore>(
    request: &Request,
    keys: &K,
    method: Method,
    allow: &'static str,
) -> Result<crate::auth::Principal, ApiError> {
    let caller = crate::auth::caller(request, keys).await?;
    require_method(request, method, allow)?;
    tracing::Span::current().record("namespace", caller.namespace.as_str());
    Ok(caller)
}

/// [`route`] for `/v1/agents/{agentName}` and its sub-paths, then the name (404 when no agent
/// can have it), recorded on the current span as `agent`.
pub async fn agent_route<K: crate::auth::KeyStore>(
    request: &Request,
    keys: &K,
    method: Method,
    allow: &'static str,
) -> Result<(crate::auth::Principal, String), ApiError> {
    let caller = route(request, keys, method, allow).await?;
    let name = agent_name(request).ok_or_else(ApiError::no_agent)?;
    tracing::Span::current().record("agent", name.as_str());
    Ok((caller, name))
}

/// The session id of a request to `/v1/agents/{agentName}/sessions/{sessionId}` (404 when
/// absent: no session has an empty id).
pub fn session_id(request: &Request) -> Result<String, ApiError> {
    path_parameter(request, "sessionId", 4).ok_or_else(ApiError::no_session)
}

/// The agent name of a request to `/v1/agents/{agentName}` or one of its sub-paths. `None` when
/// it is not a name an agent can have (no such agent can exist: a 404).
pub fn agent_name(request: &Request) -> Option<String> {
    path_parameter(request, "agentName", 2).filter(|name| crate::validation::is_dns_label(name))
}

/// The path parameter `name` of a request: the route's, or the path's segment at `position`
/// (`/v1/secrets/{setName}`: 2) when the router did not fill the parameters in.
pub fn path_parameter(request: &Request, name: &str, position: usize) -> Option<String> {
    use lambda_http::RequestExt;
    match request
        .path_parameters_ref()
        .and_then(|params| params.first(name))
    {
        Some(value) => Some(value.to_owned()),
        None => request
            .raw_http_path()
            .trim_start_matches('/')
            .split('/')
            .nth(position)
            .filter(|segment| !segment.is_empty())
            .map(str::to_owned),
    }
}

/// The response for a handler's result.
pub fn respond<T: Reply>(result: Result<T, ApiError>) -> Response<Body> {
    match result {
        Ok(reply) => reply.into_response(),
        Err(error) => error_response(&error),
    }
}

/// Whether a Content-Type names JSON (`application/json`, with or without parameters, or an
/// `application/*+json` type).
fn is_json(value: &HeaderValue) -> bool {
    let Ok(text) = value.to_str() else {
        return false;
    };
    let media_type = text
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    media_type == APPLICATION_JSON
        || (media_type.starts_with("application/") && media_type.ends_with("+json"))
}

/// Checks the size and Content-Type of a request body and parses it as JSON. A missing
/// Content-Type is accepted (contract section 1); any other type is a 415 saying what to send.
pub fn json_body(headers: &HeaderMap, body: &Body) -> Result<serde_json::Value, ApiError> {
    let bytes: &[u8] = body.as_ref();
    if bytes.len() > MAX_BODY_BYTES {
        return Err(ApiError::PayloadTooLarge {
            limit: MAX_BODY_BYTES,
        });
    }
    let mut content_types = headers.get_all(CONTENT_TYPE).iter();
    if let Some(value) = content_types.next()
        && (!is_json(value) || content_types.next().is_some())
    {
        return Err(ApiError::UnsupportedMediaType);
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_body(
            "Request body is required: a JSON object such as {\"serviceName\": \"my-agent\", \"image\": \"ghcr.io/acme/agent:1.0\"}",
        ));
    }
    crate::strict_json::from_slice(bytes).map_err(|error| match error {
        StrictJsonError::Syntax(error) => {
            ApiError::bad_body(format!("Request body is not valid JSON: {error}"))
        }
        StrictJsonError::DuplicateMember(path) => {
            let field = crate::validation::echoed(&path);
            ApiError::bad_request(
                field.clone(),
                format!("{field} is given more than once; give each member once"),
            )
        }
    })
}

/// [`json_body`] of a whole request.
pub fn request_json(request: &Request) -> Result<serde_json::Value, ApiError> {
    json_body(request.headers(), request.body())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(content_type: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = content_type {
            headers.insert(CONTENT_TYPE, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    fn body(text: &str) -> Body {
        Body::Text(text.to_owned())
    }

    #[test]
    fn json_content_types_and_a_missing_one_are_accepted() {
        for content_type in [
            None,
            Some("application/json"),
            Some("Application/JSON; charset=utf-8"),
            Some("application/merge-patch+json"),
        ] {
            assert!(
                json_body(&headers(content_type), &body("{}")).is_ok(),
                "{content_type:?}"
            );
        }
    }

    #[test]
    fn other_content_types_are_415_with_a_hint() {
        for content_type in [
            "application/x-www-form-urlencoded",
            "text/plain",
            "",
            "json",
        ] {
            let error = json_body(&headers(Some(content_type)), &body("{}")).unwrap_err();
            assert_eq!(
                error.status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{content_type}"
            );
            assert!(error.to_string().contains("Content-Type: application/json"));
        }
    }

    #[test]
    fn oversized_bodies_are_413_before_parsing() {
        let big = "x".repeat(MAX_BODY_BYTES + 1);
        let error = json_body(&headers(Some("application/json")), &body(&big)).unwrap_err();
        assert_eq!(error.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let just_fits = format!("\"{}\"", "x".repeat(MAX_BODY_BYTES - 2));
        assert!(json_body(&headers(None), &body(&just_fits)).is_ok());
    }

    #[test]
    fn a_member_given_twice_is_400_naming_it() {
        for (text, field) in [
            (r#"{"serviceName":"a","serviceName":"b"}"#, "serviceName"),
            (
                r#"{"serviceName":"a","autoScaling":{"maxAgents":2,"maxAgents":2}}"#,
                "autoScaling.maxAgents",
            ),
        ] {
            let error = json_body(&headers(None), &body(text)).unwrap_err();
            assert_eq!(error.status(), StatusCode::BAD_REQUEST, "{text}");
            assert_eq!(error.field(), Some(field), "{text}");
        }
    }

    #[test]
    fn empty_and_broken_bodies_are_400() {
        for text in ["", "  ", "{", "{\"a\":}", "nul"] {
            let error = json_body(&headers(None), &body(text)).unwrap_err();
            assert_eq!(error.status(), StatusCode::BAD_REQUEST, "{text:?}");
        }
    }

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
