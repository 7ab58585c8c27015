//! POST /v1/agents/{agentName}: an update (contract section 6). The body takes the members of
//! create: a member given replaces the agent's value, one left out keeps it, `null` restores the
//! default. A new deployment when the resolved configuration differs from the active
//! deployment's, nothing written when it does not; 200 with the agent and its ETag either way.
//! `If-Match` makes it conditional (412); `Idempotency-Key` works as on create.
//!
//! PUT /v1/agents is the same operation for the agent the body's `serviceName` names: the
//! anchor CLI's update (`pipecat cloud deploy` of an existing agent, docs/anchor-cli.md).

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::agent::lifecycle::{self, Answer, Idempotent};
use shared::agent::{AgentStore, ConfigChanges};
use shared::auth::KeyStore;
use shared::http::{Callers, allow};
use shared::idempotency::{self, IdempotencyKey};
use shared::manifest::DeploymentMode;
use shared::validation::Member;

pub async fn handle<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    mode: DeploymentMode,
    request: Request,
) -> Response<Body> {
    shared::http::respond(update_agent(agents, keys, mode, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, agent, idempotent, conditional))]
async fn update_agent<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    mode: DeploymentMode,
    request: &Request,
) -> Result<Answer, ApiError> {
    let route = Route::of(request);
    let (method, allow) = match route {
        Route::Agent => (Method::POST, allow::AGENT),
        Route::Collection => (Method::PUT, allow::AGENTS),
    };
    let caller = shared::http::route(request, keys, Callers::KeyOrPerson, method, allow).await?;
    let span = tracing::Span::current();
    // On the agent's path, a name no agent can have is a 404 before the body is read.
    let path_name = match route {
        Route::Agent => Some(shared::http::agent_name(request).ok_or_else(ApiError::no_agent)?),
        Route::Collection => None,
    };
    if let Some(name) = &path_name {
        span.record("agent", name.as_str());
    }
    let key = IdempotencyKey::from_headers(request.headers())?;
    span.record("idempotent", key.is_some());
    let if_match = shared::http::if_match(request);
    span.record("conditional", if_match.is_some());

    let body = shared::http::request_json(request)?;
    let changes = ConfigChanges::from_json(body.clone())?;
    let name = match path_name {
        Some(name) => name,
        None => named_agent(&changes)?,
    };
    span.record("agent", name.as_str());
    // The fingerprint of POST /v1/agents/{name}'s: a retry of one by the other is a replay.
    let idempotent = key.map(|key| Idempotent {
        key_digest: key.digest(),
        fingerprint: idempotency::update_fingerprint(&name, &body),
    });
    lifecycle::update(
        agents,
        mode,
        &caller,
        &name,
        changes,
        if_match.as_ref(),
        idempotent.as_ref(),
    )
    .await
}

/// Which of the update's two paths a request came by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `/v1/agents/{agentName}`: POST.
    Agent,
    /// `/v1/agents`: PUT, the agent named by `serviceName`.
    Collection,
}

impl Route {
    /// The collection's path has no segment after `/v1/agents`.
    fn of(request: &Request) -> Self {
        match shared::http::path_parameter(request, "agentName", 2) {
            None => Route::Collection,
            Some(_) => Route::Agent,
        }
    }
}

/// The agent PUT /v1/agents updates: the one the body's `serviceName` names (the reader has
/// checked it is a name).
fn named_agent(changes: &ConfigChanges) -> Result<String, ApiError> {
    match &changes.service_name {
        Member::Given(name) => Ok(name.clone()),
        Member::Absent | Member::Null => Err(ApiError::bad_request(
            "serviceName",
            "serviceName is required: PUT /v1/agents updates the agent it names",
        )),
    }
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local, with concurrent updates.

    use super::*;
    use lambda_http::http::HeaderValue;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::store::memory::MemoryStore;

    use shared::testing::fixture_request as event;

    use shared::testing::seeded_memory_store as seeded;

    fn with_body(mut request: Request, body: Value) -> Request {
        *request.body_mut() = Body::Text(body.to_string());
        request
    }

    fn body_of(request: &Request) -> Value {
        serde_json::from_slice(request.body().as_ref()).unwrap()
    }

    async fn call(store: &MemoryStore, request: Request) -> (StatusCode, Value, Response<Body>) {
        let response = handle(store, store, DeploymentMode::Simulated, request).await;
        let body = serde_json::from_slice(response.body().as_ref()).unwrap();
        (response.status(), body, response)
    }

    #[tokio::test]
    async fn a_new_image_is_a_new_active_deployment() {
        let store = seeded().await;
        let before = store.agent("dev-local", "video-bot").unwrap();
        let seeded = store.deployment_count();
        let (status, body, response) = call(&store, event("update-agent.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let after = store.agent("dev-local", "video-bot").unwrap();
        assert_ne!(after.active.deployment.id, before.active.deployment.id);
        assert_eq!(
            body["activeDeploymentId"],
            after.active.deployment.id.as_str()
        );
        assert_eq!(
            body["deployment"]["manifest"]["spec"]["image"],
            "ghcr.io/acme/video-bot:2.0"
        );
        assert_eq!(body["activeDeploymentReady"], false);
        assert_eq!(response.headers()["etag"], after.etag().as_str());
        assert_eq!(
            store.deployment_count(),
            seeded + 1,
            "one new beside those seeded: history is kept"
        );
    }

    #[tokio::test]
    async fn the_same_configuration_again_writes_nothing() {
        let store = seeded().await;
        call(&store, event("update-agent.json")).await;
        let once = store.agent("dev-local", "video-bot").unwrap();
        let deployments = store.deployment_count();
        let (status, body, response) = call(&store, event("update-agent.json")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(store.agent("dev-local", "video-bot").unwrap(), once);
        assert_eq!(store.deployment_count(), deployments, "no deployment made");
        assert_eq!(
            body["activeDeploymentId"],
            once.active.deployment.id.as_str()
        );
        assert_eq!(response.headers()["etag"], once.etag().as_str());
    }

    #[tokio::test]
    async fn a_stale_if_match_is_412_and_a_current_one_applies() {
        let store = seeded().await;
        let (status, body, _) = call(&store, event("update-agent-stale-if-match.json")).await;
        assert_eq!(status, StatusCode::PRECONDITION_FAILED, "{body}");
        assert_eq!(body["code"], "PRECONDITION_FAILED");
        let current = store.agent("dev-local", "video-bot").unwrap();
        let mut request = event("update-agent-stale-if-match.json");
        request
            .headers_mut()
            .insert("if-match", HeaderValue::from_str(&current.etag()).unwrap());
        assert_eq!(call(&store, request).await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn renaming_is_400_and_an_unknown_agent_404() {
        let store = seeded().await;
        let (status, body, _) = call(&store, event("update-agent-rename.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["field"], "serviceName");
        let (status, _, _) = call(&store, event("update-agent-unknown.json")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn a_retry_with_the_same_key_replays_and_another_agent_with_it_is_422() {
        let store = seeded().await;
        let mut first = event("update-agent.json");
        first
            .headers_mut()
            .insert("idempotency-key", HeaderValue::from_static("deploy-42"));
        let (status, body, _) = call(&store, first).await;
        assert_eq!(status, StatusCode::OK);
        let mut again = event("update-agent.json");
        again
            .headers_mut()
            .insert("idempotency-key", HeaderValue::from_static("deploy-42"));
        let (status, replayed, response) = call(&store, again).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(replayed, body);
        assert_eq!(response.headers()["idempotent-replayed"], "true");

        let mut other = event("update-agent-stale-if-match.json");
        other.headers_mut().remove("if-match");
        other
            .headers_mut()
            .insert("idempotency-key", HeaderValue::from_static("deploy-42"));
        let (status, body, _) = call(
            &store,
            with_body(other, json!({"image": "ghcr.io/acme/x:3"})),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    }

    #[tokio::test]
    async fn put_on_the_collection_updates_the_agent_service_name_names_as_post_on_its_path() {
        let store = seeded().await;
        let before = store.agent("dev-local", "video-bot").unwrap();
        let seeded = store.deployment_count();
        let (status, body, response) = call(&store, event("update-agent-collection.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let after = store.agent("dev-local", "video-bot").unwrap();
        assert_ne!(after.active.deployment.id, before.active.deployment.id);
        assert_eq!(store.deployment_count(), seeded + 1, "one new deployment");
        assert_eq!(
            after.active.deployment.manifest.spec.image,
            "ghcr.io/acme/video-bot:2.0"
        );
        assert_eq!(response.headers()["etag"], after.etag().as_str());
        assert_eq!(body, serde_json::to_value(after.view()).unwrap());

        // The same body by POST on the agent's path is the same configuration: nothing new.
        let same = body_of(&event("update-agent-collection.json"));
        let (status, _, _) = call(&store, with_body(event("update-agent.json"), same)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(store.agent("dev-local", "video-bot").unwrap(), after);
        assert_eq!(store.deployment_count(), seeded + 1);
    }

    #[tokio::test]
    async fn put_on_the_collection_takes_if_match_and_idempotency_key_as_post_does() {
        let store = seeded().await;
        let mut stale = event("update-agent-collection.json");
        stale
            .headers_mut()
            .insert("if-match", HeaderValue::from_static("\"stale.1\""));
        let (status, body, _) = call(&store, stale).await;
        assert_eq!(status, StatusCode::PRECONDITION_FAILED, "{body}");

        // A key used by PUT, retried by POST on the agent's path with the same body: a replay.
        let mut first = event("update-agent-collection.json");
        first
            .headers_mut()
            .insert("idempotency-key", HeaderValue::from_static("deploy-7"));
        let (status, answer, _) = call(&store, first).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let same = body_of(&event("update-agent-collection.json"));
        let mut again = with_body(event("update-agent.json"), same);
        again
            .headers_mut()
            .insert("idempotency-key", HeaderValue::from_static("deploy-7"));
        let (status, replayed, response) = call(&store, again).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(replayed, answer);
        assert_eq!(response.headers()["idempotent-replayed"], "true");
    }

    #[tokio::test]
    async fn put_on_the_collection_without_service_name_is_400_and_for_no_agent_404() {
        let store = seeded().await;
        let before = store.agent("dev-local", "video-bot").unwrap();
        let (status, body, _) = call(&store, event("update-agent-collection-no-name.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["field"], "serviceName");
        assert_eq!(
            body["error"],
            "serviceName is required: PUT /v1/agents updates the agent it names"
        );
        let null_name = with_body(
            event("update-agent-collection.json"),
            json!({"serviceName": null, "image": "ghcr.io/acme/x:1"}),
        );
        assert_eq!(call(&store, null_name).await.1["field"], "serviceName");
        let bad_name = with_body(
            event("update-agent-collection.json"),
            json!({"serviceName": "Video-Bot"}),
        );
        assert_eq!(call(&store, bad_name).await.1["field"], "serviceName");
        assert_eq!(
            store.agent("dev-local", "video-bot").unwrap(),
            before,
            "nothing changed"
        );

        let absent = with_body(
            event("update-agent-collection.json"),
            json!({"serviceName": "no-such-agent", "image": "ghcr.io/acme/x:1"}),
        );
        let (status, body, _) = call(&store, absent).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }

    #[tokio::test]
    async fn post_on_the_collection_or_put_on_the_agent_is_405_with_the_paths_allow() {
        let store = seeded().await;
        let mut post = event("update-agent-collection.json");
        *post.method_mut() = Method::POST;
        let (status, _, response) = call(&store, post).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()["allow"], "GET, POST, PUT");
        let mut put = event("update-agent.json");
        *put.method_mut() = Method::PUT;
        let (status, _, response) = call(&store, put).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()["allow"], "GET, POST, DELETE");
    }
}
