//! People end to end (contract section 13; docs/testing.md, the people suite), against a stack:
//! cargo lambda watch (each function checks the token itself) or sam local (the template's REST
//! authorizer checks it, the functions read its context). `scripts/e2e.sh watch people` and
//! `scripts/e2e.sh sam people` start the stack and run this file.
//!
//! People are invited by the operator command to accounts of their own and sign in to the
//! stack's user pool (moto's Cognito) as the console does (integration_tests::people).

use integration_tests::people::{Person, Pool, an_hour_ago, forged, moto_signed};
use integration_tests::stack::{Answer, Denial, Stack};
use reqwest::Method;
use serde_json::{Value, json};
use shared::auth::{ApiKey, KeyKind};
use shared::error::{ApiError, ErrorBody};

/// `method` `path` with `authorization`, and a JSON body when given.
async fn send(
    stack: &Stack,
    authorization: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Answer {
    stack
        .call(method, path, Some(authorization), |request| match body {
            Some(body) => request.json(&body),
            None => request,
        })
        .await
}

/// `method` `path` as the person, signed in.
async fn as_person(
    stack: &Stack,
    person: &Person,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Answer {
    send(stack, &person.bearer(), method, path, body).await
}

fn agent_body(name: &str) -> Value {
    json!({"serviceName": name, "image": "ghcr.io/acme/agent:1.0"})
}

/// A new private key of the person's account, named `name`, made with their token: the key.
async fn make_key(stack: &Stack, person: &Person, name: &str) -> (String, ApiKey) {
    let created = as_person(
        stack,
        person,
        Method::POST,
        "/keys",
        Some(json!({"kind": "private", "name": name})),
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let key = created.body["key"].as_str().expect("the new key, once");
    let id = created.body["id"]
        .as_str()
        .expect("the key's id")
        .to_owned();
    (id, ApiKey::parse(key).expect("a well-formed key"))
}

/// Every key id of a `GET /keys` answer, private and public.
fn key_ids(listed: &Value) -> Vec<String> {
    ["keys", "public"]
        .iter()
        .flat_map(|kind| listed[kind].as_array().cloned().unwrap_or_default())
        .map(|key| key["id"].as_str().expect("a key's id").to_owned())
        .collect()
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn an_invited_person_signs_in_reads_the_api_and_makes_a_key_that_works() {
    let stack = Stack::from_env();
    let alice = Pool::from_env().invite("alice").await;

    let agents = as_person(&stack, &alice, Method::GET, "/agents", None).await;
    assert_eq!(agents.status, 200, "{:?}", agents.body);
    let keys = as_person(&stack, &alice, Method::GET, "/keys", None).await;
    assert_eq!(keys.status, 200, "{:?}", keys.body);
    assert_eq!(key_ids(&keys.body), Vec::<String>::new(), "a new account");

    let created = as_person(
        &stack,
        &alice,
        Method::POST,
        "/agents",
        Some(agent_body("console-bot")),
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);

    let made = as_person(
        &stack,
        &alice,
        Method::POST,
        "/keys",
        Some(json!({"kind": "private", "name": "ci"})),
    )
    .await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    assert_eq!(made.header("cache-control"), Some("no-store"));
    assert_eq!(
        (&made.body["kind"], &made.body["name"]),
        (&json!("private"), &json!("ci"))
    );
    let key = ApiKey::parse(made.body["key"].as_str().unwrap()).expect("a private key");
    assert_eq!(key.kind(), KeyKind::Private);
    assert_eq!(made.body["hint"], &key.expose()[..8]);

    // The key is the account's: it reads the agent the person made.
    let listed = stack.send_as(&key, Method::GET, "/agents", None).await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert!(
        listed.body.to_string().contains("\"console-bot\""),
        "{}",
        listed.body
    );
    // Listed by name and hint, never the key itself.
    let keys = as_person(&stack, &alice, Method::GET, "/keys", None).await;
    assert_eq!(
        keys.body["keys"].as_array().map(Vec::len),
        Some(1),
        "{:?}",
        keys.body
    );
    let listed_key = &keys.body["keys"][0];
    assert_eq!(listed_key["id"], made.body["id"]);
    assert_eq!(listed_key["name"], "ci");
    assert_eq!(listed_key["revokedAt"], Value::Null);
    assert!(!keys.body.to_string().contains(key.expose()));
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn another_accounts_person_gets_404_on_its_agent_set_session_and_key_and_sees_none_of_its_keys()
 {
    let stack = Stack::from_env();
    let pool = Pool::from_env();
    let (alice, bob) = (pool.invite("alice").await, pool.invite("bob").await);

    // Alice's agent, set and key, made with her token; a session of the agent, with her key.
    let created = as_person(
        &stack,
        &alice,
        Method::POST,
        "/agents",
        Some(agent_body("tenant-bot")),
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let set = json!({"secretKey": "OPENAI_API_KEY", "secretValue": "alice-only"});
    let put = as_person(&stack, &alice, Method::PUT, "/secrets/alice-env", Some(set)).await;
    assert_eq!(put.status, 200, "{:?}", put.body);
    let (key_id, key) = make_key(&stack, &alice, "deploy").await;
    let bound = (
        integration_tests::bounded::Bound::new(240, std::time::Duration::from_secs(60)),
        std::time::Duration::from_millis(250),
    );
    stack
        .read_until(&key, "/agents/tenant-bot", bound, |agent| {
            agent["ready"] == true
        })
        .await;
    let started = stack
        .send_as(
            &key,
            Method::POST,
            "/public/tenant-bot/start",
            Some(&json!({"body": {}})),
        )
        .await;
    assert_eq!(started.status, 200, "{:?}", started.body);
    let session = started.body["sessionId"].as_str().expect("a session id");

    for (what, method, path) in [
        ("her agent", Method::GET, "/agents/tenant-bot".to_owned()),
        ("her set", Method::GET, "/secrets/alice-env".to_owned()),
        (
            "her session",
            Method::GET,
            format!("/agents/tenant-bot/sessions/{session}"),
        ),
        (
            "her key's revocation",
            Method::DELETE,
            format!("/keys/{key_id}"),
        ),
    ] {
        let answer = as_person(&stack, &bob, method, &path, None).await;
        assert_eq!(
            (answer.status, &answer.body["code"]),
            (404, &json!("NOT_FOUND")),
            "bob on {what} ({path}): {:?}",
            answer.body
        );
    }
    let bobs_keys = as_person(&stack, &bob, Method::GET, "/keys", None).await;
    assert_eq!(bobs_keys.status, 200, "{:?}", bobs_keys.body);
    assert!(
        !key_ids(&bobs_keys.body).contains(&key_id),
        "{:?}",
        bobs_keys.body
    );
    let bobs_agents = as_person(&stack, &bob, Method::GET, "/agents", None).await;
    assert_eq!(bobs_agents.status, 200, "{:?}", bobs_agents.body);
    assert!(!bobs_agents.body.to_string().contains("tenant-bot"));

    // Bob's DELETE revoked nothing: her key still works.
    let hers = as_person(&stack, &alice, Method::GET, "/keys", None).await;
    let listed = hers.body["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|listed| listed["id"] == key_id.as_str()))
        .unwrap_or_else(|| panic!("her key in her list: {:?}", hers.body));
    assert_eq!(listed["revokedAt"], Value::Null);
    assert_eq!(
        stack
            .send_as(&key, Method::GET, "/agents", None)
            .await
            .status,
        200
    );
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn api_keys_private_or_public_are_403_on_the_keys_routes_and_mint_nothing() {
    let stack = Stack::from_env();
    let (owner, private) = stack.account("keyholder").await;
    let public = stack.key_of(&owner.account_id, KeyKind::Public).await;
    let expected = serde_json::to_value(ErrorBody::from(&ApiError::KeysNeedAPerson)).unwrap();

    for (kind, key) in [("private", &private), ("public", &public)] {
        let mint = json!({"kind": "private", "name": "minted"});
        for (method, path, body) in [
            (Method::GET, "/keys", None),
            (Method::POST, "/keys", Some(&mint)),
            (Method::DELETE, "/keys/0123456789ab", None),
        ] {
            let answer = stack.send_as(key, method.clone(), path, body).await;
            assert_eq!(
                (answer.status, &answer.body),
                (403, &expected),
                "a {kind} key on {method} {path}"
            );
        }
    }
    let keys = shared::account::list_keys(&stack.store, &owner.account_id)
        .await
        .unwrap();
    assert_eq!(keys.len(), 2, "the two keys made here, no more: {keys:?}");
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn expired_and_forged_tokens_are_refused_as_a_bad_key_is() {
    let stack = Stack::from_env();
    let alice = Pool::from_env().invite("alice").await;

    // Her own claims signed again with moto's key are accepted: what follows is refused for
    // its expiry or its signature, not for how it was made.
    let resigned = moto_signed(&alice.token, |_| {});
    let accepted = send(
        &stack,
        &format!("Bearer {resigned}"),
        Method::GET,
        "/agents",
        None,
    )
    .await;
    assert_eq!(accepted.status, 200, "{:?}", accepted.body);

    let expired = moto_signed(&alice.token, |claims| {
        claims["exp"] = json!(an_hour_ago());
        claims["iat"] = json!(an_hour_ago() - 900);
        claims["auth_time"] = json!(an_hour_ago() - 900);
    });
    let forged = forged(&alice.token);
    for (what, token) in [("an expired", expired), ("a forged", forged)] {
        let authorization = format!("Bearer {token}");
        for (method, path) in [
            (Method::GET, "/agents"),
            (Method::GET, "/keys"),
            (Method::GET, "/secrets"),
            (Method::GET, "/agents/any-bot/sessions"),
            (Method::POST, "/public/any-bot/start"),
        ] {
            let answer = send(&stack, &authorization, method.clone(), path, None).await;
            stack.assert_denied(
                &format!("{method} {path}, {what} token"),
                Denial::RefusedKey,
                &answer,
            );
        }
    }
    // Her token itself still works: nothing above touched her.
    let agents = send(&stack, &alice.bearer(), Method::GET, "/agents", None).await;
    assert_eq!(agents.status, 200);
}
