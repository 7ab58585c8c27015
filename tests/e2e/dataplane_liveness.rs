//! A replica's holder answers the data plane only, and hands a session only to an agent that
//! shows life (contract section 12; a module of tests/e2e/dataplane.rs), through `make run`'s
//! data plane on the Docker Engine: an agent that claims a made-up session from its own holder
//! is refused (and the holder says so), a frozen idle replica (`docker pause`) is never handed
//! a session, and a replica frozen mid-session ends it `agentError`.

use integration_tests::stack::Stack;
use serde_json::json;
use shared::auth::ApiKey;

use crate::dataplane_support::{
    docker, example_image, inspect, ready_replica, shared_data_plane, start, until, until_replicas,
    until_session_line,
};

/// What the agent's own code can send its holder (127.0.0.1:18080 in the replica's network
/// namespace): a claim of a made-up session, with `argv[1]` as the bearer (none when empty).
/// Prints the status the holder answered.
const CLAIM: &str = r#"
import json, sys, urllib.request, urllib.error
body = json.dumps({"sessionId": "made-up", "body": {}}).encode()
request = urllib.request.Request("http://127.0.0.1:18080/session", data=body, method="POST",
                                 headers={"content-type": "application/json"})
if sys.argv[1]:
    request.add_header("authorization", "Bearer " + sys.argv[1])
try:
    print(urllib.request.urlopen(request, timeout=5).status)
except urllib.error.HTTPError as error:
    print(error.code)
"#;

/// Waits (bounded) until the agent wrote that it started `session`: its code runs it.
async fn until_agent_started(stack: &Stack, key: &ApiKey, agent: &str, session: &str) {
    let said = format!("{session} - session started");
    until_session_line(stack, key, agent, session, &said).await;
}

/// The holder container beside the agent container `agent`.
fn holder_of(agent: &str) -> String {
    inspect(agent)["Config"]["Labels"]["agent-hosting.holderId"]
        .as_str()
        .expect("the agent's container names its holder")
        .to_owned()
}

/// Pauses `container` until dropped (a test that fails leaves nothing frozen behind).
struct Frozen(String);

impl Frozen {
    fn new(container: &str) -> Self {
        docker(&["pause", container]);
        Self(container.to_owned())
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        // Gone already when the data plane stopped it: nothing to thaw.
        let _ = std::process::Command::new("docker")
            .args(["unpause", &self.0])
            .output();
    }
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn an_agent_that_claims_a_session_from_its_own_holder_is_refused_and_its_real_one_runs() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("claimer").await;
    let body = json!({"serviceName": "claimer", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 1}});
    let agent = &ready_replica(&stack, &key, &caller.namespace, &body).await;
    for bearer in ["", "forged-token"] {
        let status = docker(&["exec", agent, "python3", "-c", CLAIM, bearer]);
        assert_eq!(status.trim(), "401", "a claim with bearer {bearer:?}");
    }
    let holder_log = docker(&["logs", &holder_of(agent)]);
    assert!(
        holder_log.contains("without the holder's token refused"),
        "the holder says why it refused: {holder_log}"
    );

    let started = start(&stack, &key, "claimer", json!({"durationSeconds": 1})).await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(started["status"], "started", "{started}");
    let path = format!("/agents/claimer/sessions/{id}");
    let ended = until(&stack, &key, &path, |s| s["status"] == "ended").await;
    assert_eq!(ended["completionStatus"], "completed", "{ended}");
    until_agent_started(&stack, &key, "claimer", &id).await;
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_frozen_idle_replica_is_never_handed_a_session_a_live_one_runs_it() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("frozen-idle").await;
    let body = json!({"serviceName": "sleeper", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 2}});
    let frozen = ready_replica(&stack, &key, &caller.namespace, &body).await;
    let _frozen = Frozen::new(&frozen);

    let started = start(&stack, &key, "sleeper", json!({"durationSeconds": 2})).await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    // Run by a live agent: its code wrote the start, and the session ended as /bot answered.
    until_agent_started(&stack, &key, "sleeper", &id).await;
    let path = format!("/agents/sleeper/sessions/{id}");
    let ended = until(&stack, &key, &path, |s| s["status"] == "ended").await;
    assert_eq!(ended["completionStatus"], "completed", "{ended}");
    assert_eq!(
        ended["coldStart"], true,
        "another replica, started for it: {ended}"
    );
    until_replicas(
        &caller.namespace,
        "sleeper",
        "the frozen replica stopped",
        |ids| !ids.contains(&frozen),
    )
    .await;
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_replica_frozen_mid_session_ends_it_agent_error() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("frozen-busy").await;
    let body = json!({"serviceName": "freezer", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 1}});
    let replica = ready_replica(&stack, &key, &caller.namespace, &body).await;
    // Far longer than the holder's checks (3 misses, 5 s apart) take to give up on it.
    let started = start(&stack, &key, "freezer", json!({"durationSeconds": 600})).await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    until_agent_started(&stack, &key, "freezer", &id).await;
    let _frozen = Frozen::new(&replica);

    let path = format!("/agents/freezer/sessions/{id}");
    let ended = until(&stack, &key, &path, |s| s["status"] == "ended").await;
    // Within `until`'s minute: ended by the checks, well before its 600 s.
    assert_eq!(ended["completionStatus"], "agentError", "{ended}");
    assert_eq!(ended["endState"], "agent_error", "{ended}");
    let why = "[agent-hosting] the agent stopped answering";
    until_session_line(&stack, &key, "freezer", &id, why).await;
}
