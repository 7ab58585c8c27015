//! DELETE /v1/agents/{agentName}: the agent, its deployments and its idempotency records; 200
//! `{"status": "OK"}` (contract section 6). Its log lines belong to its service, which nothing
//! reaches any more: they expire by retention (docs/logs.md). Its active sessions are ended
//! (`agentDeleted`, contract section 11) once it is gone: the data plane stops their containers
//! on `Agent Deleted`, and nothing could report them ended any more.

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::agent::{AgentStore, lifecycle};
use shared::auth::KeyStore;
use shared::error::DisplayErrorContext;
use shared::http::{Callers, Json, StatusOk, allow};
use shared::session::SessionStore;
use shared::session::lifecycle::{SessionRetention, end_sessions_of};

pub async fn handle<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    retention: SessionRetention,
    request: Request,
) -> Response<Body> {
    shared::http::respond(delete_agent(agents, sessions, keys, retention, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn delete_agent<A: AgentStore, S: SessionStore, K: KeyStore>(
    agents: &A,
    sessions: &S,
    keys: &K,
    retention: SessionRetention,
    request: &Request,
) -> Result<Json<StatusOk>, ApiError> {
    let (caller, name) = shared::http::agent_route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::DELETE,
        allow::AGENT,
    )
    .await?;
    let deleted = lifecycle::delete(agents, &caller, &name).await?;
    // The delete is done: a failure here leaves the sessions to the sweep, at their deadline.
    let now = time::OffsetDateTime::now_utc();
    if let Err(error) = end_sessions_of(sessions, &deleted, now, retention).await {
        tracing::warn!(error = %DisplayErrorContext(&error), "the deleted agent's sessions are left to the sweep");
    }
    Ok(shared::http::status_ok())
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::store::memory::MemoryStore;
    use shared::testing::seed_fixture_agents;

    use shared::testing::fixture_request as event;

    const KEPT: SessionRetention = SessionRetention(time::Duration::days(30));

    #[tokio::test]
    async fn an_agent_and_its_history_are_gone_and_a_second_delete_is_404() {
        let store = MemoryStore::default();
        seed_fixture_agents(&store).await.unwrap();
        let seeded = store.deployment_count();
        let response = handle(&store, &store, &store, KEPT, event("delete-agent.json")).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body, json!({"status": "OK"}));
        assert!(store.agent("dev-local", "old-bot").is_none());
        assert_eq!(
            store.deployment_count(),
            seeded - 1,
            "the other agents' deployments stay"
        );

        let again = handle(&store, &store, &store, KEPT, event("delete-agent.json")).await;
        assert_eq!(again.status(), StatusCode::NOT_FOUND);
    }
}
