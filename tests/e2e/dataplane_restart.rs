//! A data plane killed mid-session (contract section 12, "Restarts"; a module of
//! tests/e2e/dataplane.rs): the stack's data plane is sent SIGKILL while a replica holds a
//! session, the stack's supervisor starts it again (scripts/stack.sh, stack_supervise), and the
//! session still ends as its agent says, once. It runs alone: the other tests of the suite use
//! the same data plane.

use std::process::Command;
use std::time::Duration;

use integration_tests::bounded::{self, Bound, Try};
use integration_tests::stack::Stack;
use serde_json::json;

use crate::dataplane_support::{
    containers, data_plane_alone, example_image, ready_agent, start, until, until_containers,
    until_replicas,
};

/// The PID the stack's supervisor wrote for the data plane it runs now.
fn data_plane_pid() -> Option<u32> {
    let file = std::env::var("STACK_DATA_PLANE_PID_FILE")
        .expect("STACK_DATA_PLANE_PID_FILE: scripts/stack.sh names it");
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// Whether `pid` names a process: asked of the kernel with signal 0, in the stack's PID
/// namespace (where the PID file's numbers are; /proc may be the host's).
fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Sends SIGKILL to the stack's data plane: it stops at once, holding whatever it held.
fn kill_data_plane() -> u32 {
    let pid = data_plane_pid().expect("the data plane's PID file names a PID");
    assert!(alive(pid), "the data plane {pid} runs before the kill");
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "kill -KILL {pid}");
    // Said to the stack: this exit was asked for (scripts/stack.sh, stack_unexpected_restarts).
    let kills = std::env::var("STACK_DATA_PLANE_KILLS")
        .expect("STACK_DATA_PLANE_KILLS: scripts/stack.sh names it");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&kills)
        .expect("the stack's kills file");
    std::io::Write::write_all(&mut file, format!("{pid}\n").as_bytes()).expect("written");
    pid
}

/// Waits (30 s at most) for the supervisor's next data plane; its PID.
async fn data_plane_back(killed: u32) -> u32 {
    let bound = Bound::new(120, Duration::from_secs(30));
    bounded::until("the data plane started again", bound, || async {
        match data_plane_pid() {
            Some(pid) if pid != killed && alive(pid) => Try::Done(pid),
            other => Try::Again {
                why: format!("the PID file names {other:?}"),
                wait: Duration::from_millis(250),
            },
        }
    })
    .await
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_data_plane_killed_while_a_replica_holds_a_session_adopts_it_and_the_session_ends_once() {
    let _alone = data_plane_alone().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("restarts").await;
    let ns = caller.namespace.as_str();
    let body = json!({"serviceName": "survivor", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 1}});
    ready_agent(&stack, &key, &body).await;
    let held = until_replicas(ns, "survivor", "one idle replica", |ids| ids.len() == 1).await;
    let replica_containers = containers(ns, "survivor");

    let started = start(&stack, &key, "survivor", json!({"durationSeconds": 8})).await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(started["status"], "started", "{started}");
    let killed = kill_data_plane();
    let back = data_plane_back(killed).await;

    let path = format!("/agents/survivor/sessions/{id}");
    let ended = until(&stack, &key, &path, |s| s["status"] == "ended").await;
    assert_eq!(
        ended["completionStatus"], "completed",
        "/bot answered 200 while the data plane was away: {ended}"
    );
    until_replicas(ns, "survivor", "the held replica replaced", |ids| {
        ids.len() == 1 && ids[0] != held[0]
    })
    .await;
    until_containers(
        ns,
        "survivor",
        "no container of the held replica left",
        |ids| ids.iter().all(|id| !replica_containers.contains(id)),
    )
    .await;

    let logs = format!("/agents/survivor/logs?sessionId={id}&order=asc&limit=100");
    let page = until(&stack, &key, &logs, |page| {
        page.to_string().contains("session ending")
    })
    .await;
    let endings = page["logs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|line| line["log"].as_str())
        .filter(|line| line.contains("session ending"))
        .count();
    assert_eq!(endings, 1, "the agent's lines, each once: {page}");
    let again = stack.send_as(&key, reqwest::Method::GET, &path, None).await;
    assert_eq!(again.body, ended, "the session ended once, never again");
    assert_eq!(
        data_plane_pid(),
        Some(back),
        "the restarted data plane still runs"
    );
}
