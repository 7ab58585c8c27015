//! GET /v1/agents/{agentName}/deployments: the agent's deployment history, newest first,
//! `limit` (1 to 100, default 100) at a time with a signed `nextCursor` when more follow, as
//! the other lists page (the anchor CLI's `pipecat cloud agent deployments`). Other methods of
//! the path get a 405 here.

use lambda_http::http::Method;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use shared::ApiError;
use shared::agent::{AgentStore, Deployment};
use shared::auth::KeyStore;
use shared::cursor::{CursorFormat, CursorKey};
use shared::http::{Callers, Json};
use shared::paging::ListQuery;

/// The methods the path serves (a 405's `Allow`).
pub const ALLOW: &str = "GET";

/// The list's cursors: the id of a page's last deployment, bound to the account and the agent.
pub const CURSOR_FORMAT: CursorFormat = CursorFormat {
    scope: "deployments-cursor-v1",
    max_position_length: 36,
    is_position: shared::validation::is_uuid,
};

/// The answer: `{"deployments": [deployment object], "nextCursor"?}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentList {
    pub deployments: Vec<Deployment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

pub async fn handle<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    cursor_key: &CursorKey,
    request: Request,
) -> Response<Body> {
    shared::http::respond(list_deployments(agents, keys, cursor_key, &request).await)
}

/// What a cursor is bound to: the account and the agent whose history it pages.
fn fingerprint(namespace: &str, agent_name: &str) -> String {
    format!("{namespace}\0{agent_name}")
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn list_deployments<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    cursor_key: &CursorKey,
    request: &Request,
) -> Result<Json<DeploymentList>, ApiError> {
    let (caller, name) =
        shared::http::agent_route(request, keys, Callers::KeyOrPerson, Method::GET, ALLOW).await?;
    let fingerprint = fingerprint(&caller.namespace, &name);
    let params = request.query_string_parameters_ref();
    let query = ListQuery::from_params(
        params.into_iter().flat_map(|params| params.iter()),
        cursor_key,
        &CURSOR_FORMAT,
        &fingerprint,
    )?;
    let agent = agents
        .get_agent(&caller.namespace, &name)
        .await?
        .ok_or_else(ApiError::no_agent)?;
    let page = agents
        .list_deployments(
            &caller.namespace,
            &agent.service_id,
            query.after.as_deref(),
            query.limit,
        )
        .await?;
    let next_cursor = page
        .deployments
        .last()
        .filter(|_| page.more)
        .map(|last| cursor_key.encode(&CURSOR_FORMAT, &fingerprint, &last.deployment.id));
    tracing::info!(
        listed = page.deployments.len(),
        more = page.more,
        "deployments listed"
    );
    Ok(Json(DeploymentList {
        deployments: page
            .deployments
            .into_iter()
            .map(|record| record.deployment)
            .collect(),
        next_cursor,
    }))
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use std::collections::HashMap;

    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::Value;
    use shared::agent::{AgentRecord, Change, WriteOutcome};
    use shared::store::memory::MemoryStore;
    use shared::testing::fixture_request as event;

    const KEY: CursorKey = CursorKey::from_bytes([6; 32]);

    async fn call(store: &MemoryStore, request: Request) -> (StatusCode, Value) {
        let response = handle(store, store, &KEY, request).await;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            assert_eq!(response.headers()["allow"], "GET");
        }
        let body = serde_json::from_slice(response.body().as_ref()).unwrap();
        (response.status(), body)
    }

    /// `video-bot` of the fixtures' account deployed twice more: its three deployments' ids,
    /// newest first.
    async fn redeployed(store: &MemoryStore) -> Vec<String> {
        let mut agent = store.agent("dev-local", "video-bot").unwrap();
        let mut ids = vec![agent.active.deployment.id.clone()];
        for image in ["ghcr.io/acme/demo-agent:2.0", "ghcr.io/acme/demo-agent:3.0"] {
            let mut config = agent.config().clone();
            config.image = image.to_owned();
            let next: AgentRecord = agent.deploy(
                config,
                shared::manifest::DeploymentMode::Simulated,
                "2026-11-26T14:00:00.000Z",
            );
            let change = Change::NewDeployment {
                replaced: agent.config(),
            };
            let written = store.write_agent(agent.version, &next, change, None).await;
            assert_eq!(written.unwrap(), WriteOutcome::Written);
            ids.push(next.active.deployment.id.clone());
            agent = next;
        }
        ids.reverse();
        ids
    }

    /// The fixture's request, of `agent` with `query`.
    fn request_of(agent: &str, query: &[(&str, &str)]) -> Request {
        event("list-deployments.json")
            .with_path_parameters(HashMap::from([("agentName".to_owned(), agent.to_owned())]))
            .with_query_string_parameters(
                query
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                    .collect::<HashMap<_, _>>(),
            )
    }

    fn ids(body: &Value) -> Vec<&str> {
        body["deployments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|deployment| deployment["id"].as_str().unwrap())
            .collect()
    }

    #[tokio::test]
    async fn the_agents_deployments_are_listed_as_deployment_objects() {
        let store = shared::testing::seeded_memory_store().await;
        let (status, body) = call(&store, event("list-deployments.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(ids(&body), [shared::testing::DEMO_DEPLOYMENT_ID]);
        let demo = store.agent("dev-local", "demo-agent").unwrap();
        assert_eq!(
            body["deployments"][0],
            serde_json::to_value(&demo.active.deployment).unwrap(),
            "the deployment object (id, manifest, serviceId, createdAt, updatedAt)"
        );
        assert_eq!(
            body["deployments"][0]["manifest"]["spec"]["image"],
            "ghcr.io/acme/demo-agent:1.0"
        );
        assert!(body.get("nextCursor").is_none(), "{body}");
    }

    #[tokio::test]
    async fn deployments_come_newest_first_a_page_at_a_time() {
        let store = shared::testing::seeded_memory_store().await;
        let newest_first = redeployed(&store).await;

        let (status, body) = call(&store, request_of("video-bot", &[])).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(ids(&body), newest_first, "newest first, 100 by default");
        assert_eq!(
            body["deployments"][0]["manifest"]["spec"]["image"],
            "ghcr.io/acme/demo-agent:3.0"
        );
        assert!(body.get("nextCursor").is_none());

        let (status, body) = call(&store, request_of("video-bot", &[("limit", "2")])).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(ids(&body), newest_first[..2]);
        let cursor = body["nextCursor"].as_str().unwrap().to_owned();
        let next = [("limit", "2"), ("cursor", cursor.as_str())];
        let (status, body) = call(&store, request_of("video-bot", &next)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(ids(&body), newest_first[2..]);
        assert!(body.get("nextCursor").is_none());

        // A cursor pages the agent it was made for only.
        let (status, body) = call(&store, request_of("demo-agent", &next)).await;
        assert_eq!(
            (status, &body["field"]),
            (StatusCode::BAD_REQUEST, &"cursor".into())
        );
    }

    #[tokio::test]
    async fn a_bad_limit_or_an_unknown_parameter_is_400_naming_it() {
        let store = shared::testing::seeded_memory_store().await;
        for (query, field) in [
            (("limit", "0"), "limit"),
            (("limit", "101"), "limit"),
            (("cursor", "forged"), "cursor"),
            (("page", "2"), "page"),
        ] {
            let (status, body) = call(&store, request_of("demo-agent", &[query])).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{query:?}: {body}");
            assert_eq!(body["field"], field, "{query:?}");
        }
        let (status, body) = call(&store, event("list-deployments-unknown-parameter.json")).await;
        assert_eq!(
            (status, &body["field"]),
            (StatusCode::BAD_REQUEST, &"page".into())
        );
    }

    #[tokio::test]
    async fn no_agent_is_404_and_other_methods_405() {
        let store = shared::testing::seeded_memory_store().await;
        let (status, body) = call(&store, event("list-deployments-unknown-agent.json")).await;
        assert_eq!(
            (status, &body["code"]),
            (StatusCode::NOT_FOUND, &"NOT_FOUND".into())
        );
        let (status, body) = call(&store, event("list-deployments-wrong-method.json")).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
        assert_eq!(body["code"], "METHOD_NOT_ALLOWED");
    }
}
