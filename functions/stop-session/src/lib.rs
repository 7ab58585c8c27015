//! DELETE /v1/agents/{agentName}/sessions/{sessionId}: asks the data plane to stop the session
//! (`Session Stop Requested`, published from the write); its report ends it. Idempotent: an
//! ended session, or one already asked to stop, answers the same (contract section 11).

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use shared::ApiError;
use shared::agent::AgentStore;
use shared::auth::KeyStore;
use shared::http::{Callers, Json, allow};
use shared::session::{SessionStore, lifecycle};
use shared::timestamp::now_rfc3339_millis;

/// `{"status": "terminated", "sessionId"}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Stopped {
    status: &'static str,
    session_id: String,
}

pub async fn handle<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    request: Request,
) -> Response<Body> {
    shared::http::respond(stop_session(agents, sessions, keys, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn stop_session<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    request: &Request,
) -> Result<Json<Stopped>, ApiError> {
    let (caller, name) = shared::http::agent_route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::DELETE,
        allow::SESSION,
    )
    .await?;
    let id = shared::http::session_id(request)?;
    let now = now_rfc3339_millis();
    let session = lifecycle::stop(agents, sessions, &caller, &name, &id, &now).await?;
    Ok(Json(Stopped {
        status: "terminated",
        session_id: session.session_id,
    }))
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::testing::fixture_request as event;

    #[tokio::test]
    async fn a_stop_is_asked_for_and_a_second_answers_the_same() {
        let store = shared::testing::seeded_memory_store().await;
        for _ in 0..2 {
            let response = handle(&store, &store, &store, event("stop-session.json")).await;
            assert_eq!(response.status(), StatusCode::OK);
            let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
            assert_eq!(
                body,
                json!({"status": "terminated", "sessionId": shared::testing::SESSION_FIXTURE_ID})
            );
        }
    }
}
