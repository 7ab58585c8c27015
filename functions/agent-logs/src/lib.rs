//! GET /v1/agents/{agentName}/logs: an agent's log lines, filtered, ordered and paged, with a
//! total (contract section 4). The reading strategy and its cost bounds are in
//! `shared::logs::read`.

use lambda_http::http::Method;
use lambda_http::{Body, Request, RequestExt, Response};
use shared::ApiError;
use shared::agent::AgentStore;
use shared::auth::KeyStore;
use shared::cursor::CursorKey;
use shared::http::{Callers, Json, allow};
use shared::logs::{self, LogFilter, LogQuery, LogStore, LogsPage};

/// Settings read once at cold start.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub retention_days: u32,
    /// Signs and checks the cursors of this deployment.
    pub cursor_key: CursorKey,
}

pub async fn handle<A: AgentStore, L: LogStore, K: KeyStore>(
    agents: &A,
    logs: &L,
    keys: &K,
    settings: Settings,
    request: Request,
) -> Response<Body> {
    shared::http::respond(agent_logs(agents, logs, keys, settings, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn agent_logs<A: AgentStore, L: LogStore, K: KeyStore>(
    agents: &A,
    logs: &L,
    keys: &K,
    settings: Settings,
    request: &Request,
) -> Result<Json<LogsPage>, ApiError> {
    let (caller, name) = shared::http::agent_route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::GET,
        allow::AGENT_LOGS,
    )
    .await?;

    let params = request.query_string_parameters_ref();
    let query = LogQuery::from_params(params.into_iter().flat_map(|params| params.iter()))?;

    // Lines belong to the agent's service: an earlier agent of the same name had another.
    let agent = agents
        .get_agent(&caller.namespace, &name)
        .await?
        .ok_or_else(ApiError::no_agent)?;
    let filter = LogFilter::new(
        &agent.service_id,
        &query,
        time::OffsetDateTime::now_utc(),
        settings.retention_days,
    );
    let (page, cost) = logs::read(logs, &filter, &query, &settings.cursor_key).await?;
    tracing::info!(
        returned = page.logs.len(),
        page_lines_read = cost.page_lines_read,
        total_lines_read = cost.total_lines_read,
        "logs read"
    );
    Ok(Json(page))
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures (the dev account
    //! `dev-local` and its `demo-agent`). tests/ runs it against DynamoDB Local.

    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::Value;
    use shared::logs::LogLine;
    use shared::store::memory::MemoryStore;
    use shared::testing::{DEMO_DEPLOYMENT_ID, seed_fixture_agents};

    const SETTINGS: Settings = Settings {
        retention_days: 30,
        cursor_key: CursorKey::from_bytes([7; 32]),
    };

    use shared::testing::fixture_request as event;

    /// The demo agent with lines at the fixtures' times (2026-11-22T19:00:00Z and on).
    async fn demo_store() -> MemoryStore {
        let store = MemoryStore::default();
        let agents = seed_fixture_agents(&store).await.unwrap();
        let service_id = agents[0].service_id.clone();
        let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64;
        let lines: Vec<LogLine> = ["starting", "ERROR upstream timeout", "session ended"]
            .iter()
            .enumerate()
            .map(|(i, text)| LogLine {
                service_id: service_id.clone(),
                deployment_id: DEMO_DEPLOYMENT_ID.into(),
                session_id: Some("session-0001".into()),
                event_id: i.to_string(),
                timestamp_nanos: now - 60_000_000_000 + i as u64,
                text: (*text).into(),
            })
            .collect();
        store.put_lines(&lines, 30).await.unwrap();
        store
    }

    async fn call(store: &MemoryStore, request: Request) -> (StatusCode, Value) {
        let response = handle(store, store, store, SETTINGS, request).await;
        (
            response.status(),
            serde_json::from_slice(response.body().as_ref()).unwrap(),
        )
    }

    #[tokio::test]
    async fn logs_event_pages_in_ascending_order() {
        let store = demo_store().await;
        let (status, body) = call(&store, event("agent-logs.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["total"],
            serde_json::json!({"value": 3, "relation": "eq"})
        );
        assert_eq!(body["logs"][0]["log"], "starting");
        assert_eq!(body["logs"][0]["sessionId"], "session-0001");
    }

    #[tokio::test]
    async fn filtered_event_is_answered() {
        let store = demo_store().await;
        let (status, body) = call(&store, event("agent-logs-filtered.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // Its time range is the fixture's, in the past: nothing matches, and that is a 200.
        assert_eq!(body["total"]["relation"], "eq");
    }

    #[tokio::test]
    async fn milliseconds_event_is_400_with_a_hint() {
        let store = demo_store().await;
        let (status, body) = call(&store, event("agent-logs-milliseconds.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["field"], "startTime");
        assert!(body["error"].as_str().unwrap().contains("milliseconds"));
    }

    #[tokio::test]
    async fn unknown_agent_event_is_404() {
        let store = demo_store().await;
        let (status, body) = call(&store, event("agent-logs-unknown-agent.json")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(body["code"], "NOT_FOUND");
    }

    #[tokio::test]
    async fn without_a_key_it_is_401() {
        let store = demo_store().await;
        let mut request = event("agent-logs.json");
        request
            .extensions_mut()
            .remove::<lambda_http::request::RequestContext>();
        let (status, body) = call(&store, request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body["code"], "UNAUTHORIZED");
    }
}
