//! How a request enters a handler: its caller, whether the route takes them, then its method.

use http::Method;
use lambda_http::Request;

use super::caller::Callers;
use super::params::agent_name;
use crate::ApiError;
use crate::auth::{KeyStore, Principal};

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
fn require_method(request: &Request, method: Method, allow: &'static str) -> Result<(), ApiError> {
    if *request.method() == method {
        Ok(())
    } else {
        Err(ApiError::MethodNotAllowed { allow })
    }
}

/// What every handler checks first, in the order the contract answers: the caller's credential
/// (401), whether `callers` takes that caller (403), then the method (405); the caller's
/// namespace recorded on the current span as `namespace`.
pub async fn route<K: KeyStore>(
    request: &Request,
    keys: &K,
    callers: Callers,
    method: Method,
    allow: &'static str,
) -> Result<Principal, ApiError> {
    let caller = callers.admit(request, keys).await?;
    require_method(request, method, allow)?;
    tracing::Span::current().record("namespace", caller.namespace.as_str());
    Ok(caller)
}

/// [`route`] for `/v1/agents/{agentName}`, its sub-paths and `/v1/public/{agentName}/start`,
/// then the name (404 when no agent can have it), recorded on the current span as `agent`.
pub async fn agent_route<K: KeyStore>(
    request: &Request,
    keys: &K,
    callers: Callers,
    method: Method,
    allow: &'static str,
) -> Result<(Principal, String), ApiError> {
    let caller = route(request, keys, callers, method, allow).await?;
    let name = agent_name(request).ok_or_else(ApiError::no_agent)?;
    tracing::Span::current().record("agent", name.as_str());
    Ok((caller, name))
}
