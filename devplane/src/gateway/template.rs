//! What the deployed REST API answers by itself, read from template.yaml: the paths its routes
//! declare (a request to any other path never reaches a function) and its gateway responses
//! (the contract's body, status and headers for what the gateway refuses).

use hyper::StatusCode;
use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};

use crate::functions::functions;
use crate::rules::{RuleError, resources, template_error};

/// One segment of a route's path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `{name}`: any one segment, not empty.
    Parameter,
}

/// The paths of the template's API routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routes(Vec<Vec<Segment>>);

impl Routes {
    /// Every `Type: Api` event's `Path` of the template's functions.
    pub fn from_template(text: &str) -> Result<Self, RuleError> {
        let mut paths = Vec::new();
        for (_, events) in functions(text)? {
            for (_, event) in events.as_mapping().into_iter().flatten() {
                if event["Type"].as_str() != Some("Api") {
                    continue;
                }
                let path = event["Properties"]["Path"]
                    .as_str()
                    .ok_or_else(|| template_error("an Api event without a Path"))?;
                let route = segments(path);
                if !paths.contains(&route) {
                    paths.push(route);
                }
            }
        }
        if paths.is_empty() {
            return Err(template_error("no Api event"));
        }
        Ok(Routes(paths))
    }

    /// Whether a route of the template has this path, matched as API Gateway matches a resource:
    /// segment by segment, a parameter one non-empty segment, so that a trailing `/` or an empty
    /// segment (`//`) is another path.
    pub fn has(&self, path: &str) -> bool {
        let given: Vec<&str> = path.split('/').collect();
        self.0.iter().any(|route| {
            route.len() == given.len()
                && route
                    .iter()
                    .zip(&given)
                    .all(|(segment, text)| match segment {
                        Segment::Literal(literal) => literal == text,
                        Segment::Parameter => !text.is_empty(),
                    })
        })
    }
}

fn segments(path: &str) -> Vec<Segment> {
    path.split('/')
        .map(|text| match text.starts_with('{') && text.ends_with('}') {
            true => Segment::Parameter,
            false => Segment::Literal(text.to_owned()),
        })
        .collect()
}

/// The gateway responses the local gateway gives, by their API Gateway names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseType {
    /// A path no route has (REST APIs answer it "missing authentication token").
    MissingAuthenticationToken,
    /// A body over API Gateway's 10 MB.
    RequestTooLarge,
    /// The function could not be reached.
    IntegrationFailure,
    /// The function did not answer within the integration timeout.
    IntegrationTimeout,
}

impl ResponseType {
    fn name(self) -> &'static str {
        match self {
            ResponseType::MissingAuthenticationToken => "MISSING_AUTHENTICATION_TOKEN",
            ResponseType::RequestTooLarge => "REQUEST_TOO_LARGE",
            ResponseType::IntegrationFailure => "INTEGRATION_FAILURE",
            ResponseType::IntegrationTimeout => "INTEGRATION_TIMEOUT",
        }
    }
}

/// A gateway response as a client receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayResponse {
    pub status: StatusCode,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
}

impl GatewayResponse {
    /// The template's response of `kind`: its status, its literal headers (API Gateway's
    /// mapping syntax quotes them) and its JSON body, which must name no variable.
    pub fn from_template(text: &str, kind: ResponseType) -> Result<Self, RuleError> {
        let fail = |what: &str| template_error(format!("{}: {what}", kind.name()));
        let response = &api(text)?["Properties"]["GatewayResponses"][kind.name()];
        let status = response["StatusCode"]
            .as_str()
            .and_then(|status| status.parse::<StatusCode>().ok())
            .ok_or_else(|| fail("no StatusCode"))?;
        let mut headers = Vec::new();
        let declared = response["ResponseParameters"]["Headers"].as_mapping();
        for (name, value) in declared.into_iter().flatten() {
            let literal = value
                .as_str()
                .and_then(|v| v.strip_prefix('\'')?.strip_suffix('\''))
                .ok_or_else(|| fail("a header that is not a literal"))?;
            let name = HeaderName::try_from(name.as_str().unwrap_or_default())
                .map_err(|error| fail(&error.to_string()))?;
            let value = HeaderValue::try_from(literal).map_err(|error| fail(&error.to_string()))?;
            headers.push((name, value));
        }
        let body = response["ResponseTemplates"]["application/json"]
            .as_str()
            .filter(|body| !body.contains('$'))
            .filter(|body| serde_json::from_str::<serde_json::Value>(body).is_ok())
            .ok_or_else(|| fail("no literal JSON body"))?;
        Ok(GatewayResponse {
            status,
            headers,
            body: Bytes::from(body.to_owned()),
        })
    }
}

/// The template's one REST API.
fn api(text: &str) -> Result<serde_yaml::Value, RuleError> {
    let mut apis = resources(text)?
        .into_iter()
        .filter(|(_, resource)| resource["Type"].as_str() == Some("AWS::Serverless::Api"));
    match (apis.next(), apis.next()) {
        (Some((_, api)), None) => Ok(api),
        _ => Err(template_error("not one AWS::Serverless::Api")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap()
    }

    #[test]
    fn the_templates_paths_are_routed_and_no_other() {
        let routes = Routes::from_template(&template()).unwrap();
        for routed in [
            "/v1/agents",
            "/v1/agents/voice-bot",
            "/v1/agents/voice-bot/logs",
        ] {
            assert!(routes.has(routed), "{routed}");
        }
        for unrouted in [
            "/v1/agents/",
            "//v1/agents",
            "/v1//agents",
            "/v1/agents//logs",
            "/v1",
            "/",
            "/2015-03-31/functions/create-agent/invocations",
        ] {
            assert!(!routes.has(unrouted), "{unrouted}");
        }
    }

    #[test]
    fn an_unrouted_path_gets_the_templates_not_found() {
        let kind = ResponseType::MissingAuthenticationToken;
        let response = GatewayResponse::from_template(&template(), kind).unwrap();
        assert_eq!(response.status, StatusCode::NOT_FOUND);
        let body: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
        assert_eq!(body["code"], "NOT_FOUND");
        assert!(
            response
                .headers
                .iter()
                .any(|(name, value)| name == "content-type" && value == "application/json")
        );
    }

    #[test]
    fn every_response_the_gateway_gives_is_a_literal_of_the_template() {
        for kind in [
            ResponseType::MissingAuthenticationToken,
            ResponseType::RequestTooLarge,
            ResponseType::IntegrationFailure,
            ResponseType::IntegrationTimeout,
        ] {
            GatewayResponse::from_template(&template(), kind).unwrap();
        }
    }
}
