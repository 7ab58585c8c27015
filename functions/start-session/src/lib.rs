//! POST /v1/public/{agentName}/start: a session of the agent, under a public or a private key
//! (contract section 11). Recorded and counted in one conditioned write (the cap is exact), then
//! answered once the data plane reports it started, or `starting` when the start's wait passes.
//! Other methods of the path get a 405 here.

use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::agent::AgentStore;
use shared::auth::KeyStore;
use shared::http::{Callers, Reply, allow};
use shared::session::lifecycle::{self, StartWait};
use shared::session::{SessionRecord, SessionStore, StartAnswer};

pub async fn handle<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    wait: StartWait,
    request: Request,
) -> Response<Body> {
    shared::http::respond(start_session(agents, sessions, keys, wait, &request).await)
}

/// The start's answer: 200, the session as [`StartAnswer`] shows it.
struct Started(SessionRecord);

impl Reply for Started {
    fn into_response(self) -> Response<Body> {
        shared::http::json_response(StatusCode::OK, &StartAnswer::from(&self.0))
    }
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn start_session<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    wait: StartWait,
    request: &Request,
) -> Result<Started, ApiError> {
    let (caller, name) = shared::http::agent_route(
        request,
        keys,
        Callers::AnyKey,
        Method::POST,
        allow::SESSION_START,
    )
    .await?;
    // Every member is optional, so no body at all is an empty one.
    let body = match request.body().as_ref().iter().all(u8::is_ascii_whitespace) {
        true => None,
        false => Some(shared::http::request_json(request)?),
    };
    let start = shared::session::start_request(body)?;
    let now = time::OffsetDateTime::now_utc();
    let session = lifecycle::start(agents, sessions, &caller, &name, &start, now).await?;
    lifecycle::reported(sessions, session, wait)
        .await
        .map(Started)
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use super::*;
    use serde_json::Value;
    use shared::testing::fixture_request as event;
    use std::time::Duration;

    const NO_WAIT: StartWait = StartWait(Duration::ZERO);

    async fn call(request: Request) -> (StatusCode, Value, Response<Body>) {
        let store = shared::testing::seeded_memory_store().await;
        let response = handle(&store, &store, &store, NO_WAIT, request).await;
        let body = serde_json::from_slice(response.body().as_ref()).unwrap();
        (response.status(), body, response)
    }

    #[tokio::test]
    async fn a_public_key_starts_a_session_of_a_ready_agent() {
        let (status, body, response) = call(event("start-session.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            response.headers()["content-type"],
            "application/json",
            "the anchor's SDK reads only a JSON answer"
        );
        assert_eq!(body["status"], "starting");
        assert!(uuid_v7(&body["sessionId"]), "{body}");
        assert!(body["deploymentId"].is_string(), "{body}");
    }

    #[tokio::test]
    async fn an_agent_with_nothing_ready_is_503_with_retry_after() {
        let (status, body, response) = call(event("start-session-not-ready.json")).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(body["code"], "AGENT_NOT_READY");
        assert!(body.get("status").is_none(), "the SDK breaks on a status");
        assert!(response.headers().contains_key("retry-after"));
    }

    #[tokio::test]
    async fn a_broken_rule_is_a_400_naming_its_member_and_starts_nothing() {
        let store = shared::testing::seeded_memory_store().await;
        let counted = || async {
            let owner = shared::testing::session_fixtures_owner();
            let agent = shared::testing::SESSION_FIXTURE_AGENT;
            let agent = store.get_agent(&owner.namespace, agent).await.unwrap();
            agent.unwrap().active_sessions
        };
        let before = counted().await;
        let request = event("start-session-invalid.json");
        let response = handle(&store, &store, &store, NO_WAIT, request).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body["field"], "transport", "{body}");
        assert_eq!(counted().await, before, "nothing counted");
    }

    fn uuid_v7(value: &Value) -> bool {
        value
            .as_str()
            .and_then(|text| text.parse::<uuid::Uuid>().ok())
            .is_some_and(|id| id.get_version_num() == 7)
    }
}
