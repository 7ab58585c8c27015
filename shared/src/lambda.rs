//! The functions' Lambda edge: lambda_http's loop, with every value of a repeated header kept.
//!
//! A REST API event (payload 1.0) carries its headers twice: `headers`, with the last value of a
//! repeated header, and `multiValueHeaders`, with all of them. lambda_http merges the two with
//! the single values last, and a single value replaces the list: a request with two
//! `Idempotency-Key` headers reached the function with one, and "a header given twice is a 400"
//! did not hold through the gateway. Here the single value of every header the list holds is
//! dropped before lambda_http merges, so the request keeps each value sent.
//!
//! `Adapter` and `LambdaRequest` are public but hidden from lambda_http's documentation (what
//! its `run` is made of); the version is pinned by Cargo.lock and the tests below fail if their
//! behaviour moves.

use lambda_http::lambda_runtime::{self, Diagnostic, LambdaEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::tower::{Service, ServiceExt};
use lambda_http::{Adapter, IntoResponse, Request};

/// lambda_http's `run`, on requests that keep every value of a repeated header.
pub async fn run<'a, S, R, E>(handler: S) -> Result<(), lambda_http::Error>
where
    S: Service<Request, Response = R, Error = E>,
    S::Future: Send + 'a,
    R: IntoResponse,
    E: std::fmt::Debug + Into<Diagnostic>,
{
    let adapter = Adapter::from(handler).map_request(|mut event: LambdaEvent<LambdaRequest>| {
        keep_every_value(&mut event.payload);
        event
    });
    lambda_runtime::run(adapter).await
}

/// Drops the single-valued copy of each header a REST API event lists with all its values.
fn keep_every_value(event: &mut LambdaRequest) {
    if let LambdaRequest::ApiGatewayV1(request) = event {
        let listed: Vec<_> = request.multi_value_headers.keys().cloned().collect();
        for name in listed {
            request.headers.remove(name);
        }
    }
}

/// The request the runtime hands a function for an event's JSON (fixtures, generated events).
pub fn request_from_event(json: &str) -> Result<Request, serde_json::Error> {
    let mut event: LambdaRequest = serde_json::from_str(json)?;
    keep_every_value(&mut event);
    Ok(event.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rest_event(headers: serde_json::Value, multi: serde_json::Value) -> String {
        json!({
            "resource": "/v1/agents", "path": "/v1/agents", "httpMethod": "POST",
            "headers": headers, "multiValueHeaders": multi,
            "queryStringParameters": null, "multiValueQueryStringParameters": null,
            "pathParameters": null, "stageVariables": null,
            "requestContext": {"resourcePath": "/v1/agents", "httpMethod": "POST", "path": "/dev/v1/agents",
                "stage": "dev", "requestId": "r", "accountId": "123456789012", "apiId": "abc",
                "identity": {"sourceIp": "203.0.113.7"}},
            "body": "{}", "isBase64Encoded": false
        })
        .to_string()
    }

    fn values(request: &Request, name: &str) -> Vec<String> {
        request
            .headers()
            .get_all(name)
            .iter()
            .map(|value| value.to_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn a_header_the_gateway_lists_twice_reaches_the_function_twice() {
        let event = rest_event(
            json!({"idempotency-key": "second", "content-type": "application/json"}),
            json!({"idempotency-key": ["first", "second"], "content-type": ["application/json"]}),
        );
        let request = request_from_event(&event).unwrap();
        assert_eq!(values(&request, "idempotency-key"), ["first", "second"]);
        assert_eq!(values(&request, "content-type"), ["application/json"]);
        // What lambda_http alone makes of it: one value, the repeated header unseen.
        let plain = lambda_http::request::from_str(&event).unwrap();
        assert_eq!(values(&plain, "idempotency-key"), ["second"]);
    }

    #[test]
    fn headers_only_in_the_single_valued_map_are_kept() {
        let event = rest_event(json!({"authorization": "Bearer x"}), json!({}));
        let request = request_from_event(&event).unwrap();
        assert_eq!(values(&request, "authorization"), ["Bearer x"]);
    }
}
