//! Secret sets through the stack (contract section 10): made, changed key by key, listed and
//! read by name only, deleted; a value is in no answer; another account sees none of it.

use integration_tests::stack::{Answer, Stack, bearer};
use reqwest::Method;
use serde_json::{Value, json};
use shared::auth::ApiKey;

async fn put(stack: &Stack, key: &ApiKey, set: &str, body: &Value) -> Answer {
    let body = body.clone();
    stack
        .call(
            Method::PUT,
            &format!("/secrets/{set}"),
            Some(&bearer(key)),
            |r| r.json(&body),
        )
        .await
}

async fn call(stack: &Stack, key: &ApiKey, method: Method, path: &str) -> Answer {
    stack.call(method, path, Some(&bearer(key)), |r| r).await
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_set_is_made_changed_read_by_name_and_deleted_and_its_values_never_come_back() {
    let stack = Stack::from_env();
    let (_, key) = stack.account("secrets").await;
    let planted = format!("sk-planted-{}", uuid::Uuid::new_v4().simple());
    let mut answers: Vec<Answer> = Vec::new();

    // The anchor's CLI form: one key a request, with the set's name.
    let first = put(
        &stack,
        &key,
        "voice-keys",
        &json!({"name": "voice-keys",
        "isImagePullSecret": false, "secretKey": "OPENAI_API_KEY", "secretValue": planted}),
    )
    .await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(first.body["name"], "voice-keys");
    assert_eq!(first.body["type"], "secret");
    answers.push(first);
    let second = put(
        &stack,
        &key,
        "voice-keys",
        &json!({"secrets": [
        {"secretKey": "DEEPGRAM_API_KEY", "secretValue": format!("{planted}-2")}]}),
    )
    .await;
    assert_eq!(second.status, 200, "{:?}", second.body);
    answers.push(second);

    let read = call(&stack, &key, Method::GET, "/secrets/voice-keys").await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    let names: Vec<&str> = read.body["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["fieldName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["DEEPGRAM_API_KEY", "OPENAI_API_KEY"]);
    answers.push(read);
    let list = call(&stack, &key, Method::GET, "/secrets").await;
    assert_eq!(list.status, 200);
    assert_eq!(list.body["sets"][0]["name"], "voice-keys");
    answers.push(list);

    // Bad input: 400 naming the member, and the set reads the same after.
    let bad = put(
        &stack,
        &key,
        "voice-keys",
        &json!({"secretKey": "bad key", "secretValue": planted}),
    )
    .await;
    assert_eq!(
        (bad.status, bad.body["field"].as_str()),
        (400, Some("secretKey"))
    );
    answers.push(bad);
    let unchanged = call(&stack, &key, Method::GET, "/secrets/voice-keys").await;
    assert_eq!(unchanged.body, answers[2].body);

    let unset = call(
        &stack,
        &key,
        Method::DELETE,
        "/secrets/voice-keys/OPENAI_API_KEY",
    )
    .await;
    assert_eq!((unset.status, &unset.body), (200, &json!({"status": "OK"})));
    let again = call(
        &stack,
        &key,
        Method::DELETE,
        "/secrets/voice-keys/OPENAI_API_KEY",
    )
    .await;
    assert_eq!(again.status, 404);
    let deleted = call(&stack, &key, Method::DELETE, "/secrets/voice-keys").await;
    assert_eq!(deleted.status, 200);
    assert_eq!(
        call(&stack, &key, Method::GET, "/secrets/voice-keys")
            .await
            .status,
        404
    );
    answers.extend([unset, again, deleted]);

    for answer in &answers {
        let text = answer.body.to_string();
        assert!(
            !text.contains(&planted) && !text.contains(&planted[..16]),
            "{text}"
        );
    }
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn another_accounts_key_sees_404_for_every_secrets_route() {
    let stack = Stack::from_env();
    let (_, alice) = stack.account("alice-secrets").await;
    let (_, bob) = stack.account("bob-secrets").await;
    let made = put(
        &stack,
        &alice,
        "alice-keys",
        &json!({"secretKey": "A", "secretValue": "alices"}),
    )
    .await;
    assert_eq!(made.status, 200, "{:?}", made.body);
    for (method, path) in [
        (Method::GET, "/secrets/alice-keys"),
        (Method::DELETE, "/secrets/alice-keys/A"),
        (Method::DELETE, "/secrets/alice-keys"),
    ] {
        let answer = call(&stack, &bob, method.clone(), path).await;
        assert_eq!(answer.status, 404, "{method} {path}: {:?}", answer.body);
    }
    let listed = call(&stack, &bob, Method::GET, "/secrets").await;
    assert_eq!(listed.body["sets"], json!([]));
    // Bob's PUT of the same name makes his own set; Alice's is unchanged.
    assert_eq!(
        put(
            &stack,
            &bob,
            "alice-keys",
            &json!({"secretKey": "B", "secretValue": "bobs"})
        )
        .await
        .status,
        200
    );
    let alices = call(&stack, &alice, Method::GET, "/secrets/alice-keys").await;
    assert_eq!(alices.body["secrets"].as_array().unwrap().len(), 1);
    assert_eq!(alices.body["secrets"][0]["fieldName"], "A");
}

async fn post(stack: &Stack, key: &ApiKey, path: &str, body: &Value) -> Answer {
    let body = body.clone();
    stack
        .call(Method::POST, path, Some(&bearer(key)), |r| r.json(&body))
        .await
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn an_agent_names_its_accounts_sets_only_and_a_set_in_use_stays() {
    let stack = Stack::from_env();
    let (_, alice) = stack.account("alice-named-sets").await;
    let (_, bob) = stack.account("bob-named-sets").await;
    let made = put(
        &stack,
        &alice,
        "voice-env",
        &json!({"secretKey": "OPENAI_API_KEY", "secretValue": "sk-alice"}),
    )
    .await;
    assert_eq!(made.status, 200, "{:?}", made.body);
    let agent = json!({"serviceName": "named-bot", "image": "ghcr.io/acme/bot:1.0",
        "secretSet": "voice-env"});

    // Bob cannot name alice's set: to him it is a name nobody has.
    let refused = post(&stack, &bob, "/agents", &agent).await;
    assert_eq!(
        (refused.status, refused.body["field"].as_str()),
        (400, Some("secretSet")),
        "{:?}",
        refused.body
    );
    assert_eq!(
        call(&stack, &bob, Method::GET, "/agents/named-bot")
            .await
            .status,
        404
    );

    let created = post(&stack, &alice, "/agents", &agent).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let in_use = call(&stack, &alice, Method::DELETE, "/secrets/voice-env").await;
    assert_eq!(in_use.status, 409, "{:?}", in_use.body);
    assert!(in_use.body["error"].as_str().unwrap().contains("named-bot"));

    // A changed value reaches the agent at its next deployment: forceRedeploy makes one.
    let forced = post(
        &stack,
        &alice,
        "/agents/named-bot",
        &json!({"forceRedeploy": true}),
    )
    .await;
    assert_eq!(forced.status, 200, "{:?}", forced.body);
    assert_ne!(
        forced.body["activeDeploymentId"],
        created.body["activeDeploymentId"]
    );

    let dropped = post(
        &stack,
        &alice,
        "/agents/named-bot",
        &json!({"secretSet": null}),
    )
    .await;
    assert_eq!(dropped.status, 200, "{:?}", dropped.body);
    let deleted = call(&stack, &alice, Method::DELETE, "/secrets/voice-env").await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
}

/// What a request could change of an agent (the data plane's readiness reports may change the
/// rest meanwhile).
fn configuration(agent: &Value) -> Value {
    json!([
        agent["activeDeploymentId"],
        agent["updatedAt"],
        agent["deployment"]["manifest"]
    ])
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_public_key_is_refused_403_on_every_route_but_a_session_start_and_changes_nothing() {
    let stack = Stack::from_env();
    let (owner, key) = stack.account("public").await;
    assert_eq!(
        stack
            .create(
                &key,
                &json!({"serviceName": "guarded", "image": "ghcr.io/acme/agent:1.0"})
            )
            .await
            .status,
        201
    );
    let set =
        json!({"name": "kept", "isImagePullSecret": false, "secretKey": "K", "secretValue": "v"});
    assert_eq!(put(&stack, &key, "kept", &set).await.status, 200);
    let before = (
        configuration(
            &call(&stack, &key, Method::GET, "/agents/guarded")
                .await
                .body,
        ),
        call(&stack, &key, Method::GET, "/secrets/kept").await.body,
    );

    let public = stack
        .key_of(&owner.account_id, shared::auth::KeyKind::Public)
        .await;
    assert!(public.expose().starts_with("ahp_"));
    let agent = json!({"serviceName": "other", "image": "ghcr.io/acme/agent:1.0"});
    let session = "/agents/guarded/sessions/0193a000-0000-7000-8000-000000000000";
    let routes: [(Method, &str, Option<&Value>); 15] = [
        (Method::POST, "/agents", Some(&agent)),
        (Method::GET, "/agents", None),
        (Method::GET, "/agents/guarded", None),
        (
            Method::POST,
            "/agents/guarded",
            Some(&json!({"image": "ghcr.io/acme/agent:2.0"})),
        ),
        (Method::DELETE, "/agents/guarded", None),
        (Method::GET, "/agents/guarded/logs", None),
        (Method::PUT, "/secrets/kept", Some(&set)),
        (Method::PUT, "/secrets/new-set", Some(&set)),
        (Method::GET, "/secrets", None),
        (Method::GET, "/secrets/kept", None),
        (Method::DELETE, "/secrets/kept/K", None),
        (Method::DELETE, "/secrets/kept", None),
        (Method::GET, "/agents/guarded/sessions", None),
        (Method::GET, session, None),
        (Method::DELETE, session, None),
    ];
    for (method, path, body) in routes {
        let answer = stack
            .call(
                method.clone(),
                path,
                Some(&bearer(&public)),
                |request| match body {
                    Some(body) => request.json(body),
                    None => request,
                },
            )
            .await;
        assert_eq!(answer.status, 403, "{method} {path}: {}", answer.body);
        assert_eq!(answer.body["code"], "FORBIDDEN", "{method} {path}");
        assert!(
            answer.body["error"]
                .as_str()
                .unwrap()
                .contains("public key")
        );
        assert!(answer.body.get("field").is_none());
    }
    // The start route lets a public key through the gateway and the function: an agent the
    // account does not have is the route's own 404, not a 403.
    let answer = stack
        .call(
            Method::POST,
            "/public/nobody/start",
            Some(&bearer(&public)),
            |request| request.json(&json!({"createDailyRoom": false})),
        )
        .await;
    assert_eq!(
        (answer.status, answer.body["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{}",
        answer.body
    );

    let after = (
        configuration(
            &call(&stack, &key, Method::GET, "/agents/guarded")
                .await
                .body,
        ),
        call(&stack, &key, Method::GET, "/secrets/kept").await.body,
    );
    assert_eq!(after, before, "a refused request changed nothing");
    assert_eq!(
        call(&stack, &key, Method::GET, "/secrets/new-set")
            .await
            .status,
        404
    );
}
