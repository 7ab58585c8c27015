//! Sessions through the real handlers on DynamoDB Local (contract section 11): starts under a
//! public or a private key, refused as the contract says with nothing written, and counted in
//! the agent's `activeSessionCount`; a session read by its id, stopped and listed, in its account
//! only; an agent's delete ends its sessions.

use integration_tests::{TestStore, acme_with_voice, parts, ready_agent, start_session};
use serde_json::{Value, json};
use shared::agent::AgentStore;
use shared::auth::{ApiKey, Principal};
use shared::session::SessionStore;

/// The agent's `activeSessionCount` as `GET /v1/agents/{agent}` answers it, which must be the
/// count the cap is checked against (the stored one).
async fn active_sessions(store: &TestStore, caller: &Principal, key: &ApiKey, agent: &str) -> u32 {
    let stored = store
        .store
        .get_agent(&caller.namespace, agent)
        .await
        .unwrap()
        .unwrap();
    let (status, _, answer) = integration_tests::call(store, key, "GET", agent, None).await;
    assert_eq!(status, 200, "{answer}");
    let answered = answer["activeSessionCount"]
        .as_u64()
        .expect("activeSessionCount");
    assert_eq!(answered, u64::from(stored.active_sessions), "{answer}");
    stored.active_sessions
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
    assert_eq!(active_sessions(&store, &caller, &key, "voice").await, 1);

    let (status, answer) = parts(start_session(&store, &key, "voice", None).await);
    assert_eq!(
        status, 200,
        "a private key starts one too, and no body is {{}}: {answer}"
    );
    assert_eq!(active_sessions(&store, &caller, &key, "voice").await, 2);
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
    assert_eq!(active_sessions(&store, &caller, &key, "small").await, 2);
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
    assert_eq!(active_sessions(&store, &caller, &key, "cold").await, 0);
}

#[tokio::test]
async fn another_account_s_agent_is_not_found() {
    let (store, caller, key, _) = acme_with_voice().await;
    store.account_with_key("globex").await;
    let theirs = store.public_key("globex").await;
    let (status, answer) = parts(start_session(&store, &theirs, "voice", None).await);
    assert_eq!((status, answer["code"].as_str()), (404, Some("NOT_FOUND")));
    assert_eq!(active_sessions(&store, &caller, &key, "voice").await, 0);
}

#[tokio::test]
async fn every_broken_rule_is_a_4xx_naming_its_member_and_starts_nothing() {
    let (store, caller, key, public) = acme_with_voice().await;
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
    assert_eq!(active_sessions(&store, &caller, &key, "voice").await, 0);
}

#[tokio::test]
async fn a_public_key_may_start_sessions_and_nothing_else() {
    let (store, _, _, public) = acme_with_voice().await;
    let request = integration_tests::agent_request("GET", &public, "voice", None);
    let (status, answer): (u16, Value) =
        parts(get_agent::handle(&store.store, &store.store, request).await);
    assert_eq!((status, answer["code"].as_str()), (403, Some("FORBIDDEN")));
}

async fn read_session(store: &TestStore, key: &ApiKey, agent: &str, id: &str) -> (u16, Value) {
    let request = integration_tests::session_request("GET", key, agent, id);
    parts(get_session::handle(&store.store, &store.store, &store.store, request).await)
}

async fn stop(store: &TestStore, key: &ApiKey, agent: &str, id: &str) -> (u16, Value) {
    let request = integration_tests::session_request("DELETE", key, agent, id);
    parts(stop_session::handle(&store.store, &store.store, &store.store, request).await)
}

#[tokio::test]
async fn a_started_session_reads_by_its_id_with_every_member() {
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
    let (_, started) = parts(start_session(&store, &public, "voice", None).await);
    let id = started["sessionId"].as_str().unwrap();

    let (status, session) = read_session(&store, &key, "voice", id).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["sessionId"], id);
    let agent = store
        .store
        .get_agent(&caller.namespace, "voice")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session["serviceId"], agent.service_id.as_str());
    assert_eq!(session["deploymentId"], created["activeDeploymentId"]);
    assert_eq!(session["status"], "starting");
    assert_eq!(session["endState"], "active");
    for unknown in [
        "endedAt",
        "completionStatus",
        "botStartSeconds",
        "coldStart",
    ] {
        assert_eq!(
            session[unknown],
            Value::Null,
            "{unknown} written out as null"
        );
    }

    for (agent, id) in [
        ("voice", "not-a-session"),
        ("voice", "019ab7c2-0000-7000-8000-000000000000"),
        ("other", id),
    ] {
        let (status, answer) = read_session(&store, &key, agent, id).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (404, Some("NOT_FOUND")),
            "{agent} {id}"
        );
    }
    let (status, answer) = read_session(&store, &public, "voice", id).await;
    assert_eq!((status, answer["code"].as_str()), (403, Some("FORBIDDEN")));
}

#[tokio::test]
async fn another_account_never_reads_or_stops_a_session() {
    let (store, caller, key, _) = acme_with_voice().await;
    let (_, started) = parts(start_session(&store, &key, "voice", None).await);
    let id = started["sessionId"].as_str().unwrap();
    let (globex, theirs) = store.account_with_key("globex").await;
    let not_found = json!({"error": "No session of that id for this agent", "code": "NOT_FOUND"});
    for agent_of_theirs in [false, true] {
        // First with no agent of the name in their account, then with one of their own.
        if agent_of_theirs {
            let image = json!({"image": "ghcr.io/globex/a:1"});
            ready_agent(&store, &globex, &theirs, "voice", image).await;
        }
        let (status, read) = read_session(&store, &theirs, "voice", id).await;
        assert_eq!(status, 404, "{read}");
        let (status, stopped) = stop(&store, &theirs, "voice", id).await;
        assert_eq!(status, 404, "{stopped}");
        if agent_of_theirs {
            assert_eq!((&read, &stopped), (&not_found, &not_found));
            assert_eq!(active_sessions(&store, &globex, &theirs, "voice").await, 0);
        }
    }
    let (_, session) = read_session(&store, &key, "voice", id).await;
    assert_eq!(session["status"], "starting", "untouched: {session}");
    assert!(session.get("stopRequestedAt").is_none(), "{session}");
    assert_eq!(active_sessions(&store, &caller, &key, "voice").await, 1);
}

#[tokio::test]
async fn a_stop_is_asked_for_once_and_answered_again() {
    use shared::session::SessionStore;

    let (store, caller, key, _) = acme_with_voice().await;
    let (_, started) = parts(start_session(&store, &key, "voice", None).await);
    let id = started["sessionId"].as_str().unwrap();
    let service = store
        .store
        .get_agent(&caller.namespace, "voice")
        .await
        .unwrap()
        .unwrap()
        .service_id;

    let (status, answer) = stop(&store, &key, "voice", id).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"status": "terminated", "sessionId": id}));
    let asked = store
        .store
        .get_session(&caller.namespace, &service, id)
        .await
        .unwrap()
        .unwrap();
    assert!(asked.stop_requested_at.is_some());
    assert!(asked.is_active(), "the data plane's report ends it");
    assert_eq!(active_sessions(&store, &caller, &key, "voice").await, 1);

    let (status, again) = stop(&store, &key, "voice", id).await;
    assert_eq!((status, &again), (200, &answer));
    let unchanged = store
        .store
        .get_session(&caller.namespace, &service, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(unchanged, asked, "asked once: nothing written again");
}

async fn list(
    store: &TestStore,
    key: &ApiKey,
    agent: &str,
    query: &[(&str, &str)],
) -> (u16, Value) {
    let request = integration_tests::sessions_list_request(key, agent, query);
    let cursor_key = &integration_tests::CURSOR_KEY;
    parts(
        list_sessions::handle(
            &store.store,
            &store.store,
            &store.store,
            cursor_key,
            request,
        )
        .await,
    )
}

#[tokio::test]
async fn an_agent_s_sessions_are_listed_newest_first_to_its_account_only() {
    let (store, _, key, public) = acme_with_voice().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (_, started) = parts(start_session(&store, &public, "voice", None).await);
        ids.push(started["sessionId"].as_str().unwrap().to_owned());
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    assert_eq!(stop(&store, &key, "voice", &ids[1]).await.0, 200);

    let (status, page) = list(&store, &key, "voice", &[("limit", "2")]).await;
    assert_eq!(status, 200, "{page}");
    let listed: Vec<&str> = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [ids[2].as_str(), ids[1].as_str()], "newest first");
    assert_eq!(page["total"], json!({"value": 3, "relation": "eq"}));
    let cursor = page["nextCursor"].as_str().expect("one more");
    let (_, rest) = list(&store, &key, "voice", &[("limit", "2"), ("cursor", cursor)]).await;
    assert_eq!(rest["sessions"][0]["sessionId"], ids[0].as_str());
    assert!(rest.get("nextCursor").is_none());

    let (_, theirs) = store.account_with_key("globex").await;
    let (status, answer) = list(&store, &theirs, "voice", &[]).await;
    assert_eq!((status, answer["code"].as_str()), (404, Some("NOT_FOUND")));
    let (status, answer) = list(&store, &theirs, "voice", &[("cursor", cursor)]).await;
    assert_eq!(
        (status, answer["field"].as_str()),
        (400, Some("cursor")),
        "another account's cursor opens nothing"
    );
    let (status, answer) = list(&store, &public, "voice", &[]).await;
    assert_eq!((status, answer["code"].as_str()), (403, Some("FORBIDDEN")));
}

#[tokio::test]
async fn deleting_an_agent_ends_its_sessions_agent_deleted() {
    let (store, caller, key, public) = acme_with_voice().await;
    let (_, started) = parts(start_session(&store, &public, "voice", None).await);
    let id = started["sessionId"].as_str().unwrap().to_owned();
    let service = store.service_of(&caller.namespace, "voice").await;
    let (status, _, _) = integration_tests::call(&store, &key, "DELETE", "voice", None).await;
    assert_eq!(status, 200);
    let session = store
        .store
        .get_session(&caller.namespace, &service, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.state, shared::session::SessionState::Ended);
    assert_eq!(session.completion_status.as_deref(), Some("agentDeleted"));
    assert!(
        session.expires_at.is_some(),
        "kept as long as the agent's lines"
    );
}

#[tokio::test]
async fn a_deleted_agent_s_session_ended_later_frees_nothing_of_a_new_agent_of_the_name() {
    use shared::session::SessionState;
    let (store, caller, key, public) = acme_with_voice().await;
    let (_, started) = parts(start_session(&store, &public, "voice", None).await);
    let old = started["sessionId"].as_str().unwrap().to_owned();
    let old_service = store.service_of(&caller.namespace, "voice").await;
    // The delete's end of the session fails (the store failed on it): it is left to the sweep.
    let faulty = shared::testing::faults::FailsOneSession::new(store.store.clone());
    let kept = shared::session::lifecycle::SessionRetention::days(30);
    let request = integration_tests::agent_request("DELETE", &key, "voice", None);
    let (status, _) =
        parts(delete_agent::handle(&store.store, &faulty, &store.store, kept, request).await);
    assert_eq!(status, 200);
    let read = |service: String, id: String| {
        let store = &store;
        let namespace = caller.namespace.clone();
        async move {
            let session = store.store.get_session(&namespace, &service, &id).await;
            session.unwrap().expect("the session")
        }
    };
    assert_eq!(
        read(old_service.clone(), old.clone()).await.state,
        SessionState::Starting
    );

    // A new agent of the name, with a session of its own, reported started.
    ready_agent(
        &store,
        &caller,
        &key,
        "voice",
        json!({"image": "ghcr.io/acme/a:2"}),
    )
    .await;
    let (_, started) = parts(start_session(&store, &public, "voice", None).await);
    let new = started["sessionId"].as_str().unwrap().to_owned();
    let report = json!({"namespace": caller.namespace, "agent": "voice", "sessionId": new,
        "state": "started", "observedAt": shared::timestamp::now_rfc3339_millis()});
    integration_tests::session_report(&store, report).await;
    assert_eq!(active_sessions(&store, &caller, &key, "voice").await, 1);

    // The old session ends: its data plane's report, then the sweep at its start's deadline.
    let report = json!({"namespace": caller.namespace, "agent": "voice", "sessionId": old,
        "state": "ended", "observedAt": shared::timestamp::now_rfc3339_millis()});
    integration_tests::session_report(&store, report).await;
    let past_start = time::OffsetDateTime::now_utc() + time::Duration::minutes(3);
    shared::session::lifecycle::sweep(&store.store, past_start, kept)
        .await
        .unwrap();
    let ended = read(old_service, old).await;
    assert!(
        !ended.is_active(),
        "the old session is over: {:?}",
        ended.state
    );
    assert_eq!(
        active_sessions(&store, &caller, &key, "voice").await,
        1,
        "the new agent's session still counts"
    );
    let new_service = store.service_of(&caller.namespace, "voice").await;
    assert_eq!(read(new_service, new).await.state, SessionState::Started);
}

#[test]
fn deployed_a_start_waits_ten_seconds_for_its_report_unless_told() {
    use integration_tests::template::{reference, template};
    let template = template();
    let wait = &template["Parameters"]["SessionStartWaitSeconds"];
    assert_eq!(wait["Default"].as_u64(), Some(10), "contract section 11");
    assert_eq!(
        wait["Default"].as_u64(),
        Some(shared::config::DEFAULT_SESSION_START_WAIT_SECONDS),
        "the function's own default is the template's"
    );
    let most = wait["MaxValue"].as_u64();
    assert_eq!(most, Some(shared::config::MAX_SESSION_START_WAIT_SECONDS));
    let function = &template["Resources"]["StartSessionFunction"]["Properties"];
    let variable = &function["Environment"]["Variables"]["SESSION_START_WAIT_SECONDS"];
    assert_eq!(reference(variable), Some("SessionStartWaitSeconds"));
    assert!(
        function["Timeout"].as_u64() > most,
        "the function outlives its longest wait"
    );
}
