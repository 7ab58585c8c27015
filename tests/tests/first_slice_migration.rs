//! Upgrading a store the first slice wrote (docs/operations.md, Upgrading): its items, written here as that
//! version wrote them, are unreadable by this version until `migrate-first-slice` moves them to
//! this layout; then the agent reads, updates and shows its log lines as if created here, and a
//! second run changes nothing. On DynamoDB Local.

use integration_tests::{TestStore, agent_request, parts};
use serde_json::{Value, json};
use shared::agent::{AgentConfig, AgentStore};
use shared::catalog::{noise_filter_named, profile_named};
use shared::manifest::{Manifest, Replicas};
use shared::secrets::SetType;
use shared::store::dynamodb::first_slice::{first_slice_deployment_sk, first_slice_log_partition};

const DEPLOYMENT_ID: &str = "6f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
const SERVICE_ID: &str = "0b5f8e0e-6d8c-4a4e-9b7e-3f1c2d4e5a6b";

fn config() -> AgentConfig {
    AgentConfig {
        image: "ghcr.io/acme/legacy-bot:1.0".into(),
        node_type: "arm".into(),
        image_pull_secret_set: Some("pull".into()),
        secret_set: Some("env".into()),
        auto_scaling: Replicas {
            min_replicas: 1,
            max_replicas: 5,
        },
        enable_noise: true,
        noise_filter: noise_filter_named("tel"),
        profile: profile_named("agent-2x").unwrap(),
        enable_managed_keys: false,
        max_session_duration: shared::agent::config::DEFAULT_MAX_SESSION_DURATION,
    }
}

async fn put(store: &TestStore, table: &str, item: Value) {
    store
        .client
        .put_item()
        .table_name(table)
        .set_item(Some(serde_dynamo::to_item(item).unwrap()))
        .send()
        .await
        .unwrap();
}

/// An agent, its deployment and its lines, as the first slice wrote them.
async fn first_slice_agent(store: &TestStore, namespace: &str, name: &str, manifest: &Manifest) {
    let (deployment_id, service_id) = if name == "legacy-bot" {
        (DEPLOYMENT_ID.to_owned(), SERVICE_ID.to_owned())
    } else {
        (
            uuid::Uuid::new_v4().to_string(),
            uuid::Uuid::new_v4().to_string(),
        )
    };
    let at = "2026-11-20T10:00:00.000Z";
    put(
        store,
        &store.agents_table,
        json!({
            "pk": format!("NS#{namespace}"), "sk": format!("AGENT#{name}"),
            "accountId": "acme", "namespace": namespace, "name": name, "serviceId": service_id,
            "ready": false, "createdAt": at, "updatedAt": at,
            "activeDeploymentId": deployment_id, "activeDeploymentReady": false,
            "autoScaling": {"minReplicas": 1, "maxReplicas": 5}, "activeSessionCount": 0,
            "agentProfile": "agent-2x", "noiseViva": {"audioFilter": "tel"}
        }),
    )
    .await;
    put(
        store,
        &store.agents_table,
        json!({
            "pk": format!("NS#{namespace}"),
            "sk": first_slice_deployment_sk(name, &deployment_id),
            "agentName": name, "id": deployment_id, "serviceId": service_id,
            "manifest": manifest, "createdAt": at, "updatedAt": at
        }),
    )
    .await;
    let partition = first_slice_log_partition(namespace, name);
    let now = time::OffsetDateTime::now_utc().unix_timestamp() as u64;
    for (i, session) in [None, Some("sess-1"), Some("sess-1")]
        .into_iter()
        .enumerate()
    {
        let seconds = now - 3_600 + i as u64;
        let mut line = json!({
            "pk": partition, "sk": format!("{:020}#{i:056}", seconds * 1_000_000_000),
            "dpk": format!("{partition}#{deployment_id}"),
            "log": format!("legacy line {i}"), "deploymentId": deployment_id,
            "expiresAt": seconds + 30 * 86_400
        });
        if let Some(session) = session {
            line["spk"] = json!(format!("{partition}#{session}"));
            line["sessionId"] = json!(session);
        }
        put(store, &store.logs_table, line).await;
    }
}

#[tokio::test]
async fn agents_of_the_first_slice_read_update_and_show_their_lines_once_migrated() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let namespace = caller.namespace.clone();
    let manifest = config().manifest(integration_tests::MODE, "legacy-bot", &namespace);
    first_slice_agent(&store, &namespace, "legacy-bot", &manifest).await;
    // Resources no profile of this version has: no configuration builds it.
    let mut odd = config().manifest(integration_tests::MODE, "odd-bot", &namespace);
    odd.spec.resources.cpu = "3".into();
    first_slice_agent(&store, &namespace, "odd-bot", &odd).await;

    assert!(
        store
            .store
            .get_agent(&namespace, "legacy-bot")
            .await
            .is_err(),
        "unreadable before the migration"
    );
    let report = store.store.migrate_first_slice().await.unwrap();
    assert_eq!(report.migrated, vec![format!("{namespace}/legacy-bot")]);
    assert_eq!(report.lines_copied, 3);
    assert_eq!(report.refused.len(), 1);
    assert_eq!(report.refused[0].0, format!("{namespace}/odd-bot"));

    let agent = store
        .store
        .get_agent(&namespace, "legacy-bot")
        .await
        .unwrap()
        .expect("the agent, migrated");
    assert_eq!(agent.version, 1);
    assert_eq!(agent.service_id, SERVICE_ID);
    assert_eq!(agent.active.deployment.id, DEPLOYMENT_ID);
    assert_eq!(agent.active.deployment.manifest, manifest);
    assert_eq!(agent.active.config, config());
    let old_deployment = store
        .client
        .get_item()
        .table_name(&store.agents_table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("NS#{namespace}")),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S(first_slice_deployment_sk(
                "legacy-bot",
                DEPLOYMENT_ID,
            )),
        )
        .send()
        .await
        .unwrap();
    assert!(
        old_deployment.item.is_none(),
        "the old deployment item is gone"
    );

    // Its lines, through the logs handler, with every filter they can be asked by.
    let settings = integration_tests::LOGS_SETTINGS;
    let (status, body) =
        integration_tests::read_logs(&store, &key, settings, "legacy-bot", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["total"], json!({"value": 3, "relation": "eq"}));
    let texts: Vec<&str> = body["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["log"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["legacy line 2", "legacy line 1", "legacy line 0"]);
    let (_, by_session) = integration_tests::read_logs(
        &store,
        &key,
        settings,
        "legacy-bot",
        &[
            ("sessionId", "sess-1".into()),
            ("deploymentId", DEPLOYMENT_ID.into()),
        ],
    )
    .await;
    assert_eq!(by_session["total"], json!({"value": 2, "relation": "eq"}));

    // Again: nothing new is written.
    let (agents_items, log_items) = (
        store.item_count(&store.agents_table).await,
        store.item_count(&store.logs_table).await,
    );
    let again = store.store.migrate_first_slice().await.unwrap();
    assert!(again.migrated.is_empty());
    assert_eq!(again.lines_copied, 0);
    assert_eq!(again.refused.len(), 1, "the odd one, still as it was");
    assert_eq!(store.item_count(&store.agents_table).await, agents_items);
    assert_eq!(store.item_count(&store.logs_table).await, log_items);

    // And it lives on: an update makes a new deployment, once the set its configuration names
    // exists (a deployment naming a missing set would fail at start, so none is made).
    let refused = agent_request(
        "POST",
        &key,
        "legacy-bot",
        Some(&json!({"image": "ghcr.io/acme/legacy-bot:2.0"})),
    );
    let (status, body) = parts(
        update_agent::handle(&store.store, &store.store, integration_tests::MODE, refused).await,
    );
    assert_eq!(
        (status, body["field"].as_str()),
        (400, Some("secretSet")),
        "{body}"
    );
    store
        .make_sets(
            &namespace,
            &[("env", SetType::Secret), ("pull", SetType::ImagePullSecret)],
        )
        .await;
    let update = agent_request(
        "POST",
        &key,
        "legacy-bot",
        Some(&json!({"image": "ghcr.io/acme/legacy-bot:2.0"})),
    );
    let (status, body) = parts(
        update_agent::handle(&store.store, &store.store, integration_tests::MODE, update).await,
    );
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["activeDeploymentId"], DEPLOYMENT_ID);
}
