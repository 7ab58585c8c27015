//! GET /v1/agents/{agentName}/sessions: the agent's sessions, newest first, filtered by status
//! (or the anchor CLI's `endState`), deployment and start time, a page at a time with a signed
//! cursor and a `total` (contract section 11). Other methods of the path get a 405 here.

use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use shared::ApiError;
use shared::agent::AgentStore;
use shared::auth::KeyStore;
use shared::cursor::CursorKey;
use shared::http::{Callers, Reply, allow};
use shared::session::SessionStore;
use shared::session::listing::{self, SessionList, SessionQuery};

pub async fn handle<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    cursor_key: &CursorKey,
    request: Request,
) -> Response<Body> {
    shared::http::respond(list_sessions(agents, sessions, keys, cursor_key, &request).await)
}

/// The list's answer: 200, the page as [`SessionList::view`] shows it.
struct Page(SessionList);

impl Reply for Page {
    fn into_response(self) -> Response<Body> {
        shared::http::json_response(StatusCode::OK, &self.0.view())
    }
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn list_sessions<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    cursor_key: &CursorKey,
    request: &Request,
) -> Result<Page, ApiError> {
    let (caller, name) = shared::http::agent_route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::GET,
        allow::SESSIONS,
    )
    .await?;
    let params = request.query_string_parameters_ref();
    let query = SessionQuery::from_params(
        params.into_iter().flat_map(|params| params.iter()),
        cursor_key,
        &caller.namespace,
        &name,
    )?;
    listing::list(agents, sessions, &caller, &name, &query, cursor_key)
        .await
        .map(Page)
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use super::*;
    use serde_json::Value;
    use shared::testing::fixture_request as event;

    const KEY: CursorKey = CursorKey::from_bytes([3; 32]);

    async fn call(request: Request) -> (StatusCode, Value) {
        let store = shared::testing::seeded_memory_store().await;
        let response = handle(&store, &store, &store, &KEY, request).await;
        let body = serde_json::from_slice(response.body().as_ref()).unwrap();
        (response.status(), body)
    }

    #[tokio::test]
    async fn the_seeded_session_is_listed_with_every_member_and_a_total() {
        let (status, body) = call(event("list-sessions.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let sessions = body["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1, "{body}");
        assert_eq!(
            sessions[0]["sessionId"],
            shared::testing::SESSION_FIXTURE_ID
        );
        assert_eq!(sessions[0]["endState"], "active");
        assert_eq!(sessions[0]["endedAt"], Value::Null);
        assert!(
            sessions[0].get("wsUrl").is_none(),
            "a list shows no connection"
        );
        assert_eq!(
            body["total"],
            serde_json::json!({"value": 1, "relation": "eq"})
        );
        assert!(body.get("nextCursor").is_none());
    }

    #[tokio::test]
    async fn a_bad_filter_is_400_naming_it_and_other_methods_405() {
        let (status, body) = call(event("list-sessions-bad-filter.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["field"], "endState");
        let (status, _) = call(event("list-sessions-wrong-method.json")).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }
}
