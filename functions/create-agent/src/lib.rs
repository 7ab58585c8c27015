//! POST /v1/agents: validates the request, builds the manifest, writes the agent and its first
//! deployment in one transaction, and answers 201 with the agent and its ETag (contract section
//! 3). With an `Idempotency-Key`, a retry of the same body within 24 hours gets the first answer
//! again.

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::agent::lifecycle::{self, Answer, Idempotent};
use shared::agent::{AgentStore, ConfigChanges};
use shared::auth::KeyStore;
use shared::http::{Callers, allow};
use shared::idempotency::{self, IdempotencyKey};
use shared::manifest::DeploymentMode;

/// Handles one request; every outcome, including failures, is a response.
pub async fn handle<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    mode: DeploymentMode,
    request: Request,
) -> Response<Body> {
    shared::http::respond(create_agent(agents, keys, mode, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, agent, idempotent))]
async fn create_agent<A: AgentStore, K: KeyStore>(
    agents: &A,
    keys: &K,
    mode: DeploymentMode,
    request: &Request,
) -> Result<Answer, ApiError> {
    // Who is asking comes first: an unauthenticated caller learns nothing about the body rules.
    let caller = shared::http::route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::POST,
        allow::AGENTS,
    )
    .await?;
    let span = tracing::Span::current();
    let key = IdempotencyKey::from_headers(request.headers())?;
    span.record("idempotent", key.is_some());

    let body = shared::http::request_json(request)?;
    let idempotent = key.map(|key| Idempotent {
        key_digest: key.digest(),
        fingerprint: idempotency::fingerprint(&body),
    });
    let changes = ConfigChanges::from_json(body)?;
    if let Some(name) = changes.service_name.clone().given() {
        span.record("agent", name.as_str());
    }
    lifecycle::create(agents, mode, &caller, changes, idempotent.as_ref()).await
}

#[cfg(test)]
mod tests {
    //! Fast checks of the handler on the in-memory store, fed with the events/ fixtures.
    //! tests/ runs the same handler against DynamoDB Local.

    use super::*;
    use lambda_http::http::HeaderValue;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::auth::Principal;
    use shared::store::memory::MemoryStore;

    use shared::testing::fixture_request as event;

    /// The principal the fixtures' authorizer context names.
    fn fixture_caller() -> Principal {
        Principal {
            account_id: "acme".into(),
            namespace: "tiny-ferret-maroon-123".into(),
        }
    }

    /// The handler's answer, on the in-memory store, in the mode an unset variable gives.
    async fn answer(store: &MemoryStore, request: Request) -> Response<Body> {
        handle(store, store, DeploymentMode::Simulated, request).await
    }

    async fn call(store: &MemoryStore, request: Request) -> (StatusCode, Value) {
        let response = answer(store, request).await;
        let status = response.status();
        assert_eq!(response.headers()["content-type"], "application/json");
        (
            status,
            serde_json::from_slice(response.body().as_ref()).unwrap(),
        )
    }

    #[tokio::test]
    async fn valid_event_creates_the_agent() {
        let store = MemoryStore::default();
        let (status, body) = call(&store, event("create-agent.json")).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["name"], "my-agent");
        assert_eq!(
            body["deployment"]["manifest"]["metadata"]["namespace"],
            "tiny-ferret-maroon-123"
        );
        assert!(store.agent("tiny-ferret-maroon-123", "my-agent").is_some());
        assert_eq!(
            store.deployment_count(),
            1,
            "the first deployment is in the history"
        );
    }

    #[tokio::test]
    async fn a_created_agent_comes_with_its_etag() {
        let store = MemoryStore::default();
        let response = answer(&store, event("create-agent.json")).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let stored = store.agent("tiny-ferret-maroon-123", "my-agent").unwrap();
        assert_eq!(response.headers()["etag"], stored.etag().as_str());
    }

    #[tokio::test]
    async fn full_event_resolves_every_member() {
        let store = shared::testing::seeded_memory_store().await;
        let (status, body) = call(&store, event("create-agent-full.json")).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["agentProfile"], "agent-2x");
        assert_eq!(body["noiseViva"], json!({"audioFilter": "pro"}));
        assert_eq!(
            body["autoScaling"],
            json!({"minReplicas": 1, "maxReplicas": 5})
        );
        let spec = &body["deployment"]["manifest"]["spec"];
        assert_eq!(spec["resources"], json!({"cpu": "1", "memory": "2Gi"}));
        assert_eq!(spec["envFromSecretNames"], json!(["voice-bot-secrets"]));
        assert_eq!(spec["imagePullSecretNames"], json!(["ghcr-pull"]));
        assert_eq!(spec["integratedKeysProxy"], json!({"enabled": true}));
    }

    #[tokio::test]
    async fn invalid_event_is_400_naming_the_field_and_writes_nothing() {
        let store = MemoryStore::default();
        let (status, body) = call(&store, event("create-agent-invalid.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["code"], "GENERIC_BAD_REQUEST");
        assert_eq!(body["field"], "serviceName");
        assert_eq!(store.agent_count(), 0);
    }

    #[tokio::test]
    async fn a_set_the_account_does_not_hold_is_400_naming_the_member_and_writes_nothing() {
        let store = shared::testing::seeded_memory_store().await;
        let agents = store.agent_count();
        let (status, body) = call(&store, event("create-agent-unknown-set.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["field"], "secretSet");
        assert_eq!(store.agent_count(), agents);
    }

    #[tokio::test]
    async fn unknown_member_event_is_400_naming_it() {
        let store = MemoryStore::default();
        let (status, body) = call(&store, event("create-agent-unknown-member.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["field"], "enableNoize");
        assert_eq!(store.agent_count(), 0);
    }

    #[tokio::test]
    async fn a_member_given_twice_is_400_naming_it_and_writes_nothing() {
        let store = MemoryStore::default();
        let (status, body) = call(&store, event("create-agent-duplicate-member.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["field"], "serviceName");
        assert_eq!(store.agent_count(), 0);
    }

    #[tokio::test]
    async fn two_idempotency_keys_through_the_gateway_are_400_and_write_nothing() {
        let store = MemoryStore::default();
        let (status, body) =
            call(&store, event("create-agent-repeated-idempotency-key.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["field"], "Idempotency-Key");
        assert_eq!(store.agent_count(), 0);
        assert_eq!(store.idempotency_record_count(), 0);
    }

    #[tokio::test]
    async fn no_key_event_is_401_with_the_challenge() {
        let store = MemoryStore::default();
        let response = answer(&store, event("create-agent-no-key.json")).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(
            body,
            json!({"error": "Unauthorized", "code": "UNAUTHORIZED"})
        );
        assert_eq!(store.agent_count(), 0);
    }

    #[tokio::test]
    async fn form_content_type_is_415_saying_what_to_send() {
        let store = MemoryStore::default();
        let (status, body) = call(&store, event("create-agent-form-content-type.json")).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(body["code"], "UNSUPPORTED_MEDIA_TYPE");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("Content-Type: application/json")
        );
    }

    fn with_body(mut request: Request, body: Value) -> Request {
        *request.body_mut() = Body::Text(body.to_string());
        request
    }

    #[tokio::test]
    async fn a_retry_with_the_same_key_and_body_replays_the_first_answer() {
        let store = MemoryStore::default();
        let first = answer(&store, event("create-agent-idempotent.json")).await;
        assert_eq!(first.status(), StatusCode::CREATED);
        assert!(first.headers().get(idempotency::REPLAYED_HEADER).is_none());

        // The same members in another order and spacing are the same body.
        let again = with_body(
            event("create-agent-idempotent.json"),
            json!({"image": "ghcr.io/acme/agent:1.0", "serviceName": "retry-bot"}),
        );
        let replay = answer(&store, again).await;
        assert_eq!(replay.status(), StatusCode::CREATED);
        assert_eq!(replay.headers()[idempotency::REPLAYED_HEADER], "true");
        assert_eq!(
            replay.body().as_ref(),
            first.body().as_ref(),
            "byte for byte"
        );
        assert_eq!(store.agent_count(), 1);
        assert_eq!(store.idempotency_record_count(), 1);
    }

    #[tokio::test]
    async fn the_same_key_with_another_body_is_422_and_writes_nothing() {
        let store = MemoryStore::default();
        assert_eq!(
            call(&store, event("create-agent-idempotent.json")).await.0,
            StatusCode::CREATED
        );
        let other = with_body(
            event("create-agent-idempotent.json"),
            json!({"serviceName": "another-bot", "image": "ghcr.io/acme/agent:1.0"}),
        );
        let (status, body) = call(&store, other).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["code"], "IDEMPOTENCY_KEY_REUSED");
        assert_eq!(store.agent_count(), 1);
        assert!(
            store
                .agent(&fixture_caller().namespace, "another-bot")
                .is_none()
        );
    }

    #[tokio::test]
    async fn without_a_key_a_retry_is_a_409_and_a_malformed_key_a_400() {
        let store = MemoryStore::default();
        assert_eq!(
            call(&store, event("create-agent.json")).await.0,
            StatusCode::CREATED
        );
        assert_eq!(
            call(&store, event("create-agent.json")).await.0,
            StatusCode::CONFLICT
        );

        let mut malformed = event("create-agent-idempotent.json");
        malformed
            .headers_mut()
            .insert("idempotency-key", HeaderValue::from_static("two words"));
        let (status, body) = call(&store, malformed).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["field"], "Idempotency-Key");
        assert_eq!(store.agent_count(), 1);
    }

    #[tokio::test]
    async fn a_body_that_is_not_utf8_is_400() {
        // API Gateway hands such a body over base64-encoded; lambda_http decodes it to bytes.
        let store = MemoryStore::default();
        let (status, body) = call(&store, event("create-agent-not-utf8.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["code"], "GENERIC_BAD_REQUEST");
        assert_eq!(store.agent_count(), 0, "nothing is written");
    }

    #[tokio::test]
    async fn another_method_is_405_with_allow() {
        let store = MemoryStore::default();
        let response = answer(&store, event("create-agent-wrong-method.json")).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()["allow"], "GET, POST, PUT");
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body["code"], "METHOD_NOT_ALLOWED");
    }

    #[tokio::test]
    async fn second_create_of_a_name_is_409() {
        let store = MemoryStore::default();
        assert_eq!(
            call(&store, event("create-agent.json")).await.0,
            StatusCode::CREATED
        );
        let (status, body) = call(&store, event("create-agent.json")).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(body["code"], "CONFLICT");
    }

    #[tokio::test]
    async fn without_authorizer_context_the_key_is_checked_here() {
        let store = MemoryStore::default();
        let key = store.issue_key(&fixture_caller());
        let mut request = event("create-agent-no-key.json");
        request.headers_mut().insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {}", key.expose())).unwrap(),
        );
        let (status, body) = call(&store, request).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");

        store.revoke(&key);
        let mut request = event("create-agent-no-key.json");
        request.headers_mut().insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {}", key.expose())).unwrap(),
        );
        assert_eq!(call(&store, request).await.0, StatusCode::UNAUTHORIZED);
    }
}
