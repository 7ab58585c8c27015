//! A restarted local data plane learns what should run from the agents table (devplane's
//! recovery): its stream resumes after the checkpoint, so the deployments requested before the
//! restart are read again from the agents, as the events that requested them.

use data_plane::events::{AgentRef, ControlEvent};
use data_plane::recovery;
use integration_tests::{TestStore, call, create_named_agent, report, update};
use serde_json::{Value, json};

/// What the data plane is asked at start, as (agent, serviceId, deploymentId, manifest).
async fn recovered(store: &TestStore) -> Vec<(AgentRef, String, String, Value)> {
    let events = recovery::what_should_run(&store.store)
        .await
        .expect("what should run, read");
    events
        .into_iter()
        .map(|event| match event {
            ControlEvent::DeploymentRequested {
                agent,
                service_id,
                deployment_id,
                manifest,
            } => (
                agent,
                service_id,
                deployment_id,
                serde_json::to_value(&manifest).unwrap(),
            ),
            other => panic!("not a requested deployment: {other:?}"),
        })
        .collect()
}

/// The requested deployment the API shows for an agent's body's `deployment`.
fn as_requested(
    namespace: &str,
    name: &str,
    deployment: &Value,
) -> (AgentRef, String, String, Value) {
    let agent = AgentRef {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    };
    let text = |field: &str| deployment[field].as_str().unwrap().to_owned();
    (
        agent,
        text("serviceId"),
        text("id"),
        deployment["manifest"].clone(),
    )
}

#[tokio::test]
async fn every_agents_active_deployment_in_every_namespace_is_requested_again() {
    let store = TestStore::new().await;
    let (alice, alice_key) = store.account_with_key("alice").await;
    let (bob, bob_key) = store.account_with_key("bob").await;
    let first = create_named_agent(&store, &alice_key, "voice-bot").await;
    let second = create_named_agent(&store, &bob_key, "support-bot").await;

    let mut found = recovered(&store).await;
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expected = vec![
        as_requested(&alice.namespace, "voice-bot", &first["deployment"]),
        as_requested(&bob.namespace, "support-bot", &second["deployment"]),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(found, expected);
}

#[tokio::test]
async fn an_agent_updated_while_its_new_deployment_is_not_ready_has_its_serving_deployment_requested_then_its_active_one()
 {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let ns = owner.namespace.as_str();
    let created = create_named_agent(&store, &key, "voice-bot").await;
    let first = created["deployment"]["id"].as_str().unwrap();
    let ready = json!({
        "namespace": ns, "agent": "voice-bot", "deploymentId": first, "state": "ready",
        "readyReplicas": 1, "activeSessionCount": 0, "observedAt": "2026-11-23T10:00:01Z",
    });
    report(&store, ready).await;
    let (status, updated) = update(
        &store,
        &key,
        "voice-bot",
        &json!({"image": "ghcr.io/acme/agent:2.0"}),
    )
    .await;
    assert_eq!(status, 200, "{updated}");

    assert_eq!(
        recovered(&store).await,
        vec![
            as_requested(ns, "voice-bot", &created["deployment"]),
            as_requested(ns, "voice-bot", &updated["deployment"]),
        ]
    );
}

#[tokio::test]
async fn a_deleted_agent_has_nothing_requested() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    create_named_agent(&store, &key, "voice-bot").await;
    let kept = create_named_agent(&store, &key, "support-bot").await;
    let (status, _, body) = call(&store, &key, "DELETE", "voice-bot", None).await;
    assert!((200..300).contains(&status), "{status}: {body}");

    assert_eq!(
        recovered(&store).await,
        vec![as_requested(
            &owner.namespace,
            "support-bot",
            &kept["deployment"]
        )]
    );
}
