//! Session starts through the real handler on DynamoDB Local (contract section 11): under a
//! public or a private key, refused as the contract says with nothing written, and counted in
//! the agent's `activeSessionCount`.

use integration_tests::{TestStore, parts, ready_agent, start_session};
use serde_json::{Value, json};
use shared::agent::AgentStore;
use shared::auth::Principal;

async fn active_sessions(store: &TestStore, caller: &Principal, agent: &str) -> u32 {
    let agent = store
        .store
        .get_agent(&caller.namespace, agent)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(agent.view().active_session_count, agent.active_sessions);
    agent.active_sessions
}

#[tokio::test]
async fn a_public_key_starts_a_session_on_the_serving_deployment() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let public = store.public_key("acme").await;
    let created = ready_agent(
        &store,
        &caller,
        &key,
        "voice",
        json!({"image": "ghcr.io/acme/a:1"}),
    )
    .await;

    let body = r#"{"createDailyRoom": false, "body": {"user": {"name": "Ada"}}}"#;
    let response = start_session(&store, &public, "voice", Some(body)).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let (status, answer) = parts(response);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "starting");
    assert_eq!(answer["deploymentId"], created["activeDeploymentId"]);
    let id: uuid::Uuid = answer["sessionId"].as_str().unwrap().parse().unwrap();
    assert_eq!(id.get_version_num(), 7, "time-ordered");
    assert_eq!(active_sessions(&store, &caller, "voice").await, 1);

    let (status, answer) = parts(start_session(&store, &key, "voice", None).await);
    assert_eq!(
        status, 200,
        "a private key starts one too, and no body is {{}}: {answer}"
    );
    assert_eq!(active_sessions(&store, &caller, "voice").await, 2);
}

#[tokio::test]
async fn a_full_agent_is_429_agent_at_capacity_with_retry_after() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let public = store.public_key("acme").await;
    let image = json!({"image": "ghcr.io/acme/a:1", "autoScaling": {"maxAgents": 2}});
    ready_agent(&store, &caller, &key, "small", image).await;
    for _ in 0..2 {
        let (status, answer) = parts(start_session(&store, &public, "small", None).await);
        assert_eq!(status, 200, "{answer}");
    }
    let response = start_session(&store, &public, "small", None).await;
    assert!(response.headers().contains_key("retry-after"));
    let (status, answer) = parts(response);
    assert_eq!(
        (status, answer["code"].as_str()),
        (429, Some("AGENT_AT_CAPACITY"))
    );
    assert!(
        answer.get("status").is_none(),
        "the anchor's SDK breaks on an error's status"
    );
    assert_eq!(active_sessions(&store, &caller, "small").await, 2);
}

#[tokio::test]
async fn no_agent_is_404_and_nothing_ready_is_503_agent_not_ready() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let public = store.public_key("acme").await;
    let (status, answer) = parts(start_session(&store, &public, "nobody", None).await);
    assert_eq!((status, answer["code"].as_str()), (404, Some("NOT_FOUND")));

    integration_tests::create_named_agent(&store, &key, "cold").await;
    let response = start_session(&store, &public, "cold", None).await;
    assert!(response.headers().contains_key("retry-after"));
    let (status, answer) = parts(response);
    assert_eq!(
        (status, answer["code"].as_str()),
        (503, Some("AGENT_NOT_READY"))
    );
    assert_eq!(active_sessions(&store, &caller, "cold").await, 0);
}

#[tokio::test]
async fn another_account_s_agent_is_not_found() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    ready_agent(
        &store,
        &caller,
        &key,
        "voice",
        json!({"image": "ghcr.io/acme/a:1"}),
    )
    .await;
    store.account_with_key("globex").await;
    let theirs = store.public_key("globex").await;
    let (status, answer) = parts(start_session(&store, &theirs, "voice", None).await);
    assert_eq!((status, answer["code"].as_str()), (404, Some("NOT_FOUND")));
    assert_eq!(active_sessions(&store, &caller, "voice").await, 0);
}

#[tokio::test]
async fn every_broken_rule_is_a_4xx_naming_its_member_and_starts_nothing() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let public = store.public_key("acme").await;
    ready_agent(
        &store,
        &caller,
        &key,
        "voice",
        json!({"image": "ghcr.io/acme/a:1"}),
    )
    .await;
    let oversized_member = json!({"body": {"k": "x".repeat(48 * 1024)}}).to_string();
    let oversized_request = json!({"body": {"k": "x".repeat(64 * 1024)}}).to_string();
    let cases: [(&str, u16, Option<&str>); 9] = [
        (r#"{"body": "hello"}"#, 400, Some("body")),
        (
            r#"{"createDailyRoom": "yes"}"#,
            400,
            Some("createDailyRoom"),
        ),
        (
            r#"{"dailyRoomProperties": []}"#,
            400,
            Some("dailyRoomProperties"),
        ),
        (r#"{"transport": "smoke-signals"}"#, 400, Some("transport")),
        (r#"{"room": "lobby"}"#, 400, Some("room")),
        (
            r#"{"transport": "daily", "transport": "webrtc"}"#,
            400,
            Some("transport"),
        ),
        ("[1, 2]", 400, None),
        (&oversized_member, 400, Some("body")),
        (&oversized_request, 413, None),
    ];
    for (body, expected, field) in cases {
        let (status, answer) = parts(start_session(&store, &public, "voice", Some(body)).await);
        assert_eq!(status, expected, "{answer}");
        assert_eq!(answer["field"].as_str(), field, "{answer}");
    }
    assert_eq!(active_sessions(&store, &caller, "voice").await, 0);
}

#[tokio::test]
async fn a_public_key_may_start_sessions_and_nothing_else() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let public = store.public_key("acme").await;
    ready_agent(
        &store,
        &caller,
        &key,
        "voice",
        json!({"image": "ghcr.io/acme/a:1"}),
    )
    .await;
    let request = integration_tests::agent_request("GET", &public, "voice", None);
    let (status, answer): (u16, Value) =
        parts(get_agent::handle(&store.store, &store.store, request).await);
    assert_eq!((status, answer["code"].as_str()), (403, Some("FORBIDDEN")));
}
