//! What a replica's failures and its log look like to the customer, through `make run`'s data
//! plane on the Docker Engine (contract section 12; a module of tests/e2e/dataplane.rs): a
//! crash after readiness is a crash loop, its figures are never stale, a session its agent
//! broke reads `agent_error`, and a flood of its log is stored once or counted.

use std::collections::BTreeSet;
use std::time::Duration;

use integration_tests::bounded::{self, Bound, Try};
use integration_tests::stack::Stack;
use reqwest::Method;
use serde_json::{Value, json};
use shared::auth::ApiKey;

use crate::dataplane_support::{
    example_image, put_secret, ready_agent, shared_data_plane, start, until,
};

/// The agent's `currentRevision.health` figure `name`.
fn health(agent: &Value, name: &str) -> u64 {
    agent["currentRevision"]["health"][name]
        .as_u64()
        .unwrap_or(0)
}

fn crash_loop(agent: &Value) -> bool {
    agent["errors"][0]["code"] == "CRASH_LOOP"
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn an_agent_that_crashes_after_it_is_ready_is_a_crash_loop_and_its_figures_keep_up() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (_, key) = stack.account("ready-crash").await;
    put_secret(&stack, &key, "flaky-env", "EXAMPLE_EXIT_AFTER_READY", "3").await;
    let body = json!({"serviceName": "flaky", "image": example_image(), "secretSet": "flaky-env",
                      "autoScaling": {"minAgents": 1, "maxAgents": 1}});
    let created = stack
        .send_as(&key, Method::POST, "/agents", Some(&body))
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);

    let failed = until(&stack, &key, "/agents/flaky", crash_loop).await;
    let message = failed["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("exited with code 3") && message.contains("after it was ready"),
        "{message}"
    );
    assert_eq!(failed["activeDeploymentReady"], false, "{failed}");
    assert_eq!(health(&failed, "lastExitCode"), 3, "{failed}");
    assert!(health(&failed, "restartCount") >= 2, "{failed}");
    // Backed off, it is started again: each start shows in the figures while it stays failed.
    let started = health(&failed, "replicasStarted");
    let later = until(&stack, &key, "/agents/flaky", |agent| {
        health(agent, "replicasStarted") > started
    })
    .await;
    assert!(crash_loop(&later), "still a crash loop: {later}");
    assert_eq!(
        later["activeDeploymentReady"], false,
        "never ready between crashes: {later}"
    );
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_session_its_agent_broke_reads_agent_error_and_the_filter_finds_it() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (_, key) = stack.account("broken").await;
    let body = json!({"serviceName": "breaker", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 2}});
    ready_agent(&stack, &key, &body).await;
    let started = start(
        &stack,
        &key,
        "breaker",
        json!({"durationSeconds": 1, "exitCode": 7}),
    )
    .await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    let path = format!("/agents/breaker/sessions/{id}");
    let ended = until(&stack, &key, &path, |s| s["status"] == "ended").await;
    assert_eq!(ended["completionStatus"], "agentError", "{ended}");
    assert_eq!(ended["endState"], "agent_error", "{ended}");
    let listed = stack
        .send_as(
            &key,
            Method::GET,
            "/agents/breaker/sessions?endState=agent_error",
            None,
        )
        .await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    let ids: Vec<&str> = listed.body["sessions"]
        .as_array()
        .map(|sessions| {
            sessions
                .iter()
                .filter_map(|s| s["sessionId"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(ids, [id.as_str()], "{:?}", listed.body);
}

/// The lines a flood's session stored, and what its marker lines say was dropped.
async fn flood_counted(stack: &Stack, key: &ApiKey, session: &str) -> (Vec<u64>, u64) {
    let (mut numbers, mut dropped) = (Vec::new(), 0);
    let mut cursor: Option<String> = None;
    for _ in 0..200 {
        let mut params = vec![
            ("sessionId", session.to_owned()),
            ("order", "asc".to_owned()),
            ("limit", "1000".to_owned()),
        ];
        if let Some(cursor) = &cursor {
            params.push(("cursor", cursor.clone()));
        }
        let page = stack.logs(key, "flooder", &params).await;
        assert_eq!(page.status, 200, "{:?}", page.body);
        for line in page.body["logs"].as_array().into_iter().flatten() {
            let text = line["log"].as_str().unwrap_or_default();
            if let Some(rest) = text.strip_prefix("flood ") {
                numbers.extend(rest.split(' ').next().and_then(|n| n.parse::<u64>().ok()));
            } else if let Some(marker) = text.strip_prefix("[agent-hosting] ") {
                dropped += (marker.split_once(" lines dropped"))
                    .and_then(|(count, _)| count.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        cursor = page.body["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            return (numbers, dropped);
        }
    }
    panic!("the walk of {session}'s lines did not end in 200 pages");
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_50_mb_flood_is_stored_once_or_counted_in_marker_lines_never_lost_unsaid() {
    const FLOOD: u64 = 500_000;
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (_, key) = stack.account("flood").await;
    let body = json!({"serviceName": "flooder", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 1}});
    ready_agent(&stack, &key, &body).await;
    // 500,000 numbered lines of about 100 bytes: 50 MB, past the json-file log's rotations.
    let started = start(
        &stack,
        &key,
        "flooder",
        json!({"logLines": FLOOD, "durationSeconds": 2}),
    )
    .await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    let path = format!("/agents/flooder/sessions/{id}");
    let bound = Bound::new(600, Duration::from_secs(300));
    bounded::until("the flood's session ended", bound, || async {
        let session = stack.send_as(&key, Method::GET, &path, None).await;
        match session.body["status"].as_str() {
            Some("ended") => Try::Done(()),
            other => Try::Again {
                why: format!("status {other:?}"),
                wait: Duration::from_millis(500),
            },
        }
    })
    .await;
    let bound = Bound::new(60, Duration::from_secs(120));
    let (numbers, dropped) = bounded::until("every line stored or counted", bound, || async {
        let (numbers, dropped) = flood_counted(&stack, &key, &id).await;
        if numbers.len() as u64 + dropped >= FLOOD {
            Try::Done((numbers, dropped))
        } else {
            Try::Again {
                why: format!("{} stored and {dropped} counted", numbers.len()),
                wait: Duration::from_secs(1),
            }
        }
    })
    .await;
    let unique: BTreeSet<u64> = numbers.iter().copied().collect();
    assert_eq!(unique.len(), numbers.len(), "no line stored twice");
    let counted = numbers.len() as u64 + dropped;
    assert!(
        (FLOOD..=FLOOD + 5).contains(&counted),
        "every line stored or counted (the markers count the agent's own few lines too): {} \
         stored, {dropped} counted",
        numbers.len()
    );
    assert!(
        numbers.len() >= 9_000,
        "the log limit's burst kept: {}",
        numbers.len()
    );
}
