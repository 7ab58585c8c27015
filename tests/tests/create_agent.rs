//! POST /v1/agents end to end: the real handler, the real adapter, DynamoDB Local.

use integration_tests::{TestStore, bearer, direct_create, parts};
use serde_json::json;
use shared::agent::AgentStore;
use shared::secrets::SetType;

async fn create(store: &TestStore, key: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let request = direct_create(Some(key), &body);
    parts(create_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await)
}

fn is_uuid(value: &serde_json::Value) -> bool {
    value
        .as_str()
        .is_some_and(|text| uuid::Uuid::parse_str(text).is_ok())
}

fn is_rfc3339_utc(value: &serde_json::Value) -> bool {
    value.as_str().is_some_and(|text| {
        text.ends_with('Z')
            && time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .is_ok()
    })
}

#[tokio::test]
async fn create_answers_201_with_every_member_and_stores_it() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    store
        .make_sets(
            &caller.namespace,
            &[
                ("ghcr-pull", SetType::ImagePullSecret),
                ("voice-bot-secrets", SetType::Secret),
            ],
        )
        .await;
    let items = store.item_count(&store.agents_table).await;
    let digest = "b".repeat(64);
    let image = format!("registry.example.com:5000/acme/voice-bot:2.3@sha256:{digest}");
    let (status, body) = create(
        &store,
        &bearer(&key),
        json!({
            "serviceName": "voice-bot",
            "image": image,
            "nodeType": "arm",
            "imagePullSecretSet": "ghcr-pull",
            "secretSet": "voice-bot-secrets",
            "autoScaling": {"minAgents": 2, "maxAgents": 7},
            "enableNoise": true,
            "noiseViva": {"audioFilter": "tel"},
            "agentProfile": "agent-1x",
            "enableManagedKeys": true,
            "maxSessionDuration": 1800
        }),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    let deployment = &body["deployment"];
    assert_eq!(body["name"], "voice-bot");
    assert_eq!(body["ready"], false);
    assert_eq!(body["activeDeploymentReady"], false);
    assert_eq!(body["activeSessionCount"], 0);
    assert!(is_rfc3339_utc(&body["createdAt"]), "{}", body["createdAt"]);
    assert_eq!(body["createdAt"], body["updatedAt"]);
    assert!(is_uuid(&body["activeDeploymentId"]));
    assert_eq!(body["activeDeploymentId"], deployment["id"]);
    assert_eq!(
        body["autoScaling"],
        json!({"minReplicas": 2, "maxReplicas": 7})
    );
    assert_eq!(body["agentProfile"], "agent-1x");
    assert_eq!(body["noiseViva"], json!({"audioFilter": "tel"}));
    assert!(is_uuid(&deployment["serviceId"]));
    assert_ne!(deployment["serviceId"], deployment["id"]);
    assert!(is_rfc3339_utc(&deployment["createdAt"]));
    assert_eq!(deployment["createdAt"], deployment["updatedAt"]);
    assert_eq!(
        deployment["manifest"],
        json!({
            "apiVersion": "agent-hosting/v1",
            "kind": "AgentService",
            "metadata": {"name": "voice-bot", "namespace": caller.namespace},
            "spec": {
                "dailyNodeType": "arm",
                "deploymentMode": integration_tests::MODE.as_str(),
                "clusterLocal": true,
                "image": image,
                "imagePullSecretNames": ["ghcr-pull"],
                "autoScaling": {"minReplicas": 2, "maxReplicas": 7},
                "envFromSecretNames": ["voice-bot-secrets"],
                "noiseModels": {"enabled": true},
                "noiseViva": {
                    "audioFilters": true,
                    "version": "20251010",
                    "modelVars": {"NOISE_VIVA_MODEL_PATH": "audio_filters/noise-viva-tel-v2.kef"}
                },
                "integratedKeysProxy": {"enabled": true},
                "resources": {"cpu": "500m", "memory": "1Gi"},
                "maxSessionDurationSeconds": 1800
            }
        })
    );
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(
        keys.len(),
        11,
        "exactly the members of agent-hosting-api 2.1: {keys:?}"
    );

    // What was stored is what was answered.
    let stored = store
        .store
        .get_agent(&caller.namespace, "voice-bot")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(serde_json::to_value(stored.created_view()).unwrap(), body);
    assert_eq!(
        store.item_count(&store.agents_table).await,
        items + 2,
        "one agent, one deployment"
    );
}

#[tokio::test]
async fn minimal_create_gets_the_contract_defaults() {
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    let (status, body) = create(
        &store,
        &bearer(&key),
        json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:1.0"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let spec = &body["deployment"]["manifest"]["spec"];
    assert_eq!(
        body["autoScaling"],
        json!({"minReplicas": 0, "maxReplicas": 50})
    );
    assert_eq!(body["agentProfile"], "agent-1x");
    assert_eq!(body["noiseViva"], serde_json::Value::Null);
    assert_eq!(spec["dailyNodeType"], "arm");
    assert_eq!(spec["envFromSecretNames"], json!([]));
    assert_eq!(spec["imagePullSecretNames"], json!([]));
    assert_eq!(spec["noiseModels"], json!({"enabled": false}));
    assert_eq!(
        spec["noiseViva"],
        json!({"audioFilters": false, "version": "20251010", "modelVars": {}})
    );
    assert_eq!(spec["integratedKeysProxy"], json!({"enabled": false}));
    assert_eq!(spec["resources"], json!({"cpu": "500m", "memory": "1Gi"}));
}

#[tokio::test]
async fn a_second_create_of_the_name_is_409_and_changes_nothing() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let first = json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:1.0"});
    let (status, created) = create(&store, &bearer(&key), first).await;
    assert_eq!(status, 201);

    let second = json!({"serviceName": "my-agent", "image": "ghcr.io/acme/other:2.0", "agentProfile": "agent-2x"});
    let (status, body) = create(&store, &bearer(&key), second).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "CONFLICT");
    assert!(body["error"].as_str().unwrap().contains("my-agent"));

    let stored = store
        .store
        .get_agent(&caller.namespace, "my-agent")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::to_value(stored.created_view()).unwrap(),
        created,
        "the first agent is untouched"
    );
    assert_eq!(
        store.item_count(&store.agents_table).await,
        2,
        "no second deployment, no orphan"
    );
}

#[tokio::test]
async fn the_same_name_in_two_accounts_is_two_agents_in_two_namespaces() {
    let store = TestStore::new().await;
    let (alice, alice_key) = store.account_with_key("alice").await;
    let (bob, bob_key) = store.account_with_key("bob").await;
    assert_ne!(alice.namespace, bob.namespace);
    let body = json!({"serviceName": "support-bot", "image": "ghcr.io/acme/agent:1.0"});

    let (status, for_alice) = create(&store, &bearer(&alice_key), body.clone()).await;
    assert_eq!(status, 201);
    let (status, for_bob) = create(&store, &bearer(&bob_key), body).await;
    assert_eq!(status, 201);
    assert_eq!(
        for_alice["deployment"]["manifest"]["metadata"]["namespace"],
        alice.namespace.as_str()
    );
    assert_eq!(
        for_bob["deployment"]["manifest"]["metadata"]["namespace"],
        bob.namespace.as_str()
    );
    assert_ne!(
        for_alice["activeDeploymentId"],
        for_bob["activeDeploymentId"]
    );
}

#[tokio::test]
async fn rejected_creates_leave_no_item_behind() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let cases = [
        (
            json!({"serviceName": "Bad_Name", "image": "ghcr.io/acme/agent:1.0"}),
            "serviceName",
        ),
        (
            json!({"serviceName": "ok", "image": "ghcr.io/ACME/agent"}),
            "image",
        ),
        (
            json!({"serviceName": "ok", "image": "a", "autoScaling": {"minAgents": 9, "maxAgents": 3}}),
            "autoScaling.maxAgents",
        ),
        (
            json!({"serviceName": "ok", "image": "a", "noiseViva": {"audioFilter": "studio"}}),
            "noiseViva.audioFilter",
        ),
        (
            json!({"serviceName": "ok", "image": "a", "enableNoize": true}),
            "enableNoize",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = create(&store, &bearer(&key), body.clone()).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(answer["code"], "GENERIC_BAD_REQUEST");
        assert_eq!(answer["field"], field, "{body}");
    }
    assert_eq!(store.namespace_items(&caller.namespace).await, 0);
    assert_eq!(store.item_count(&store.agents_table).await, 0);
}

#[tokio::test]
async fn missing_malformed_unknown_and_revoked_keys_are_401() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let body = json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:1.0"});
    let mistyped = {
        let mut text = key.expose().to_owned();
        let last = text.pop().unwrap();
        text.push(if last == 'a' { 'b' } else { 'a' });
        text
    };
    let unknown = shared::auth::ApiKey::generate();
    let revoked = {
        let (revoked, record) =
            shared::account::issue_key(&store.store, "acme", shared::auth::KeyKind::Private)
                .await
                .unwrap();
        shared::account::revoke_key(&store.store, "acme", &record.key_id)
            .await
            .unwrap();
        revoked
    };
    let cases: Vec<Option<String>> = vec![
        None,
        Some(String::new()),
        Some(key.expose().to_owned()),
        Some(format!("Basic {}", key.expose())),
        Some(format!("Bearer {mistyped}")),
        Some(bearer(&unknown)),
        Some(bearer(&revoked)),
    ];
    for authorization in cases {
        let request = direct_create(authorization.as_deref(), &body);
        let response =
            create_agent::handle(&store.store, &store.store, integration_tests::MODE, request)
                .await;
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let (status, answer) = parts(response);
        assert_eq!(status, 401, "{authorization:?}");
        assert_eq!(
            answer,
            json!({"error": "Unauthorized", "code": "UNAUTHORIZED"})
        );
    }
    assert_eq!(store.namespace_items(&caller.namespace).await, 0);

    // The good key still works after all that.
    let (status, _) = create(&store, &bearer(&key), body).await;
    assert_eq!(status, 201);
}

#[tokio::test]
async fn through_the_gateway_the_authorizer_context_names_the_caller() {
    let store = TestStore::new().await;
    // events/create-agent.json carries the context the authorizer gives account "acme".
    let request = integration_tests::event("create-agent.json");
    let (status, body) = parts(
        create_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await,
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["deployment"]["manifest"]["metadata"]["namespace"],
        "tiny-ferret-maroon-123"
    );
    assert!(
        store
            .store
            .get_agent("tiny-ferret-maroon-123", "my-agent")
            .await
            .unwrap()
            .is_some()
    );
}
