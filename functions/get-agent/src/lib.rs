//! GET /v1/agents/{agentName}: the agent, with the errors reported for its active deployment and
//! its ETag (contract section 6), and the same object again under `body`: the anchor's envelope
//! for this read, which its CLI reads (an answer without it is "no such agent" to the CLI).
//! Other methods of the path that no other function serves get a 405 here.

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::agent::{AgentRead, AgentStore};
use shared::auth::KeyStore;
use shared::http::{Callers, allow};

pub async fn handle<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    request: Request,
) -> Response<Body> {
    shared::http::respond(get_agent(agents, keys, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn get_agent<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    request: &Request,
) -> Result<AgentRead, ApiError> {
    let (caller, name) = shared::http::agent_route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::GET,
        allow::AGENT,
    )
    .await?;
    let agent = agents
        .get_agent(&caller.namespace, &name)
        .await?
        .ok_or_else(ApiError::no_agent)?;
    Ok(agent.read_view())
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::Value;
    use shared::testing::DEMO_DEPLOYMENT_ID;

    use shared::testing::fixture_request as event;

    use shared::testing::seeded_memory_store as seeded;

    #[tokio::test]
    async fn an_agent_is_answered_with_its_etag_and_errors() {
        let store = seeded().await;
        let response = handle(&store, &store, event("get-agent.json")).await;
        assert_eq!(response.status(), StatusCode::OK);
        let stored = store.agent("dev-local", "demo-agent").unwrap();
        assert_eq!(response.headers()["etag"], stored.etag().as_str());
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body["name"], "demo-agent");
        assert_eq!(body["activeDeploymentId"], DEMO_DEPLOYMENT_ID);
        assert_eq!(body["deployment"]["id"], DEMO_DEPLOYMENT_ID);
        assert_eq!(body["errors"], serde_json::json!([]));
        assert_eq!(
            body.as_object().unwrap().len(),
            12 + 7 + 1,
            "2.1's members, errors, the anchor's seven and body"
        );
    }

    #[tokio::test]
    async fn the_agent_is_also_under_body_as_the_anchors_cli_reads_it() {
        let store = seeded().await;
        let response = handle(&store, &store, event("get-agent.json")).await;
        let mut top: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        let body = top.as_object_mut().unwrap().remove("body").unwrap();
        assert_eq!(body, top, "body is the object itself, without body");
        let stored = store.agent("dev-local", "demo-agent").unwrap();
        assert_eq!(body, serde_json::to_value(stored.view()).unwrap());
        assert_eq!(body["available"], body["ready"]);
        assert_eq!(body["currentRevision"]["deploymentID"], DEMO_DEPLOYMENT_ID);
        assert_eq!(body["region"], shared::config::region());
    }

    #[tokio::test]
    async fn an_agent_the_account_does_not_have_is_404() {
        let store = seeded().await;
        let response = handle(&store, &store, event("get-agent-unknown.json")).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn a_public_key_through_the_gateway_is_403() {
        let store = seeded().await;
        let response = handle(&store, &store, event("get-agent-public-key.json")).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body["code"], "FORBIDDEN");
    }

    #[tokio::test]
    async fn another_method_of_the_path_is_405_naming_the_three() {
        let store = seeded().await;
        let response = handle(&store, &store, event("get-agent-wrong-method.json")).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()["allow"], "GET, POST, DELETE");
    }
}
