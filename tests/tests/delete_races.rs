//! A delete racing the agent's other writers, against DynamoDB Local through the real handlers
//! (contract section 6): the agent, its deployments and its idempotency records are gone, no
//! request racing the delete leaves one behind, no reader meets a half-deleted agent, and
//! nothing of the deleted agent (a record, an ETag) reaches the agent made again under its name.

use std::sync::Arc;

use integration_tests::{
    TestStore, agent_request, agent_with_deployments, call, create_named_agent, parts, report,
};
use serde_json::{Value, json};
use shared::agent::ReportOutcome;

const ROUNDS: usize = 5;
const UPDATES: usize = 10;

/// An update of `agent` with an `Idempotency-Key`, through the update handler.
async fn keyed_update(
    store: &TestStore,
    key: &shared::auth::ApiKey,
    agent: &str,
    idempotency: &str,
    body: &Value,
) -> lambda_http::Response<lambda_http::Body> {
    let mut request = agent_request("POST", key, agent, Some(body));
    request
        .headers_mut()
        .insert("idempotency-key", idempotency.parse().unwrap());
    update_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idempotent_updates_racing_a_delete_leave_no_record_and_replay_nothing_to_the_next_agent() {
    let store = Arc::new(TestStore::new().await);
    let (owner, key) = store.account_with_key("acme").await;
    for round in 0..ROUNDS {
        create_named_agent(&store, &key, "bot").await;
        // Half change nothing (the answer is recorded on its own), half deploy a new image.
        let bodies: Vec<Value> = (0..UPDATES)
            .map(|i| match i % 2 {
                0 => json!({"image": "ghcr.io/acme/agent:1.0"}),
                _ => json!({"image": format!("ghcr.io/acme/agent:{round}.{i}")}),
            })
            .collect();
        let updates: Vec<_> = bodies
            .iter()
            .enumerate()
            .map(|(i, body)| {
                let (store, key, body) = (store.clone(), key.clone(), body.clone());
                tokio::spawn(async move {
                    let response =
                        keyed_update(&store, &key, "bot", &format!("round-{round}-{i}"), &body)
                            .await;
                    parts(response).0
                })
            })
            .collect();
        let delete = {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move { call(&store, &key, "DELETE", "bot", None).await.0 })
        };
        assert_eq!(delete.await.unwrap(), 200, "round {round}");
        for update in updates {
            let status = update.await.unwrap();
            assert!(status == 200 || status == 404, "round {round}: {status}");
        }
        let left = store
            .client
            .scan()
            .table_name(&store.agents_table)
            .send()
            .await
            .unwrap();
        for item in left.items() {
            eprintln!(
                "LEFT {:?} {:?} {:?}",
                item.get("sk"),
                item.get("agentName"),
                item.get("version")
            );
        }
        assert_eq!(
            store.namespace_items(&owner.namespace).await,
            0,
            "round {round}: the agent, its deployments and its records are gone"
        );

        // The agent made again under the name: a key of the deleted agent is a new request.
        create_named_agent(&store, &key, "bot").await;
        for (i, body) in bodies.iter().enumerate() {
            let response =
                keyed_update(&store, &key, "bot", &format!("round-{round}-{i}"), body).await;
            assert_eq!(
                response.headers().get("idempotent-replayed"),
                None,
                "round {round}: the deleted agent's answer to key {i} was replayed"
            );
            assert_eq!(response.status(), 200);
        }
        assert_eq!(call(&store, &key, "DELETE", "bot", None).await.0, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reports_racing_a_delete_are_applied_or_find_no_agent_never_a_store_error() {
    let store = Arc::new(TestStore::new().await);
    let (owner, key) = store.account_with_key("acme").await;
    for round in 0..ROUNDS {
        // A ready deployment serving while a newer one rolls out: reports for both.
        let ids = agent_with_deployments(&store, &key, "bot", 1).await;
        let first = ids[0].clone();
        let detail = |deployment: &str, second: usize| {
            json!({"namespace": owner.namespace, "agent": "bot", "deploymentId": deployment,
                   "state": "ready", "readyReplicas": 1, "activeSessionCount": second % 3,
                   "observedAt": format!("2026-11-23T10:{round:02}:{second:02}Z")})
        };
        assert_eq!(
            report(&store, detail(&first, 0)).await,
            ReportOutcome::Applied
        );
        let (_, rolled) = integration_tests::update(
            &store,
            &key,
            "bot",
            &json!({"image": format!("ghcr.io/acme/agent:{round}.9")}),
        )
        .await;
        let second = rolled["activeDeploymentId"].as_str().unwrap().to_owned();
        let reports: Vec<_> = (1..=20)
            .map(|i| {
                let store = store.clone();
                let deployment = if i % 2 == 0 { &first } else { &second };
                let event = integration_tests::status_event(detail(deployment, i));
                tokio::spawn(async move { deployment_status::handle(&store.store, event).await })
            })
            .collect();
        let delete = {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move { call(&store, &key, "DELETE", "bot", None).await.0 })
        };
        assert_eq!(delete.await.unwrap(), 200);
        for task in reports {
            let outcome = task.await.unwrap();
            assert!(
                matches!(
                    outcome,
                    Ok(ReportOutcome::Applied
                        | ReportOutcome::Stale
                        | ReportOutcome::Superseded
                        | ReportOutcome::UnknownAgent
                        // A superseded deployment looked up after the delete took the history.
                        | ReportOutcome::UnknownDeployment)
                ),
                "round {round}: {outcome:?}"
            );
        }
        assert_eq!(store.namespace_items(&owner.namespace).await, 0);
    }
}

#[tokio::test]
async fn an_etag_read_before_a_delete_never_matches_the_agent_made_again() {
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    create_named_agent(&store, &key, "bot").await;
    let (_, headers, _) = call(&store, &key, "GET", "bot", None).await;
    let before_delete = headers["etag"].to_str().unwrap().to_owned();
    assert_eq!(call(&store, &key, "DELETE", "bot", None).await.0, 200);
    let remade = create_named_agent(&store, &key, "bot").await;

    let mut request = agent_request(
        "POST",
        &key,
        "bot",
        Some(&json!({"image": "ghcr.io/acme/agent:2.0"})),
    );
    request
        .headers_mut()
        .insert("if-match", before_delete.parse().unwrap());
    let (status, body) = parts(
        update_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await,
    );
    assert_eq!(status, 412, "{body}");
    assert_eq!(body["code"], "PRECONDITION_FAILED");
    let (_, headers, now) = call(&store, &key, "GET", "bot", None).await;
    assert_eq!(
        now["activeDeploymentId"], remade["activeDeploymentId"],
        "nothing written"
    );
    assert_ne!(headers["etag"].to_str().unwrap(), before_delete);
}
