//! Concurrent creates against DynamoDB Local, through the real handler: one name in one account
//! is created exactly once, and different names all land.

use std::sync::Arc;

use integration_tests::{TestStore, bearer, direct_create, parts};
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};
use shared::agent::AgentStore;

const CALLERS: usize = 50;

/// Sends every request to the create handler at once and returns the responses in order.
async fn create_concurrently(
    store: &Arc<TestStore>,
    requests: Vec<Request>,
) -> Vec<Response<Body>> {
    let tasks: Vec<_> = requests
        .into_iter()
        .map(|request| {
            let store = store.clone();
            tokio::spawn(
                async move { create_agent::handle(&store.store, &store.store, request).await },
            )
        })
        .collect();
    let mut responses = Vec::new();
    for task in tasks {
        responses.push(task.await.unwrap());
    }
    responses
}

/// One create request per body.
fn creates(auth: &str, bodies: impl IntoIterator<Item = Value>) -> Vec<Request> {
    bodies
        .into_iter()
        .map(|body| direct_create(Some(auth), &body))
        .collect()
}

/// One create request per body, all with the same Idempotency-Key.
fn creates_with_key(
    auth: &str,
    key: &str,
    bodies: impl IntoIterator<Item = Value>,
) -> Vec<Request> {
    let mut requests = creates(auth, bodies);
    for request in &mut requests {
        request
            .headers_mut()
            .insert("idempotency-key", key.parse().unwrap());
    }
    requests
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_creates_of_one_name_give_one_agent() {
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let bodies = (0..CALLERS)
        .map(|i| json!({"serviceName": "contested", "image": format!("ghcr.io/acme/agent:{i}")}));
    let mut statuses = Vec::new();
    for response in create_concurrently(&store, creates(&bearer(&key), bodies)).await {
        let (status, body) = parts(response);
        assert!(status == 201 || status == 409, "{status} {body}");
        statuses.push(status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), CALLERS - 1);
    // One agent item and one deployment item: no orphan deployment from a losing request.
    assert_eq!(store.namespace_items(&caller.namespace).await, 2);
    let agent = store
        .store
        .get_agent(&caller.namespace, "contested")
        .await
        .unwrap()
        .unwrap();
    let view = agent.view();
    assert_eq!(view.deployment.unwrap().id, view.active_deployment_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_creates_of_different_names_all_land() {
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let bodies = (0..CALLERS)
        .map(|i| json!({"serviceName": format!("agent-{i}"), "image": "ghcr.io/acme/agent:1.0"}));
    for response in create_concurrently(&store, creates(&bearer(&key), bodies)).await {
        let (status, body) = parts(response);
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(store.namespace_items(&caller.namespace).await, 2 * CALLERS);
}

/// Retries racing each other with one Idempotency-Key create once: one answer is the original,
/// the rest replay it byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_with_one_key_create_once() {
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let body = json!({"serviceName": "retried", "image": "ghcr.io/acme/agent:1.0"});
    let requests = creates_with_key(
        &bearer(&key),
        "3f2a7c51-retry",
        std::iter::repeat_n(body, CALLERS),
    );
    let responses = create_concurrently(&store, requests).await;
    let replayed = responses
        .iter()
        .filter(|response| response.headers().contains_key("idempotent-replayed"))
        .count();
    let first_body = responses[0].body().as_ref().to_vec();
    for response in responses {
        assert!(
            response.body().as_ref() == first_body.as_slice(),
            "every answer is the same agent"
        );
        let (status, body) = parts(response);
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(
        replayed,
        CALLERS - 1,
        "one original answer, the rest replays"
    );
    // The agent, its deployment and the key's record: nothing else.
    assert_eq!(store.namespace_items(&caller.namespace).await, 3);
}

/// Racing requests with one key but different bodies: one lands, the others are 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_different_bodies_with_one_key_land_once() {
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let bodies = (0..CALLERS)
        .map(|i| json!({"serviceName": format!("agent-{i}"), "image": "ghcr.io/acme/agent:1.0"}));
    let requests = creates_with_key(&bearer(&key), "one-key", bodies);
    let mut statuses = Vec::new();
    for response in create_concurrently(&store, requests).await {
        let (status, body) = parts(response);
        assert!(status == 201 || status == 422, "{status} {body}");
        statuses.push(status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(store.namespace_items(&caller.namespace).await, 3);
}
