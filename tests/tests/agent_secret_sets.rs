//! Agents naming secret sets, through the real handlers on DynamoDB Local (contract section 10):
//! a create or update whose `secretSet` or `imagePullSecretSet` names no set of that type in the
//! caller's account is 400 with `field` and changes nothing; a set an agent's active deployment
//! names is not deleted (409 naming the agent); `forceRedeploy` makes a new deployment of an
//! unchanged configuration.

use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use integration_tests::{TestStore, bearer, call, direct_create, parts, update};
use serde_json::{Value, json};
use shared::agent::{AgentStore, CreateOutcome};
use shared::auth::{ApiKey, Principal};
use shared::secrets::SetType;
use shared::store::dynamodb::items::namespace_pk;
use shared::store::dynamodb::secret_items::secret_set_sk;

async fn create(store: &TestStore, key: &ApiKey, body: Value) -> (u16, Value) {
    let request = direct_create(Some(&bearer(key)), &body);
    parts(create_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await)
}

/// DELETE /v1/secrets/{set} through its function.
async fn delete_set(store: &TestStore, key: &ApiKey, set: &str) -> (u16, Value) {
    use lambda_http::RequestExt;
    let request = http::Request::builder()
        .method(Method::DELETE)
        .uri(format!("https://api.example.com/v1/secrets/{set}"))
        .header("authorization", bearer(key))
        .body(lambda_http::Body::Empty)
        .unwrap()
        .with_path_parameters(std::collections::HashMap::from([(
            "setName".to_owned(),
            set.to_owned(),
        )]));
    parts(delete_secret_set::handle(&store.store, &store.store, request).await)
}

fn bot(sets: Value) -> Value {
    let mut body = json!({"serviceName": "voice-bot", "image": "ghcr.io/acme/voice-bot:1.0"});
    for (member, name) in sets.as_object().unwrap() {
        body[member] = name.clone();
    }
    body
}

#[tokio::test]
async fn a_create_naming_no_set_of_that_type_in_the_account_is_400_and_writes_nothing() {
    let store = TestStore::new().await;
    let (alice, alice_key) = store.account_with_key("alice").await;
    let (bob, _) = store.account_with_key("bob").await;
    store
        .make_sets(&alice.namespace, &[("env", SetType::Secret)])
        .await;
    store
        .make_sets(&bob.namespace, &[("bobs-env", SetType::Secret)])
        .await;
    let items = store.namespace_items(&alice.namespace).await;

    for (sets, field) in [
        (json!({"secretSet": "missing"}), "secretSet"),
        (json!({"imagePullSecretSet": "env"}), "imagePullSecretSet"),
        (json!({"secretSet": "bobs-env"}), "secretSet"),
        (
            json!({"secretSet": "env", "imagePullSecretSet": "env"}),
            "imagePullSecretSet",
        ),
    ] {
        let (status, body) = create(&store, &alice_key, bot(sets.clone())).await;
        assert_eq!(status, 400, "{sets}: {body}");
        assert_eq!(body["field"], field, "{sets}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(field),
            "the message names the member: {body}"
        );
    }
    assert_eq!(store.namespace_items(&alice.namespace).await, items);
    let (status, _, _) = call(&store, &alice_key, "GET", "voice-bot", None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_set_in_use_is_not_deleted_until_no_active_deployment_names_it() {
    let store = TestStore::new().await;
    let (alice, key) = store.account_with_key("alice").await;
    store
        .make_sets(
            &alice.namespace,
            &[
                ("env", SetType::Secret),
                ("env-2", SetType::Secret),
                ("pull", SetType::ImagePullSecret),
            ],
        )
        .await;
    let (status, created) = create(
        &store,
        &key,
        bot(json!({"secretSet": "env", "imagePullSecretSet": "pull"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        created["deployment"]["manifest"]["spec"]["envFromSecretNames"],
        json!(["env"]),
        "the manifest names the set, never a value"
    );

    let (status, refused) = delete_set(&store, &key, "env").await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("voice-bot"),
        "the answer names the agent: {refused}"
    );

    // An update naming a missing set is 400 and leaves the agent as it was.
    let (_, before, _) = call(&store, &key, "GET", "voice-bot", None).await;
    let (status, body) = update(&store, &key, "voice-bot", &json!({"secretSet": "nope"})).await;
    assert_eq!((status, body["field"].as_str()), (400, Some("secretSet")));
    let (_, after, _) = call(&store, &key, "GET", "voice-bot", None).await;
    assert_eq!(before.get("etag"), after.get("etag"));

    // Moved to another set: the first is free, the second is not.
    let (status, body) = update(&store, &key, "voice-bot", &json!({"secretSet": "env-2"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(delete_set(&store, &key, "env").await.0, 200);
    assert_eq!(delete_set(&store, &key, "env-2").await.0, 409);
    let (status, body) = update(&store, &key, "voice-bot", &json!({"secretSet": "env"})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (400, Some("secretSet")),
        "a deleted set cannot be named: {body}"
    );

    // Deleting the agent frees every set it named.
    let (status, _, _) = call(&store, &key, "DELETE", "voice-bot", None).await;
    assert_eq!(status, 200);
    assert_eq!(delete_set(&store, &key, "env-2").await.0, 200);
    assert_eq!(delete_set(&store, &key, "pull").await.0, 200);
}

#[tokio::test]
async fn force_redeploy_makes_a_new_deployment_of_an_unchanged_configuration() {
    let store = TestStore::new().await;
    let (alice, key) = store.account_with_key("alice").await;
    store
        .make_sets(&alice.namespace, &[("env", SetType::Secret)])
        .await;
    let (status, created) = create(
        &store,
        &key,
        bot(json!({"secretSet": "env", "forceRedeploy": true})),
    )
    .await;
    assert_eq!(status, 201, "a create accepts the member: {created}");
    let first = created["activeDeploymentId"].clone();

    let (status, same) = update(&store, &key, "voice-bot", &json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(same["activeDeploymentId"], first, "nothing changed");

    let (status, forced) = update(&store, &key, "voice-bot", &json!({"forceRedeploy": true})).await;
    assert_eq!(status, 200, "{forced}");
    assert_ne!(forced["activeDeploymentId"], first);
    assert_eq!(
        forced["deployment"]["manifest"]["spec"], created["deployment"]["manifest"]["spec"],
        "the same configuration, deployed again"
    );
    let (status, body) = update(&store, &key, "voice-bot", &json!({"forceRedeploy": "yes"})).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (400, Some("forceRedeploy"))
    );
}

/// The key of set `set` of `namespace` in the agents table.
fn set_key(namespace: &str, set: &str) -> std::collections::HashMap<String, AttributeValue> {
    std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S(namespace_pk(namespace))),
        ("sk".to_owned(), AttributeValue::S(secret_set_sk(set))),
    ])
}

/// An agent named `name` that names the set `env`, which then vanishes behind the store's back:
/// an agent as they were before names were checked.
async fn agent_naming_a_missing_set(store: &TestStore, owner: &Principal, name: &str) {
    store
        .make_sets(&owner.namespace, &[("env", SetType::Secret)])
        .await;
    let mut agent = integration_tests::agent_record(owner, name);
    agent.active.config.secret_set = Some("env".into());
    assert_eq!(
        store.store.create_agent(&agent, None).await.unwrap(),
        CreateOutcome::Created
    );
    store
        .client
        .delete_item()
        .table_name(&store.agents_table)
        .set_key(Some(set_key(&owner.namespace, "env")))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn an_agent_naming_a_set_that_no_longer_exists_can_drop_it_and_be_deleted() {
    let store = TestStore::new().await;
    let (alice, key) = store.account_with_key("alice").await;

    agent_naming_a_missing_set(&store, &alice, "legacy-bot").await;
    let (status, body) = update(&store, &key, "legacy-bot", &json!({"secretSet": null})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = update(&store, &key, "legacy-bot", &json!({"secretSet": "env"})).await;
    assert_eq!((status, body["field"].as_str()), (400, Some("secretSet")));

    agent_naming_a_missing_set(&store, &alice, "legacy-bot-2").await;
    let (status, _, _) = call(&store, &key, "DELETE", "legacy-bot-2", None).await;
    assert_eq!(status, 200);
    let left = store
        .client
        .get_item()
        .table_name(&store.agents_table)
        .set_key(Some(set_key(&alice.namespace, "env")))
        .send()
        .await
        .unwrap();
    assert!(
        left.item.is_none(),
        "leaving a missing set makes no item of it"
    );
}

/// A set's delete and an agent naming it, at the same moment: one of them wins, never both (no
/// agent left naming a deleted set), whichever it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_deleted_while_an_agent_names_it_is_either_deleted_or_named_never_both() {
    let store = TestStore::new().await;
    let (alice, key) = store.account_with_key("alice").await;
    let mut outcomes = std::collections::BTreeMap::new();
    for round in 0..20 {
        let set = format!("env-{round}");
        let agent = format!("bot-{round}");
        store
            .make_sets(&alice.namespace, &[(set.as_str(), SetType::Secret)])
            .await;
        let body = json!({"serviceName": agent, "image": "ghcr.io/acme/bot:1", "secretSet": set});
        let ((created, _), (deleted, _)) =
            tokio::join!(create(&store, &key, body), delete_set(&store, &key, &set));
        let agent_there = call(&store, &key, "GET", &agent, None).await.0 == 200;
        let set_there = store
            .client
            .get_item()
            .table_name(&store.agents_table)
            .set_key(Some(set_key(&alice.namespace, &set)))
            .send()
            .await
            .unwrap()
            .item
            .is_some();
        match (created, deleted) {
            (201, 409) => assert!(agent_there && set_there, "round {round}"),
            (400, 200) => assert!(!agent_there && !set_there, "round {round}"),
            other => panic!("round {round}: {other:?}"),
        }
        *outcomes.entry((created, deleted)).or_insert(0) += 1;
    }
    println!("create, delete: {outcomes:?}");
}
