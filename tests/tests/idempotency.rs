//! Idempotency-Key on POST /v1/agents against DynamoDB Local, through the real handler: a retry
//! replays the first answer without writing, another body is a 422, a record past its 24 hours
//! (which DynamoDB Local never deletes) no longer binds the key, and keys are per account.
//! The concurrent cases are in races.rs.

use integration_tests::{TestStore, bearer, direct_create, parts};
use lambda_http::{Body, Response};
use serde_json::{Value, json};
use shared::agent::AgentStore;
use shared::auth::ApiKey;
use shared::idempotency::IdempotencyRecord;

const KEY: &str = "5b0f2f0e-9d7c-4c1e-8b1a-1f6f2f8f9a10";

async fn create(store: &TestStore, key: &ApiKey, body: &Value) -> Response<Body> {
    let mut request = direct_create(Some(&bearer(key)), body);
    request
        .headers_mut()
        .insert("idempotency-key", KEY.parse().unwrap());
    create_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await
}

#[tokio::test]
async fn a_retry_replays_the_first_answer_without_writing() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    store
        .make_sets(
            &caller.namespace,
            &[("env", shared::secrets::SetType::Secret)],
        )
        .await;
    let items = store.namespace_items(&caller.namespace).await;
    let body = json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0", "secretSet": "env"});

    let first = create(&store, &key, &body).await;
    assert_eq!(first.status(), 201);
    assert!(!first.headers().contains_key("idempotent-replayed"));
    assert_eq!(store.namespace_items(&caller.namespace).await, items + 3);

    for _ in 0..3 {
        let replay = create(&store, &key, &body).await;
        assert_eq!(replay.status(), 201);
        assert_eq!(replay.headers()["idempotent-replayed"], "true");
        assert_eq!(replay.headers()["content-type"], "application/json");
        assert_eq!(replay.body().as_ref(), first.body().as_ref());
    }
    assert_eq!(
        store.namespace_items(&caller.namespace).await,
        items + 3,
        "agent, deployment, key record: nothing more"
    );
    let (_, answer) = parts(first);
    let stored = store
        .store
        .get_agent(&caller.namespace, "bot")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer["activeDeploymentId"],
        stored.active.deployment.id.as_str()
    );
}

#[tokio::test]
async fn the_same_key_with_another_body_is_422_and_writes_nothing() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let body = json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"});
    assert_eq!(create(&store, &key, &body).await.status(), 201);

    for other in [
        json!({"serviceName": "other-bot", "image": "ghcr.io/acme/agent:1.0"}),
        json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:2.0"}),
    ] {
        let (status, answer) = parts(create(&store, &key, &other).await);
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["code"], "IDEMPOTENCY_KEY_REUSED");
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("Idempotency-Key")
        );
    }
    assert_eq!(store.namespace_items(&caller.namespace).await, 3);
    assert!(
        store
            .store
            .get_agent(&caller.namespace, "other-bot")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_record_past_its_24_hours_no_longer_binds_the_key() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    // A record of this key written 25 hours ago, which TTL has not deleted yet.
    let old = integration_tests::agent_record(&caller, "old-bot");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let expired = IdempotencyRecord {
        key_digest: shared::idempotency::IdempotencyKey::from_headers(&{
            let mut headers = http::HeaderMap::new();
            headers.insert("idempotency-key", KEY.parse().unwrap());
            headers
        })
        .unwrap()
        .unwrap()
        .digest(),
        fingerprint: "of another body".into(),
        status: 201,
        body: "{}".into(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        expires_at: now - 3600,
        agent: "old-bot".into(),
    };
    store
        .store
        .create_agent(&old, Some(&expired))
        .await
        .unwrap();

    let body = json!({"serviceName": "new-bot", "image": "ghcr.io/acme/agent:1.0"});
    let first = create(&store, &key, &body).await;
    assert_eq!(
        first.status(),
        201,
        "a dead record is replaced, not replayed"
    );
    assert!(!first.headers().contains_key("idempotent-replayed"));
    let replay = create(&store, &key, &body).await;
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.body().as_ref(), first.body().as_ref());
    // Two agents, two deployments, one record (the new one replaced the dead one).
    assert_eq!(store.namespace_items(&caller.namespace).await, 5);
}

#[tokio::test]
async fn keys_belong_to_one_account() {
    let store = TestStore::new().await;
    let (alice, alice_key) = store.account_with_key("alice").await;
    let (bob, bob_key) = store.account_with_key("bob").await;
    let body = json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"});

    let for_alice = create(&store, &alice_key, &body).await;
    let for_bob = create(&store, &bob_key, &body).await;
    assert_eq!(for_alice.status(), 201);
    assert_eq!(for_bob.status(), 201);
    assert!(
        !for_bob.headers().contains_key("idempotent-replayed"),
        "bob never gets alice's answer"
    );
    let (_, alice_answer) = parts(for_alice);
    let (_, bob_answer) = parts(for_bob);
    assert_eq!(
        alice_answer["deployment"]["manifest"]["metadata"]["namespace"],
        alice.namespace.as_str()
    );
    assert_eq!(
        bob_answer["deployment"]["manifest"]["metadata"]["namespace"],
        bob.namespace.as_str()
    );
    assert_eq!(store.namespace_items(&alice.namespace).await, 3);
    assert_eq!(store.namespace_items(&bob.namespace).await, 3);
}

#[tokio::test]
async fn a_malformed_key_is_400_and_writes_nothing() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let mut request = direct_create(
        Some(&bearer(&key)),
        &json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"}),
    );
    request
        .headers_mut()
        .insert("idempotency-key", "x".repeat(256).parse().unwrap());
    let (status, answer) = parts(
        create_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await,
    );
    assert_eq!(status, 400);
    assert_eq!(answer["field"], "Idempotency-Key");
    assert_eq!(store.namespace_items(&caller.namespace).await, 0);
}
