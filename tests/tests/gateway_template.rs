//! The gateway as template.yaml declares it (contract section 9). `sam local start-api` runs the
//! authorizer but emulates neither gateway responses nor usage plans nor throttling, so these are
//! checked here, in the template, against the contract and against the functions' own answers;
//! scripts/check-gateway.sh checks them on a deployed stack.

use std::collections::BTreeMap;

use integration_tests::openapi::{assert_conforms, document as openapi};
use integration_tests::template::{reference, template};
use serde_json::Value;
use serde_yaml::Value as Yaml;
use shared::ApiError;
use shared::error::StoreError;

fn api(template: &Yaml) -> &Yaml {
    let api = &template["Resources"]["Api"];
    assert_eq!(api["Type"].as_str(), Some("AWS::Serverless::Api"));
    &api["Properties"]
}

/// A gateway response as a client receives it: status, headers (lowercase names, values without
/// the quotes of API Gateway's mapping syntax) and body.
#[derive(Debug)]
struct GatewayAnswer {
    status: Option<u16>,
    headers: BTreeMap<String, String>,
    body: Value,
}

fn gateway_response(template: &Yaml, response_type: &str) -> GatewayAnswer {
    let response = &api(template)["GatewayResponses"][response_type];
    assert!(
        response.is_mapping(),
        "template.yaml has no gateway response {response_type}"
    );
    let headers = response["ResponseParameters"]["Headers"]
        .as_mapping()
        .map(|headers| {
            headers
                .iter()
                .map(|(name, value)| {
                    let value = value.as_str().unwrap();
                    let literal = value
                        .strip_prefix('\'')
                        .and_then(|v| v.strip_suffix('\''))
                        .unwrap_or_else(|| panic!("{response_type}: {value} is not a literal"));
                    (name.as_str().unwrap().to_lowercase(), literal.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    // The one variable a template may use here, as API Gateway substitutes it (a JSON string).
    let template_text = response["ResponseTemplates"]["application/json"]
        .as_str()
        .unwrap_or_else(|| panic!("{response_type}: no application/json body"))
        .replace("$context.error.messageString", "\"Invalid request body\"");
    GatewayAnswer {
        status: response["StatusCode"]
            .as_str()
            .map(|status| status.parse().unwrap()),
        headers,
        body: serde_json::from_str(&template_text)
            .unwrap_or_else(|e| panic!("{response_type}: the body is not JSON: {e}")),
    }
}

/// What a function answers `error`: status, the headers the contract names, body.
fn function_answer(error: ApiError) -> GatewayAnswer {
    let response = shared::http::error_response(&error);
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap().to_owned()))
        .collect();
    let body = match response.body() {
        lambda_http::Body::Text(text) => serde_json::from_str(text).unwrap(),
        lambda_http::Body::Binary(bytes) => serde_json::from_slice(bytes).unwrap(),
        lambda_http::Body::Empty => Value::Null,
        other => panic!("{other:?}"),
    };
    GatewayAnswer {
        status: Some(response.status().as_u16()),
        headers,
        body,
    }
}

fn assert_same_answer(response_type: &str, gateway: &GatewayAnswer, function: &GatewayAnswer) {
    assert_eq!(gateway.status, function.status, "{response_type}: status");
    assert_eq!(gateway.body, function.body, "{response_type}: body");
    for (name, value) in &function.headers {
        assert_eq!(
            gateway.headers.get(name),
            Some(value),
            "{response_type}: header {name}"
        );
    }
}

#[test]
fn a_missing_malformed_unknown_or_revoked_key_is_the_functions_own_401_through_the_gateway() {
    let template = template();
    let function = function_answer(ApiError::Unauthorized);
    assert_eq!(
        function.headers.get("www-authenticate").map(String::as_str),
        Some("Bearer")
    );
    // UNAUTHORIZED: no Authorization header (the authorizer is not called); ACCESS_DENIED: the
    // authorizer's Deny for any other refused key.
    for response_type in ["UNAUTHORIZED", "ACCESS_DENIED"] {
        assert_same_answer(
            response_type,
            &gateway_response(&template, response_type),
            &function,
        );
    }
}

#[test]
fn a_throttled_request_is_429_with_retry_after_and_the_contract_body() {
    let template = template();
    let document = openapi();
    for response_type in ["THROTTLED", "QUOTA_EXCEEDED"] {
        let answer = gateway_response(&template, response_type);
        assert_eq!(answer.status, Some(429), "{response_type}");
        assert_eq!(answer.body["code"], "TOO_MANY_REQUESTS", "{response_type}");
        let retry_after: u32 = answer.headers["retry-after"].parse().unwrap();
        assert!(retry_after >= 1, "{response_type}: Retry-After");
        for (method, path) in [("get", "/agents"), ("get", "/agents/{agentName}/logs")] {
            assert_conforms(&document, method, path, 429, &answer.body);
        }
    }
}

/// Includes INVALID_API_KEY: the account's gateway key in no plan of the stage, for a moment
/// while the operator command moves it between plans. Not the caller's fault, and retried.
#[test]
fn a_key_check_function_or_usage_plan_that_cannot_answer_is_the_functions_own_503() {
    let template = template();
    let function = function_answer(ApiError::Unavailable(StoreError::Timeout(
        "timed out".into(),
    )));
    assert!(function.headers.contains_key("retry-after"));
    for response_type in [
        "AUTHORIZER_FAILURE",
        "AUTHORIZER_CONFIGURATION_ERROR",
        "INTEGRATION_FAILURE",
        "INTEGRATION_TIMEOUT",
        "INVALID_API_KEY",
    ] {
        assert_same_answer(
            response_type,
            &gateway_response(&template, response_type),
            &function,
        );
    }
}

#[test]
fn a_body_over_the_gateways_limit_is_the_functions_own_413() {
    let function = function_answer(ApiError::PayloadTooLarge {
        limit: shared::http::MAX_BODY_BYTES,
    });
    assert_same_answer(
        "REQUEST_TOO_LARGE",
        &gateway_response(&template(), "REQUEST_TOO_LARGE"),
        &function,
    );
}

#[test]
fn an_unknown_path_is_404_not_found_and_any_other_gateway_failure_500() {
    let template = template();
    for response_type in ["MISSING_AUTHENTICATION_TOKEN", "RESOURCE_NOT_FOUND"] {
        let answer = gateway_response(&template, response_type);
        assert_eq!(answer.status, Some(404), "{response_type}");
        assert_eq!(answer.body["code"], "NOT_FOUND", "{response_type}");
    }
    let internal = function_answer(ApiError::Internal("bug".into()));
    assert_same_answer(
        "DEFAULT_5XX",
        &gateway_response(&template, "DEFAULT_5XX"),
        &internal,
    );
}

/// Every error a client can receive, also from the gateway itself, has the body of section 1:
/// every response type the template shapes, and the defaults that catch the rest.
#[test]
fn every_gateway_response_is_json_in_the_contract_error_shape() {
    let template = template();
    let document = openapi();
    let responses = api(&template)["GatewayResponses"].as_mapping().unwrap();
    for required in ["DEFAULT_4XX", "DEFAULT_5XX"] {
        assert!(
            responses.contains_key(required),
            "{required}: the catch-all of the gateway's other answers"
        );
    }
    for (response_type, _) in responses {
        let response_type = response_type.as_str().unwrap();
        let answer = gateway_response(&template, response_type);
        assert_eq!(
            answer.headers.get("content-type").map(String::as_str),
            Some("application/json"),
            "{response_type}"
        );
        // The Error schema, through an operation that documents the answer's status (the
        // default 4XX keeps the gateway's status; checked as a 400, its code's status).
        let status = answer.status.unwrap_or(400);
        let (method, path) = match status {
            404 => ("get", "/agents/{agentName}"),
            413 => ("post", "/agents"),
            _ => ("get", "/agents"),
        };
        assert_conforms(&document, method, path, status, &answer.body);
    }
}

#[test]
fn every_route_is_behind_the_authorizer_and_the_accounts_usage_plans() {
    let template = template();
    let api = api(&template);
    // The usage-plan key is the one the authorizer names, and every method requires one.
    assert_eq!(api["ApiKeySourceType"].as_str(), Some("AUTHORIZER"));
    assert_eq!(api["Auth"]["ApiKeyRequired"].as_bool(), Some(true));
    let authorizer_name = api["Auth"]["DefaultAuthorizer"].as_str().unwrap();
    let authorizer = &api["Auth"]["Authorizers"][authorizer_name];
    assert_eq!(authorizer["FunctionPayloadType"].as_str(), Some("REQUEST"));
    assert_eq!(
        authorizer["Identity"]["Headers"],
        serde_yaml::from_str::<Yaml>("[Authorization]").unwrap()
    );
    // A revoked key stops working within 60 seconds (the verdict's cache).
    let ttl = authorizer["Identity"]["ReauthorizeEvery"].as_u64().unwrap();
    assert!((1..=60).contains(&ttl), "ReauthorizeEvery {ttl}");
    // SAM deploys the named stage only (no extra "Stage" stage outside the usage plans).
    assert!(api["OpenApiVersion"].is_string());

    // No route of a function opts out of the authorizer or of the key requirement.
    let mut routes = 0;
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        let Some(events) = resource["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events {
            let kind = event["Type"].as_str().unwrap();
            assert_ne!(kind, "HttpApi", "{name:?}: a route outside the REST API");
            if kind != "Api" {
                continue;
            }
            let properties = &event["Properties"];
            assert_eq!(reference(&properties["RestApiId"]), Some("Api"), "{name:?}");
            assert!(
                properties["Auth"].is_null(),
                "{name:?}: a route with its own Auth (authorizer or key requirement)"
            );
            routes += 1;
        }
    }
    assert!(routes >= 16, "routes of the REST API: {routes}");
}

#[test]
fn accounts_are_throttled_by_default_below_the_overall_limits() {
    let template = template();
    let plan = &template["Resources"]["AccountsUsagePlan"];
    assert_eq!(plan["Type"].as_str(), Some("AWS::ApiGateway::UsagePlan"));
    let stages = plan["Properties"]["ApiStages"].as_sequence().unwrap();
    assert_eq!(stages.len(), 1);
    assert_eq!(reference(&stages[0]["ApiId"]), Some("Api"));
    // The stage itself (SAM's Api.Stage), which also orders the plan after the stage.
    assert_eq!(reference(&stages[0]["Stage"]), Some("Api.Stage"));

    // Both limits are the operator's to set at deploy time: parameters, with defaults.
    let parameter_default = |what: &str, value: &Yaml| -> f64 {
        let parameter = reference(value).unwrap_or_else(|| panic!("{what}: a template parameter"));
        let default = &template["Parameters"][parameter]["Default"];
        default
            .as_f64()
            .unwrap_or_else(|| panic!("{parameter}: a default"))
    };
    let throttle = &plan["Properties"]["Throttle"];
    let rate = parameter_default("RateLimit", &throttle["RateLimit"]);
    let burst = parameter_default("BurstLimit", &throttle["BurstLimit"]);
    assert!(rate >= 1.0 && burst >= rate, "rate {rate} burst {burst}");

    // The overall limits, per method for every account together, above one account's.
    let settings = api(&template)["MethodSettings"].as_sequence().unwrap();
    let all = settings
        .iter()
        .find(|s| s["ResourcePath"] == "/*" && s["HttpMethod"] == "*")
        .expect("throttling of every method");
    let overall_rate = parameter_default("ThrottlingRateLimit", &all["ThrottlingRateLimit"]);
    let overall_burst = parameter_default("ThrottlingBurstLimit", &all["ThrottlingBurstLimit"]);
    assert!(overall_rate > rate && overall_burst > burst);

    // What the operator command needs to manage an account's gateway key and limits.
    for output in ["RestApiId", "ApiStage", "AccountsUsagePlanId"] {
        assert!(
            !template["Outputs"][output]["Value"].is_null(),
            "output {output}"
        );
    }
}

/// The gateway's failures reach the operator: its 5xx rate, and accounts refused because their
/// gateway key is in no usage plan (read from the access log's field for the response type).
#[test]
fn the_operator_is_alarmed_on_the_gateways_5xx_and_on_an_account_without_its_gateway_key() {
    let template = template();
    let resources = &template["Resources"];
    let alarmed = |name: &str| {
        let alarm = &resources[name];
        assert_eq!(
            alarm["Type"].as_str(),
            Some("AWS::CloudWatch::Alarm"),
            "{name}"
        );
        let actions = alarm["Properties"]["AlarmActions"].as_sequence().unwrap();
        assert!(
            actions
                .iter()
                .any(|action| reference(action) == Some("OperatorAlarmsTopic")),
            "{name}: to the operator's topic"
        );
        &alarm["Properties"]
    };

    let errors = alarmed("ApiServerErrorsAlarm");
    assert_eq!(errors["Namespace"].as_str(), Some("AWS/ApiGateway"));
    assert_eq!(errors["MetricName"].as_str(), Some("5XXError"));
    let dimension = |name: &str| {
        errors["Dimensions"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|d| d["Name"] == name)
            .map(|d| d["Value"].clone())
            .unwrap_or_else(|| panic!("dimension {name}"))
    };
    // The API's own name and stage, as its metrics are named.
    assert_eq!(dimension("ApiName"), api(&template)["Name"]);
    assert_eq!(reference(&dimension("Stage")), Some("Api.Stage"));

    let filter = &resources["GatewayKeyMissingMetricFilter"]["Properties"];
    assert_eq!(
        reference(&filter["LogGroupName"]),
        Some("ApiAccessLogGroup")
    );
    let format = api(&template)["AccessLogSetting"]["Format"]
        .as_str()
        .unwrap();
    assert!(
        format.contains(r#""gatewayResponse":"$context.error.responseType""#),
        "the access log names the gateway response: {format}"
    );
    assert_eq!(
        filter["FilterPattern"].as_str(),
        Some(r#"{ $.gatewayResponse = "INVALID_API_KEY" }"#)
    );
    let metric = &filter["MetricTransformations"][0];
    let missing = alarmed("GatewayKeyMissingAlarm");
    assert_eq!(missing["MetricName"], metric["MetricName"]);
    assert_eq!(missing["Namespace"], metric["MetricNamespace"]);
}
