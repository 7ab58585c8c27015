//! GET /v1/agents: the caller's agents by name, `limit` (1 to 100, default 100) at a time, with
//! `nextCursor` when more follow (contract section 6), signed as every route's cursors are. The
//! anchor CLI's `agent list` sends `include=git` (accepted: no agent has a GitHub binding here)
//! and `region` (this service's region lists every agent, another none).

use lambda_http::http::Method;
use lambda_http::{Body, Request, RequestExt, Response};
use shared::ApiError;
use shared::agent::AgentStore;
use shared::agent::listing::{self, AgentList, AgentListQuery};
use shared::auth::KeyStore;
use shared::cursor::CursorKey;
use shared::http::{Callers, Json, allow};

pub async fn handle<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    cursor_key: &CursorKey,
    request: Request,
) -> Response<Body> {
    shared::http::respond(list_agents(agents, keys, cursor_key, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace))]
async fn list_agents<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    cursor_key: &CursorKey,
    request: &Request,
) -> Result<Json<AgentList>, ApiError> {
    let caller = shared::http::route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::GET,
        allow::AGENTS,
    )
    .await?;
    let params = request.query_string_parameters_ref();
    let query = AgentListQuery::from_params(
        params.into_iter().flat_map(|params| params.iter()),
        cursor_key,
        &caller.namespace,
        &shared::config::region(),
    )?;
    let list = listing::list(agents, &caller.namespace, &query, cursor_key).await?;
    Ok(Json(list))
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::Value;
    use shared::store::memory::MemoryStore;
    use shared::testing::seed_fixture_agents;

    use shared::testing::fixture_request as event;

    const KEY: CursorKey = CursorKey::from_bytes([5; 32]);

    async fn call(store: &MemoryStore, request: Request) -> (StatusCode, Value) {
        let response = handle(store, store, &KEY, request).await;
        (
            response.status(),
            serde_json::from_slice(response.body().as_ref()).unwrap(),
        )
    }

    #[tokio::test]
    async fn agents_come_by_name_a_page_at_a_time() {
        let store = MemoryStore::default();
        seed_fixture_agents(&store).await.unwrap();
        let (status, body) = call(&store, event("list-agents.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let names: Vec<&str> = body["services"]
            .as_array()
            .unwrap()
            .iter()
            .map(|agent| agent["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["demo-agent", "old-bot"], "limit=2, by name");
        let first = &body["services"][0];
        let demo = store.agent("dev-local", "demo-agent").unwrap();
        assert_eq!(first["id"], demo.service_id.as_str());
        assert_eq!(
            first["activeDeploymentId"],
            demo.active.deployment.id.as_str()
        );
        assert_eq!(first["ready"], false);
        let cursor = body["nextCursor"].as_str().unwrap();

        let mut next = event("list-agents.json");
        next = next.with_query_string_parameters(std::collections::HashMap::from([(
            "cursor".to_owned(),
            cursor.to_owned(),
        )]));
        let (status, body) = call(&store, next).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["services"][0]["name"], "video-bot");
        assert!(body.get("nextCursor").is_none());
    }

    fn with_query(pairs: &[(&str, &str)]) -> Request {
        event("list-agents.json").with_query_string_parameters(
            pairs
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect::<std::collections::HashMap<_, _>>(),
        )
    }

    #[tokio::test]
    async fn the_anchors_cli_list_is_answered_with_each_agents_region() {
        let store = MemoryStore::default();
        seed_fixture_agents(&store).await.unwrap();
        let region = shared::config::region();
        for pairs in [
            vec![("include", "git")],
            vec![("include", "git"), ("region", region.as_str())],
        ] {
            let (status, body) = call(&store, with_query(&pairs)).await;
            assert_eq!(status, StatusCode::OK, "{pairs:?}: {body}");
            let services = body["services"].as_array().unwrap();
            assert_eq!(services.len(), 3, "{pairs:?}");
            for service in services {
                assert_eq!(service["region"], region.as_str());
                assert!(
                    service.get("git").is_none(),
                    "no agent has a GitHub binding"
                );
            }
        }
        let (status, body) = call(&store, with_query(&[("region", "ap-south-9")])).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            serde_json::json!({"services": []}),
            "no agent is there"
        );
    }

    #[tokio::test]
    async fn an_include_other_than_git_is_400_naming_it() {
        let store = MemoryStore::default();
        let (status, body) = call(&store, with_query(&[("include", "deployments")])).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["field"], "include");
        assert_eq!(body["error"], "include must be 'git', or be left out");
    }

    #[tokio::test]
    async fn a_bad_limit_is_400_naming_it() {
        let store = MemoryStore::default();
        let (status, body) = call(&store, event("list-agents-bad-limit.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["field"], "limit");
    }
}
