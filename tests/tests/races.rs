//! Concurrent creates against DynamoDB Local, through the real handler: one name in one account
//! is created exactly once, and different names all land.

use std::sync::Arc;

use integration_tests::{TestStore, bearer, direct_create, parts};
use serde_json::json;

const CALLERS: usize = 50;

/// Sends one create per body, all at once, and returns each (status, body) in order.
async fn create_concurrently(
    store: &Arc<TestStore>,
    auth: &str,
    bodies: Vec<serde_json::Value>,
) -> Vec<(u16, serde_json::Value)> {
    let tasks: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let store = store.clone();
            let auth = auth.to_owned();
            tokio::spawn(async move {
                let request = direct_create(Some(&auth), &body);
                parts(create_agent::handle(&store.store, &store.store, request).await)
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_creates_of_one_name_give_one_agent() {
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let bodies = (0..CALLERS)
        .map(|i| json!({"serviceName": "contested", "image": format!("ghcr.io/acme/agent:{i}")}))
        .collect();
    let mut statuses = Vec::new();
    for (status, body) in create_concurrently(&store, &bearer(&key), bodies).await {
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
    assert_eq!(
        store
            .store
            .count_namespace_items(&caller.namespace)
            .await
            .unwrap(),
        2
    );
    let agent = store
        .store
        .get_agent(&caller.namespace, "contested")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(agent.deployment.unwrap().id, agent.active_deployment_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_creates_of_different_names_all_land() {
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let bodies = (0..CALLERS)
        .map(|i| json!({"serviceName": format!("agent-{i}"), "image": "ghcr.io/acme/agent:1.0"}))
        .collect();
    for (status, body) in create_concurrently(&store, &bearer(&key), bodies).await {
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(
        store
            .store
            .count_namespace_items(&caller.namespace)
            .await
            .unwrap(),
        2 * CALLERS
    );
}
