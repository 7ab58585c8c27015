//! The handler on the in-memory store, fed with the events/ fixtures (a person of the dev
//! account in the authorizer's context) and with requests made from them.

use super::*;
use lambda_http::http::StatusCode;
use serde_json::json;
use shared::store::memory::MemoryStore;
use shared::testing::{FIXTURE_KEY_ID, FIXTURE_PERSON_ID, fixture_request, seed_fixture_person};

async fn store() -> MemoryStore {
    let store = MemoryStore::default();
    seed_fixture_person(&store).await.unwrap();
    store
}

async fn call(store: &MemoryStore, request: Request) -> (StatusCode, Response<Body>, Value) {
    let response = handle(store, request).await;
    let status = response.status();
    let body = serde_json::from_slice(response.body().as_ref()).unwrap();
    (status, response, body)
}

/// The create fixture with `body` instead of its own.
fn create_request(body: &str) -> Request {
    let mut request = fixture_request("keys-create.json");
    *request.body_mut() = Body::Text(body.to_owned());
    request
}

#[tokio::test]
async fn a_person_lists_the_accounts_keys_newest_first_with_the_public_ones_again() {
    let store = store().await;
    let (status, _, created) = call(
        &store,
        create_request(r#"{"kind": "public", "name": "web"}"#),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, _, body) = call(&store, fixture_request("keys-list.json")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let keys = body["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["id"], created["id"], "newest first");
    assert_eq!(
        keys[1],
        json!({"id": FIXTURE_KEY_ID, "kind": "private", "name": "fixture", "hint": "ahk_Fix1",
               "createdAt": "2026-11-26T14:00:00.000Z", "revokedAt": null})
    );
    assert_eq!(
        body["public"],
        json!([{"id": created["id"], "key": created["hint"], "metadata": {"name": "web"},
                "createdAt": created["createdAt"], "revoked": false}])
    );
    assert!(!body.to_string().contains(created["key"].as_str().unwrap()));
}

#[tokio::test]
async fn a_created_key_is_answered_once_not_cached_and_works() {
    let store = store().await;
    let (status, response, body) = call(&store, fixture_request("keys-create.json")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let key = body["key"].as_str().unwrap();
    assert!(key.starts_with("ahk_"));
    assert_eq!(body["hint"], &key[..8]);
    assert_eq!(
        (&body["kind"], &body["name"]),
        (&json!("private"), &json!("ci"))
    );
    assert_eq!(body["revokedAt"], Value::Null);
    let found = store
        .find_key(&shared::auth::ApiKey::parse(key).unwrap().hash())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.account_id.as_str(), found.key_id.as_str()),
        ("dev", body["id"].as_str().unwrap())
    );
    // `type` is the anchor's name of `kind`.
    let (status, _, body) = call(
        &store,
        create_request(r#"{"type": "public", "name": "cli"}"#),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["kind"], "public");
    assert!(body["key"].as_str().unwrap().starts_with("ahp_"));
}

#[tokio::test]
async fn bad_bodies_are_400_naming_the_member_and_change_nothing() {
    let store = store().await;
    let long = "x".repeat(65);
    for (body, field) in [
        (
            r#"{"kind": "private", "type": "private", "name": "a"}"#.to_owned(),
            Some("type"),
        ),
        (
            r#"{"kind": "secret", "name": "a"}"#.to_owned(),
            Some("kind"),
        ),
        (r#"{"type": 1, "name": "a"}"#.to_owned(), Some("type")),
        (r#"{"name": "a"}"#.to_owned(), Some("kind")),
        (r#"{"kind": "private"}"#.to_owned(), Some("name")),
        (
            r#"{"kind": "private", "name": ""}"#.to_owned(),
            Some("name"),
        ),
        (
            r#"{"kind": "private", "name": "a\u0007b"}"#.to_owned(),
            Some("name"),
        ),
        (
            format!(r#"{{"kind": "private", "name": "{long}"}}"#),
            Some("name"),
        ),
        (r#"{"kind": "private", "name": 7}"#.to_owned(), Some("name")),
        (
            r#"{"kind": "private", "name": "a", "scope": "all"}"#.to_owned(),
            Some("scope"),
        ),
        (r#"["private"]"#.to_owned(), None),
        ("not json".to_owned(), None),
    ] {
        let (status, _, answer) = call(&store, create_request(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["code"], "GENERIC_BAD_REQUEST");
        assert_eq!(answer["field"].as_str(), field, "{body}: {answer}");
    }
    assert_eq!(
        store.list_keys("dev").await.unwrap().len(),
        1,
        "nothing written"
    );
}

#[tokio::test]
async fn the_51st_live_key_is_a_400_saying_to_revoke_one() {
    let store = store().await;
    for n in 1..account::MAX_LIVE_KEYS {
        let (status, _, body) = call(
            &store,
            create_request(&format!(r#"{{"kind": "private", "name": "k{n}"}}"#)),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, _, body) = call(&store, fixture_request("keys-create.json")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["error"],
        "this account has 50 live keys, the most it may have; revoke one first"
    );
    let (status, _, _) = call(&store, fixture_request("keys-revoke.json")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = call(&store, fixture_request("keys-create.json")).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "a revoked key frees its place: {body}"
    );
}

#[tokio::test]
async fn a_revocation_answers_its_first_time_and_another_accounts_id_is_404() {
    let store = store().await;
    let (status, _, first) = call(&store, fixture_request("keys-revoke.json")).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["id"], FIXTURE_KEY_ID);
    assert!(first["revokedAt"].is_string());
    let (status, _, again) = call(&store, fixture_request("keys-revoke.json")).await;
    assert_eq!((status, &again), (StatusCode::OK, &first));

    // A key of another account: its id is no key of this one.
    let other = account::ensure_account(&store, "other", Some("other-ns"))
        .await
        .unwrap();
    let (_, theirs) = account::issue_named_key(&store, &other.account_id, KeyKind::Private, "x")
        .await
        .unwrap();
    let mut request = fixture_request("keys-revoke.json");
    *request.uri_mut() = format!("/v1/keys/{}", theirs.key_id).parse().unwrap();
    let request = lambda_http::RequestExt::with_path_parameters(
        request,
        std::collections::HashMap::from([("keyId".to_owned(), theirs.key_id.clone())]),
    );
    let (status, _, body) = call(&store, request).await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::NOT_FOUND, &json!("NOT_FOUND")),
        "{body}"
    );
    assert_eq!(store.list_keys("other").await.unwrap()[0].revoked_at, None);
    let (_, _, list) = call(&store, fixture_request("keys-list.json")).await;
    assert!(
        !list.to_string().contains(&theirs.key_id),
        "not listed either"
    );
}

#[tokio::test]
async fn other_methods_are_405_with_allow() {
    let store = store().await;
    let (status, response, body) = call(&store, fixture_request("keys-wrong-method.json")).await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::METHOD_NOT_ALLOWED, &json!("METHOD_NOT_ALLOWED"))
    );
    assert_eq!(response.headers()["allow"], ALLOW_KEYS);
    let mut request = fixture_request("keys-revoke.json");
    *request.method_mut() = Method::GET;
    let (status, response, _) = call(&store, request).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.headers()["allow"], ALLOW_KEY);
}

#[tokio::test]
async fn an_api_key_is_403_and_a_person_unknown_to_the_store_401() {
    let store = store().await;
    // A private key's context (the authorizer names no person).
    let (status, _, body) = call(&store, fixture_request("account-info-organizations.json")).await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::FORBIDDEN, &json!("FORBIDDEN")),
        "{body}"
    );
    assert_eq!(
        body["error"],
        "API keys cannot manage keys: sign in to the console and manage them there"
    );
    // A person removed since the gateway cached its verdict.
    account::remove_person(&store, FIXTURE_PERSON_ID)
        .await
        .unwrap();
    let (status, _, body) = call(&store, fixture_request("keys-list.json")).await;
    assert_eq!(
        (status, &body["code"]),
        (StatusCode::UNAUTHORIZED, &json!("UNAUTHORIZED")),
        "{body}"
    );
}
