//! What a request's path and headers name beyond its body: the path's parameters, `If-Match`.

use lambda_http::Request;

use crate::ApiError;

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
