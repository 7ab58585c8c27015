//! The operations on the in-memory store, with a stand-in for KMS; the DynamoDB adapter and
//! moto's KMS are tests/tests/secret_sets.rs's.

use super::*;
use crate::store::memory::MemoryStore;
use crate::testing::data_keys::FakeKms;
use serde_json::{Value, json};

const NS: &str = "tiny-ferret-1";
const REGION: &str = "us-west-2";

async fn put_body(
    store: &MemoryStore,
    kms: &FakeKms,
    name: &str,
    body: Value,
) -> Result<PutAnswer, ApiError> {
    let change = SetChange::from_json(name, REGION, body)?;
    put(store, kms, NS, name, REGION, change).await
}

async fn opened(store: &MemoryStore, kms: &FakeKms, name: &str) -> Vec<(String, String)> {
    let set = crate::secrets::opening::open_set(store, kms, NS, name)
        .await
        .unwrap();
    set.values
        .iter()
        .map(|value| {
            let text = String::from_utf8(value.value().to_vec()).unwrap();
            (value.key.clone(), text)
        })
        .collect()
}

#[tokio::test]
async fn keys_given_are_set_and_keys_not_given_are_kept() {
    let (store, kms) = (MemoryStore::default(), FakeKms::default());
    let answer = put_body(
        &store,
        &kms,
        "voice",
        json!({"secretKey": "A", "secretValue": "one"}),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        json!({"status": "OK", "name": "voice", "type": "secret", "region": REGION})
    );
    put_body(
        &store,
        &kms,
        "voice",
        json!({"secrets": [
        {"secretKey": "B", "secretValue": "two"}, {"secretKey": "A", "secretValue": "uno"}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        opened(&store, &kms, "voice").await,
        [
            ("A".to_owned(), "uno".to_owned()),
            ("B".to_owned(), "two".to_owned())
        ]
    );
    // The replaced value is gone: only what the set points at is kept.
    assert_eq!(store.sealed_value_count(), 2);
    assert_eq!(kms.issued(), 3, "a data key a value");

    let view = serde_json::to_value(get(&store, NS, "voice", REGION).await.unwrap()).unwrap();
    assert_eq!(view["type"], "secret");
    assert_eq!(view["status"], "ready");
    let names: Vec<&str> = view["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["fieldName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["A", "B"]);
    assert!(!view.to_string().contains("uno") && !view.to_string().contains("two"));
}

#[tokio::test]
async fn an_image_pull_secret_replaces_its_credentials_and_keeps_its_type() {
    let (store, kms) = (MemoryStore::default(), FakeKms::default());
    let body = |user: &str| {
        let credentials = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{user}:tok"),
        );
        json!({"isImagePullSecret": true, "host": "ghcr.io", "secretValue": credentials})
    };
    put_body(&store, &kms, "pull", body("robot")).await.unwrap();
    put_body(&store, &kms, "pull", body("robot2"))
        .await
        .unwrap();
    assert_eq!(store.sealed_value_count(), 1);
    let view = serde_json::to_value(get(&store, NS, "pull", REGION).await.unwrap()).unwrap();
    assert_eq!(view["type"], "imagePullSecret");
    assert_eq!(view["host"], "ghcr.io");
    assert!(view.get("secrets").is_none());

    let refused = put_body(
        &store,
        &kms,
        "pull",
        json!({"secretKey": "A", "secretValue": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.status(), http::StatusCode::CONFLICT);
    let refused = delete_key(&store, NS, "pull", CREDENTIALS_KEY)
        .await
        .unwrap_err();
    assert_eq!(refused.status(), http::StatusCode::BAD_REQUEST);
    // Refused writes leave nothing behind.
    assert_eq!(store.sealed_value_count(), 1);
}

#[tokio::test]
async fn a_key_and_then_the_set_are_deleted_leaving_nothing() {
    let (store, kms) = (MemoryStore::default(), FakeKms::default());
    put_body(
        &store,
        &kms,
        "voice",
        json!({"secrets": [
        {"secretKey": "A", "secretValue": "1"}, {"secretKey": "B", "secretValue": "2"}]}),
    )
    .await
    .unwrap();
    delete_key(&store, NS, "voice", "A").await.unwrap();
    assert_eq!(
        opened(&store, &kms, "voice").await,
        [("B".to_owned(), "2".to_owned())]
    );
    assert_eq!(
        delete_key(&store, NS, "voice", "A")
            .await
            .unwrap_err()
            .status(),
        http::StatusCode::NOT_FOUND
    );
    delete(&store, NS, "voice").await.unwrap();
    assert_eq!(store.sealed_value_count(), 0);
    for missing in [
        delete(&store, NS, "voice").await.unwrap_err(),
        get(&store, NS, "voice", REGION).await.unwrap_err(),
        delete_key(&store, NS, "voice", "B").await.unwrap_err(),
    ] {
        assert_eq!(missing.status(), http::StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn a_set_in_use_is_not_deleted_and_the_answer_names_its_agents() {
    let (store, kms) = (MemoryStore::default(), FakeKms::default());
    put_body(
        &store,
        &kms,
        "voice",
        json!({"secretKey": "A", "secretValue": "1"}),
    )
    .await
    .unwrap();
    let caller = crate::auth::Principal {
        account_id: "acme".into(),
        namespace: NS.into(),
    };
    let body =
        json!({"serviceName": "support-bot", "image": "ghcr.io/acme/bot:1", "secretSet": "voice"});
    let changes = crate::agent::ConfigChanges::from_json(body).unwrap();
    crate::agent::lifecycle::create(
        &store,
        crate::manifest::DeploymentMode::Simulated,
        &caller,
        changes,
        None,
    )
    .await
    .unwrap();
    let refused = delete(&store, NS, "voice").await.unwrap_err();
    assert_eq!(refused.status(), http::StatusCode::CONFLICT);
    assert!(refused.to_string().contains("support-bot"), "{refused}");
    assert_eq!(store.sealed_value_count(), 1);
}

#[tokio::test]
async fn the_list_is_by_name_a_page_at_a_time() {
    let (store, kms) = (MemoryStore::default(), FakeKms::default());
    for name in ["c-set", "a-set", "b-set"] {
        put_body(
            &store,
            &kms,
            name,
            json!({"secretKey": "A", "secretValue": "1"}),
        )
        .await
        .unwrap();
    }
    let key = CursorKey::from_bytes([9; 32]);
    let first = list(
        &store,
        NS,
        &ListQuery {
            limit: 2,
            after: None,
        },
        &key,
        REGION,
    )
    .await
    .unwrap();
    let names: Vec<&str> = first.sets.iter().map(|set| set.name.as_str()).collect();
    assert_eq!(names, ["a-set", "b-set"]);
    let cursor = first.next_cursor.unwrap();
    let query =
        ListQuery::from_params([("cursor", cursor.as_str())], &key, &CURSOR_FORMAT, NS).unwrap();
    let second = list(&store, NS, &query, &key, REGION).await.unwrap();
    assert_eq!(second.sets.len(), 1);
    assert_eq!(second.sets[0].name, "c-set");
    assert!(second.next_cursor.is_none());
    let elsewhere = ListQuery::from_params(
        [("cursor", cursor.as_str())],
        &key,
        &CURSOR_FORMAT,
        "other-ns",
    );
    assert_eq!(elsewhere.unwrap_err().field(), Some("cursor"));
}

#[tokio::test]
async fn the_201st_set_of_an_account_is_refused() {
    let (store, kms) = (MemoryStore::default(), FakeKms::default());
    for i in 0..MAX_SETS_PER_ACCOUNT {
        put_body(
            &store,
            &kms,
            &format!("set-{i}"),
            json!({"secretKey": "A", "secretValue": "1"}),
        )
        .await
        .unwrap();
    }
    let refused = put_body(
        &store,
        &kms,
        "one-more",
        json!({"secretKey": "A", "secretValue": "1"}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.field(), Some("setName"));
    assert_eq!(store.sealed_value_count(), MAX_SETS_PER_ACCOUNT);
    // An existing set still changes.
    put_body(
        &store,
        &kms,
        "set-0",
        json!({"secretKey": "B", "secretValue": "2"}),
    )
    .await
    .unwrap();
}
