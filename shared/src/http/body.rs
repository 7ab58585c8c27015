//! A request's JSON body, read safely: its size and Content-Type first, then strict JSON.

use http::HeaderMap;
use http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Request};

use super::response::APPLICATION_JSON;
use crate::ApiError;
use crate::strict_json::StrictJsonError;

/// Bodies over this size are refused before they are parsed (contract section 1).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

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
    use http::StatusCode;

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
}
