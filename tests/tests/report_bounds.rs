//! What a data plane's report may carry, against DynamoDB Local through the status function
//! (contract section 7): a report dated outside the window is refused and counted, never
//! clamped into the order of the reports after it; a reported error is cut to its bounds, so
//! no report can grow the agent item past what DynamoDB stores.

use integration_tests::{TestStore, call, create_named_agent, report, update};
use serde_json::{Value, json};
use shared::agent::ReportOutcome;

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
