//! GET /v1/agents/{agentName}/sessions/{sessionId}: one session of the agent, with what the data
//! plane reported for connecting while it is active (contract section 11). Other methods of the
//! path that no other function serves get a 405 here.

use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::agent::AgentStore;
use shared::auth::KeyStore;
use shared::http::{Callers, Reply, allow};
use shared::session::{SessionRecord, SessionStore, SessionView, lifecycle};

pub async fn handle<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    request: Request,
) -> Response<Body> {
    shared::http::respond(get_session(agents, sessions, keys, &request).await)
}

/// The read's answer: 200, the session as [`SessionView::read`] shows it.
struct Read(SessionRecord);

impl Reply for Read {
    fn into_response(self) -> Response<Body> {
        shared::http::json_response(StatusCode::OK, &SessionView::read(&self.0))
    }
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn get_session<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    request: &Request,
) -> Result<Read, ApiError> {
    let (caller, name) = shared::http::agent_route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::GET,
        allow::SESSION,
    )
    .await?;
    let id = shared::http::session_id(request)?;
    lifecycle::find(agents, sessions, &caller, &name, &id)
        .await
        .map(Read)
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use super::*;
    use serde_json::Value;
    use shared::testing::fixture_request as event;

    async fn call(request: Request) -> (StatusCode, Value) {
        let store = shared::testing::seeded_memory_store().await;
        let response = handle(&store, &store, &store, request).await;
        let body = serde_json::from_slice(response.body().as_ref()).unwrap();
        (response.status(), body)
    }

    #[tokio::test]
    async fn a_seeded_session_reads_with_every_member_and_its_connection() {
        let (status, body) = call(event("get-session.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["sessionId"], shared::testing::SESSION_FIXTURE_ID);
        assert_eq!(body["status"], "started");
        assert_eq!(body["endState"], "active");
        assert_eq!(body["endedAt"], Value::Null);
        assert!(body["wsUrl"].is_string(), "{body}");
    }

    #[tokio::test]
    async fn an_unknown_session_is_404_and_other_methods_405() {
        let (status, body) = call(event("get-session-unknown.json")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(body["code"], "NOT_FOUND");
        let (status, body) = call(event("get-session-wrong-method.json")).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    }
}
