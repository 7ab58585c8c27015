//! The local gateway (`make run`, the e2e watch stack): in front of cargo lambda watch, it
//! answers what the deployed REST API answers by itself, in the template's own responses, and
//! hands the rest on as API Gateway hands them to a function, so that nothing of cargo lambda
//! watch's own answers (its 404 listing the workspace's binaries, its 500 for a byte that is
//! not UTF-8, its CORS answers) reaches a client:
//!
//! - a path no route of the template has (a trailing `/`, an empty segment, the Invoke API's
//!   paths): the template's MISSING_AUTHENTICATION_TOKEN response (404 `NOT_FOUND`);
//! - a body over API Gateway's 10 MB: REQUEST_TOO_LARGE; cargo lambda watch not answering:
//!   INTEGRATION_FAILURE; a function not answering within API Gateway's integration timeout
//!   (29 s): INTEGRATION_TIMEOUT, so that a request cargo lambda watch lost is a 503 to retry,
//!   as on AWS, and not a client waiting for ever;
//! - a header value that is not UTF-8 reaches the function decoded as UTF-8 with each invalid
//!   sequence replaced (a Lambda event is JSON text), and so answers as the function answers
//!   such a value (a malformed key, Idempotency-Key or Content-Type);
//! - a body that is not UTF-8 reaches the function as its bytes, base64-encoded, as API Gateway
//!   hands it over (events/create-agent-not-utf8.json). cargo lambda watch (1.9.2) encodes a
//!   body so only when its Content-Type does not start with `text/` or `application/json`,
//!   compared with case; so the gateway sends such a request's media type in capitals (media
//!   types are case-insensitive, RFC 9110 section 8.3.1, and the functions read them so) and a
//!   missing one as `APPLICATION/JSON`, the type a function takes a missing one for.
//!
//! With `--console DIR --console-config FILE` it also serves the console's files under
//! `/console/` (console.rs), before any route is looked at.
//!
//! CORS is cargo lambda watch's `--disable-cors` (scripts/stack.sh): an `OPTIONS` reaches the
//! function its route names, as on the deployed API.

pub mod console;
pub mod proxy;
pub mod template;

use hyper::HeaderMap;
use hyper::header::{CONTENT_TYPE, Entry, HeaderValue};

/// The largest body API Gateway takes (its REQUEST_TOO_LARGE past it).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// How long a REST API waits for its function by default (its INTEGRATION_TIMEOUT past it).
pub const INTEGRATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(29);

/// The request's headers and body as API Gateway hands them to a function, for cargo lambda
/// watch (see the module's documentation).
pub fn as_handed_over(headers: &mut HeaderMap, body: &[u8]) {
    for value in headers.values_mut() {
        if std::str::from_utf8(value.as_bytes()).is_err() {
            *value = text_value(&String::from_utf8_lossy(value.as_bytes()));
        }
    }
    if std::str::from_utf8(body).is_err() {
        match headers.entry(CONTENT_TYPE) {
            Entry::Occupied(mut types) => {
                for value in types.iter_mut() {
                    *value = text_value(&String::from_utf8_lossy(value.as_bytes()).to_uppercase());
                }
            }
            Entry::Vacant(missing) => {
                missing.insert(HeaderValue::from_static("APPLICATION/JSON"));
            }
        }
    }
}

/// A header value of UTF-8 text (which holds no control character: it came from one).
fn text_value(text: &str) -> HeaderValue {
    HeaderValue::from_bytes(text.as_bytes()).unwrap_or(HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                let name = hyper::header::HeaderName::from_static(name);
                (name, HeaderValue::from_bytes(value).unwrap())
            })
            .collect()
    }

    #[test]
    fn a_header_value_that_is_not_utf8_is_handed_over_with_each_invalid_sequence_replaced() {
        let mut given = headers(&[("idempotency-key", b"key-\xff"), ("accept", b"*/*")]);
        as_handed_over(&mut given, b"{}");
        assert_eq!(
            given["idempotency-key"].as_bytes(),
            "key-\u{fffd}".as_bytes()
        );
        assert_eq!(given["accept"], "*/*");
    }

    #[test]
    fn a_body_that_is_not_utf8_keeps_its_bytes_under_its_media_type_in_capitals() {
        let mut json = headers(&[("content-type", b"application/json; charset=utf-8")]);
        as_handed_over(&mut json, b"{\"a\": \"\xff\"}");
        assert_eq!(json[CONTENT_TYPE], "APPLICATION/JSON; CHARSET=UTF-8");
        let mut missing = HeaderMap::new();
        as_handed_over(&mut missing, b"\xfe");
        assert_eq!(missing[CONTENT_TYPE], "APPLICATION/JSON");
    }

    #[test]
    fn a_utf8_request_is_handed_over_as_it_came() {
        let mut given = headers(&[("content-type", b"application/json")]);
        let before = given.clone();
        as_handed_over(&mut given, "{\"name\": \"é\"}".as_bytes());
        assert_eq!(given, before);
    }
}
