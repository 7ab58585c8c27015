//! What a data plane's report may carry, against DynamoDB Local through the status functions
//! (contract sections 7 and 11): a report dated outside the window is refused and counted, never
//! clamped into the order of the reports after it; a reported error is cut to its bounds, so
//! no report can grow the agent item past what DynamoDB stores; a member past its bound (names
//! no agent has, an id that is no UUID, a number no start takes) refuses the report, counted,
//! never an error for Lambda to retry into the failure queue, and the next report applies.

use integration_tests::{
    TestStore, acme_with_voice, call, create_named_agent, parts, report, session_report,
    start_session, update,
};
use serde_json::{Value, json};
use shared::agent::{AgentStore, ReportOutcome};
use shared::session::report::SessionReportOutcome;

fn detail(namespace: &str, deployment: &Value, state: &str, observed_at: &str) -> Value {
    json!({"namespace": namespace, "agent": "bot", "deploymentId": deployment, "state": state,
           "readyReplicas": u32::from(state == "ready"), "activeSessionCount": 0,
           "observedAt": observed_at})
}

#[tokio::test]
async fn a_report_dated_go_zero_time_is_refused_and_the_next_one_applies() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let created = create_named_agent(&store, &key, "bot").await;
    let deployment = &created["activeDeploymentId"];
    let ns = owner.namespace.as_str();
    for refused in [
        "0001-01-01T00:00:00Z",
        "1999-12-31T23:59:59Z",
        "2999-01-01T00:00:00Z",
    ] {
        assert_eq!(
            report(&store, detail(ns, deployment, "failed", refused)).await,
            ReportOutcome::Refused,
            "{refused}"
        );
    }
    let (_, _, unchanged) = call(&store, &key, "GET", "bot", None).await;
    assert_eq!(
        unchanged["errors"],
        json!([]),
        "a refused report changes nothing"
    );
    assert_eq!(
        report(
            &store,
            detail(ns, deployment, "ready", "2026-11-23T10:00:00Z")
        )
        .await,
        ReportOutcome::Applied
    );
    let (_, _, ready) = call(&store, &key, "GET", "bot", None).await;
    assert_eq!(ready["activeDeploymentReady"], true);
}

#[tokio::test]
async fn two_failures_of_250_kb_are_cut_and_the_agent_takes_later_reports() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let ns = owner.namespace.as_str();
    let created = create_named_agent(&store, &key, "bot").await;
    let first = created["activeDeploymentId"].clone();
    assert_eq!(
        report(&store, detail(ns, &first, "ready", "2026-11-23T10:00:00Z")).await,
        ReportOutcome::Applied
    );
    // The first deployment serves while the second rolls out: the agent item keeps a status for
    // each, and each fails with 250 KB of message.
    let (_, rolled) = update(
        &store,
        &key,
        "bot",
        &json!({"image": "ghcr.io/acme/agent:2.0"}),
    )
    .await;
    let second = rolled["activeDeploymentId"].clone();
    for (deployment, second_of_minute) in [(&second, 1), (&first, 2)] {
        let mut failed = detail(
            ns,
            deployment,
            "failed",
            &format!("2026-11-23T10:00:{second_of_minute:02}Z"),
        );
        failed["error"] = json!({"code": "E".repeat(300), "message": "m".repeat(250_000)});
        assert_eq!(report(&store, failed).await, ReportOutcome::Applied);
    }
    let (_, _, agent) = call(&store, &key, "GET", "bot", None).await;
    let error = &agent["errors"][0];
    assert_eq!(error["code"].as_str().unwrap().chars().count(), 64);
    assert!(error["code"].as_str().unwrap().ends_with(" [cut]"));
    assert_eq!(error["message"].as_str().unwrap().len(), 1024);
    assert!(error["message"].as_str().unwrap().ends_with(" [cut]"));
    // Later reports still land.
    assert_eq!(
        report(&store, detail(ns, &second, "ready", "2026-11-23T10:00:03Z")).await,
        ReportOutcome::Applied
    );
    let (_, _, ready) = call(&store, &key, "GET", "bot", None).await;
    assert_eq!(ready["activeDeploymentReady"], true);
    assert_eq!(ready["errors"], json!([]));
}

#[tokio::test]
async fn a_reports_restarts_replicas_and_exit_code_are_kept_and_counts_no_u32_holds_are_no_report()
{
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let ns = owner.namespace.as_str();
    let created = create_named_agent(&store, &key, "bot").await;
    let deployment = &created["activeDeploymentId"];
    let mut crashed = detail(ns, deployment, "failed", "2026-11-23T10:00:00Z");
    crashed["error"] = json!({"code": "CRASH_LOOP", "message": "the container exited with code 3"});
    for (member, past) in [
        ("restartCount", json!(-1)),
        ("restartCount", json!(1u64 << 32)),
        ("replicasStarted", json!(1.5)),
        ("lastExitCode", json!(1u64 << 31)),
        ("lastExitCode", json!("3")),
    ] {
        let mut bad = crashed.clone();
        bad[member] = past.clone();
        // Not a report at all (as a readyReplicas no u32 holds): the function's error, kept in
        // its failure queue where it can be read, and nothing applied.
        let outcome =
            deployment_status::handle(&store.store, integration_tests::status_event(bad)).await;
        assert!(outcome.is_err(), "{member} {past}: {outcome:?}");
    }
    crashed["restartCount"] = json!(2);
    crashed["replicasStarted"] = json!(3);
    crashed["lastExitCode"] = json!(3);
    assert_eq!(report(&store, crashed).await, ReportOutcome::Applied);
    let kept = store.store.get_agent(ns, "bot").await.unwrap().unwrap();
    let status = &kept.active.status;
    assert_eq!(
        (
            status.restart_count,
            status.replicas_started,
            status.last_exit_code
        ),
        (2, 3, Some(3)),
        "kept in the agent item as reported"
    );
    let (_, _, agent) = call(&store, &key, "GET", "bot", None).await;
    let health = &agent["currentRevision"]["health"];
    assert_eq!(
        (
            &health["restartCount"],
            &health["replicasStarted"],
            &health["lastExitCode"]
        ),
        (&json!(2), &json!(3), &json!(3)),
        "the agent's health, as the anchor's CLI reads it: {agent}"
    );
    // A report without them (a data plane from before) leaves the defaults.
    let ready = detail(ns, deployment, "ready", "2026-11-23T10:00:01Z");
    assert_eq!(report(&store, ready).await, ReportOutcome::Applied);
    let kept = store.store.get_agent(ns, "bot").await.unwrap().unwrap();
    let status = &kept.active.status;
    assert_eq!(
        (
            status.restart_count,
            status.replicas_started,
            status.last_exit_code
        ),
        (0, 0, None)
    );
}

/// Names no DynamoDB key can hold (a key's partition stops at 2 KB, its sort key at 1 KB) and
/// names the contract does not allow, each in the member it is sent in.
fn names_past_their_bounds() -> Vec<(&'static str, String)> {
    vec![
        ("namespace", "n".repeat(1 << 20)),
        ("agent", "a".repeat(100 * 1024)),
        ("agent", "Voice_Bot".into()),
        ("namespace", "a".repeat(64)),
    ]
}

#[tokio::test]
async fn a_deployment_report_naming_what_no_agent_has_is_refused_and_the_next_one_applies() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let created = create_named_agent(&store, &key, "bot").await;
    let deployment = &created["activeDeploymentId"];
    let ns = owner.namespace.as_str();
    let fresh = detail(ns, deployment, "ready", "2026-11-23T10:00:00Z");
    let mut refused: Vec<Value> = names_past_their_bounds()
        .into_iter()
        .map(|(member, value)| {
            let mut bad = fresh.clone();
            bad[member] = json!(value);
            bad
        })
        .collect();
    for id in ["d-1".to_owned(), "0".repeat(100 * 1024)] {
        refused.push(detail(ns, &json!(id), "ready", "2026-11-23T10:00:00Z"));
    }
    for bad in refused {
        // The handler's Ok: an Err would be retried into DeploymentStatusFailureQueue.
        assert_eq!(report(&store, bad).await, ReportOutcome::Refused);
    }
    let (_, _, unchanged) = call(&store, &key, "GET", "bot", None).await;
    assert_eq!(unchanged["activeDeploymentReady"], false);
    assert_eq!(report(&store, fresh).await, ReportOutcome::Applied);
}

/// A `Session Status` report of `state` for session `id` of acme's `voice`, observed now.
fn session_detail(namespace: &str, id: &str, state: &str) -> Value {
    json!({"namespace": namespace, "agent": "voice", "sessionId": id, "state": state,
           "observedAt": shared::timestamp::now_rfc3339_millis()})
}

async fn session(store: &TestStore, key: &shared::auth::ApiKey, id: &str) -> Value {
    let request = integration_tests::session_request("GET", key, "voice", id);
    let (status, session) =
        parts(get_session::handle(&store.store, &store.store, &store.store, request).await);
    assert_eq!(status, 200, "{session}");
    session
}

#[tokio::test]
async fn a_session_report_past_any_bound_is_refused_and_changes_nothing() {
    let (store, owner, key, _) = acme_with_voice().await;
    let (status, started) = parts(start_session(&store, &key, "voice", None).await);
    assert_eq!(status, 200, "{started}");
    let id = started["sessionId"].as_str().unwrap();
    let ns = owner.namespace.as_str();
    let fresh = session_detail(ns, id, "started");
    let past = "x".repeat(8 * 1024 + 1);
    let mut refused: Vec<Value> = names_past_their_bounds()
        .into_iter()
        .map(|(member, value)| (member, json!(value)))
        .chain([
            ("sessionId", json!("s-1")),
            ("sessionId", json!("0".repeat(100 * 1024))),
            ("botStartSeconds", json!(1e200)),
            ("botStartSeconds", json!(-1)),
            ("botStartSeconds", json!(14_400.001)),
            ("wsUrl", json!(past)),
            ("completionStatus", json!("c".repeat(65))),
        ])
        .map(|(member, value)| {
            let mut bad = fresh.clone();
            bad[member] = value;
            bad
        })
        .collect();
    let mut ended = session_detail(ns, id, "ended");
    ended["botStartSeconds"] = json!(-1);
    refused.push(ended);
    for bad in refused {
        // The handler's Ok: an Err would be retried into SessionStatusFailureQueue.
        assert_eq!(
            session_report(&store, bad).await,
            SessionReportOutcome::Refused
        );
    }
    let unchanged = session(&store, &key, id).await;
    assert_eq!(unchanged["status"], "starting");
    assert_eq!(unchanged["botStartSeconds"], Value::Null, "{unchanged}");

    let mut valid = fresh;
    valid["botStartSeconds"] = json!(14_400);
    assert_eq!(
        session_report(&store, valid).await,
        SessionReportOutcome::Applied
    );
    let started = session(&store, &key, id).await;
    assert_eq!(started["status"], "started");
    assert_eq!(started["botStartSeconds"], 14_400.0);
}
