//! The data plane's `Session Status` reports through the session status function on DynamoDB
//! Local (contract section 11): out of order, duplicated, for another account's session, for a
//! deleted agent. The session ends in the state the newest valid report says, its place is
//! freed once, and nothing else changes.

use integration_tests::{
    TestStore, acme_with_voice, parts, ready_agent, session_report, start_session,
};
use serde_json::{Value, json};
use shared::agent::AgentStore;
use shared::auth::{ApiKey, Principal};
use shared::session::report::SessionReportOutcome::{
    self, Applied, Settled, Stale, UnknownAgent, UnknownSession,
};

/// A report of `state` for the session, observed at second `second` of 10:00 today.
fn detail(owner: &Principal, agent: &str, id: &str, state: &str, second: u32) -> Value {
    let today = time::OffsetDateTime::now_utc().date();
    json!({"namespace": owner.namespace, "agent": agent, "sessionId": id, "state": state,
           "observedAt": format!("{today}T00:00:{second:02}Z")})
}

async fn started(store: &TestStore, key: &ApiKey, agent: &str) -> String {
    let (status, answer) = parts(start_session(store, key, agent, None).await);
    assert_eq!(status, 200, "{answer}");
    answer["sessionId"].as_str().unwrap().to_owned()
}

async fn read(store: &TestStore, key: &ApiKey, agent: &str, id: &str) -> Value {
    let request = integration_tests::session_request("GET", key, agent, id);
    let (status, session) =
        parts(get_session::handle(&store.store, &store.store, &store.store, request).await);
    assert_eq!(status, 200, "{session}");
    session
}

async fn count(store: &TestStore, owner: &Principal, agent: &str) -> u32 {
    let agent = store
        .store
        .get_agent(&owner.namespace, agent)
        .await
        .unwrap()
        .unwrap();
    agent.view().active_session_count
}

async fn outcomes(store: &TestStore, details: Vec<Value>) -> Vec<SessionReportOutcome> {
    let mut outcomes = Vec::new();
    for detail in details {
        outcomes.push(session_report(store, detail).await);
    }
    outcomes
}

#[tokio::test]
async fn reports_in_order_and_duplicated_move_a_session_once_each() {
    let (store, owner, key, _) = acme_with_voice().await;
    let id = started(&store, &key, "voice").await;
    let mut up = detail(&owner, "voice", &id, "started", 1);
    up["wsUrl"] = json!("wss://agent.example/s");
    up["botStartSeconds"] = json!(0.9);
    let mut down = detail(&owner, "voice", &id, "ended", 30);
    down["completionStatus"] = json!("hangup");

    assert_eq!(
        outcomes(&store, vec![up.clone(), up.clone()]).await,
        [Applied, Stale]
    );
    let session = read(&store, &key, "voice", &id).await;
    assert_eq!(
        (session["status"].as_str(), session["wsUrl"].as_str()),
        (Some("started"), Some("wss://agent.example/s"))
    );
    assert_eq!(count(&store, &owner, "voice").await, 1);

    let late_failure = detail(&owner, "voice", &id, "failed", 20);
    assert_eq!(
        outcomes(&store, vec![down.clone(), down, late_failure]).await,
        [Applied, Settled, Settled]
    );
    let session = read(&store, &key, "voice", &id).await;
    assert_eq!(session["status"], "ended");
    assert_eq!(session["completionStatus"], "hangup");
    assert_eq!(session["endState"], "completed");
    assert_eq!(session["botStartSeconds"], 0.9);
    assert!(
        session.get("wsUrl").is_none(),
        "what it connected with is dropped"
    );
    assert!(
        session["endedAt"]
            .as_str()
            .unwrap()
            .ends_with("T00:00:30.000Z")
    );
    assert_eq!(count(&store, &owner, "voice").await, 0, "freed once");

    use shared::session::SessionStore;
    let service = store
        .store
        .get_agent(&owner.namespace, "voice")
        .await
        .unwrap()
        .unwrap()
        .service_id;
    let kept = store
        .store
        .get_session(&owner.namespace, &service, &id)
        .await
        .unwrap()
        .unwrap();
    let ended_at = time::OffsetDateTime::parse(
        session["endedAt"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(
        kept.expires_at,
        Some((ended_at + time::Duration::days(30)).unix_timestamp()),
        "kept as long as its log lines, then expired by the table's TTL"
    );
}

#[tokio::test]
async fn an_end_reported_before_the_start_is_the_session_s_last_word() {
    let (store, owner, key, _) = acme_with_voice().await;
    let id = started(&store, &key, "voice").await;
    let reports = vec![
        detail(&owner, "voice", &id, "ended", 9),
        detail(&owner, "voice", &id, "started", 2),
    ];
    assert_eq!(outcomes(&store, reports).await, [Applied, Settled]);
    let session = read(&store, &key, "voice", &id).await;
    assert_eq!(session["status"], "ended");
    assert_eq!(count(&store, &owner, "voice").await, 0);
}

#[tokio::test]
async fn another_account_s_reports_never_reach_a_session() {
    let (store, owner, key, _) = acme_with_voice().await;
    let id = started(&store, &key, "voice").await;
    let (other, other_key) = store.account_with_key("globex").await;
    let reports = vec![
        detail(&other, "voice", &id, "ended", 5),
        detail(&owner, "other-agent", &id, "ended", 5),
    ];
    assert_eq!(
        outcomes(&store, reports).await,
        [UnknownAgent, UnknownAgent]
    );
    // globex has an agent of the same name: still not acme's session.
    ready_agent(
        &store,
        &other,
        &other_key,
        "voice",
        json!({"image": "ghcr.io/globex/a:1"}),
    )
    .await;
    let theirs = detail(&other, "voice", &id, "ended", 6);
    assert_eq!(outcomes(&store, vec![theirs]).await, [UnknownSession]);
    assert_eq!(read(&store, &key, "voice", &id).await["status"], "starting");
    assert_eq!(count(&store, &owner, "voice").await, 1);
    assert_eq!(count(&store, &other, "voice").await, 0);
}

#[tokio::test]
async fn a_deleted_agent_s_sessions_take_no_report_and_its_successor_keeps_its_count() {
    let (store, owner, key, _) = acme_with_voice().await;
    let id = started(&store, &key, "voice").await;
    let (status, _, _) = integration_tests::call(&store, &key, "DELETE", "voice", None).await;
    assert_eq!(status, 200);
    let report = detail(&owner, "voice", &id, "ended", 5);
    assert_eq!(outcomes(&store, vec![report.clone()]).await, [UnknownAgent]);

    ready_agent(
        &store,
        &owner,
        &key,
        "voice",
        json!({"image": "ghcr.io/acme/a:2"}),
    )
    .await;
    started(&store, &key, "voice").await;
    assert_eq!(outcomes(&store, vec![report]).await, [UnknownSession]);
    assert_eq!(
        count(&store, &owner, "voice").await,
        1,
        "the new agent's own session"
    );
}
