//! What the dataplane suite's tests share (a module of tests/e2e/dataplane.rs): the stack's
//! example image and label, bounded reads of the API, and the engine read with the `docker`
//! command, as an operator would. One of its tests kills the stack's data plane: it runs alone,
//! the others together ([`shared_data_plane`], [`data_plane_alone`]).

use std::time::Duration;

use integration_tests::bounded::{self, Bound, Try};
pub use integration_tests::docker::docker;
use integration_tests::stack::Stack;
use reqwest::Method;
use serde_json::{Value, json};
use shared::auth::ApiKey;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The stack's data plane: read by the tests that only use it, written by the one that kills it.
static DATA_PLANE: RwLock<()> = RwLock::const_new(());

/// Held while a test uses the stack's data plane: no test kills it meanwhile.
pub async fn shared_data_plane() -> RwLockReadGuard<'static, ()> {
    DATA_PLANE.read().await
}

/// Held while a test kills the stack's data plane: no other test runs meanwhile.
pub async fn data_plane_alone() -> RwLockWriteGuard<'static, ()> {
    DATA_PLANE.write().await
}

/// The label naming the part of a replica a container is (the holder beside the agent).
const PART_LABEL: &str = "agent-hosting.part";

/// The example agent's image, as scripts/e2e.sh built it.
pub fn example_image() -> String {
    std::env::var("EXAMPLE_IMAGE").expect("EXAMPLE_IMAGE: scripts/e2e.sh builds the example agent")
}

/// The stack label the stack's data plane puts on its replicas.
pub fn stack_label() -> String {
    std::env::var("DATA_PLANE_STACK").expect("DATA_PLANE_STACK: scripts/e2e.sh names it")
}

/// Reads `path` until `done` holds of its answer (60 s at most: an image's first start).
pub async fn until(
    stack: &Stack,
    key: &ApiKey,
    path: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let bound = Bound::new(240, Duration::from_secs(60));
    stack
        .read_until(key, path, (bound, Duration::from_millis(250)), done)
        .await
}

/// Creates the agent `body` describes and waits until its deployment is reported ready.
pub async fn ready_agent(stack: &Stack, key: &ApiKey, body: &Value) -> Value {
    let created = stack
        .send_as(key, Method::POST, "/agents", Some(body))
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let name = body["serviceName"].as_str().expect("the agent's name");
    until(stack, key, &format!("/agents/{name}"), |agent| {
        agent["activeDeploymentReady"] == true
    })
    .await
}

/// Creates the agent `body` describes (one replica in its reserve) and waits until it is ready
/// and that replica runs: its agent container's id.
pub async fn ready_replica(stack: &Stack, key: &ApiKey, namespace: &str, body: &Value) -> String {
    ready_agent(stack, key, body).await;
    let name = body["serviceName"].as_str().expect("the agent's name");
    let ids = until_replicas(namespace, name, "its one replica", |ids| ids.len() == 1).await;
    ids[0].clone()
}

/// Reads `session`'s lines (the first 100, oldest first) until one contains `said`; that page.
pub async fn until_session_line(
    stack: &Stack,
    key: &ApiKey,
    agent: &str,
    session: &str,
    said: &str,
) -> Value {
    let path = format!("/agents/{agent}/logs?sessionId={session}&order=asc&limit=100");
    until(stack, key, &path, |page| {
        page["logs"].as_array().is_some_and(|lines| {
            (lines.iter()).any(|line| line["log"].as_str().is_some_and(|text| text.contains(said)))
        })
    })
    .await
}

/// The ids of the agent containers (a replica's holder left out) that run for this stack's
/// `agent` in `namespace`.
pub fn replicas(namespace: &str, agent: &str) -> Vec<String> {
    let format = format!("{{{{.ID}}}} {{{{.Label \"{PART_LABEL}\"}}}}");
    let listed = docker(&[
        "ps",
        "--no-trunc",
        "--format",
        &format,
        "--filter",
        &format!("label=agent-hosting.stack={}", stack_label()),
        "--filter",
        &format!("label=agent-hosting.namespace={namespace}"),
        "--filter",
        &format!("label=agent-hosting.agent={agent}"),
    ]);
    listed
        .lines()
        .filter_map(|line| match line.split_once(' ') {
            Some((_, "holder")) => None,
            Some((id, _)) => Some(id.to_owned()),
            None => Some(line.trim().to_owned()).filter(|id| !id.is_empty()),
        })
        .collect()
}

/// Every container of this stack's `agent` in `namespace` (holders too), in any state.
pub fn containers(namespace: &str, agent: &str) -> Vec<String> {
    docker(&[
        "ps",
        "-aq",
        "--no-trunc",
        "--filter",
        &format!("label=agent-hosting.stack={}", stack_label()),
        "--filter",
        &format!("label=agent-hosting.namespace={namespace}"),
        "--filter",
        &format!("label=agent-hosting.agent={agent}"),
    ])
    .split_whitespace()
    .map(str::to_owned)
    .collect()
}

/// `docker inspect` of one container, as JSON.
pub fn inspect(id: &str) -> Value {
    let text = docker(&["inspect", id]);
    let all: Value = serde_json::from_str(&text).expect("docker inspect prints JSON");
    all[0].clone()
}

/// Waits until the agent's running containers satisfy `done`; answers their ids.
pub async fn until_replicas(
    namespace: &str,
    agent: &str,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    until_listed(|| replicas(namespace, agent), "running", what, done).await
}

/// Waits until every container of the agent (holders and stopped ones too) satisfies `done`;
/// answers their ids.
pub async fn until_containers(
    namespace: &str,
    agent: &str,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    until_listed(|| containers(namespace, agent), "containers", what, done).await
}

/// Waits (bounded) until the ids `list` gives satisfy `done`; answers them.
async fn until_listed(
    list: impl Fn() -> Vec<String>,
    noun: &str,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let bound = Bound::new(240, Duration::from_secs(60));
    bounded::until(what, bound, || async {
        let ids = list();
        match done(&ids) {
            true => Try::Done(ids),
            false => Try::Again {
                why: format!("{} {noun}: {ids:?}", ids.len()),
                wait: Duration::from_millis(250),
            },
        }
    })
    .await
}

pub async fn put_secret(stack: &Stack, key: &ApiKey, set: &str, name: &str, value: &str) {
    let body = json!({"secretKey": name, "secretValue": value});
    let put = stack
        .send_as(key, Method::PUT, &format!("/secrets/{set}"), Some(&body))
        .await;
    assert!(matches!(put.status, 200 | 201), "{:?}", put.body);
}

pub async fn start(stack: &Stack, key: &ApiKey, agent: &str, body: Value) -> Value {
    let path = format!("/public/{agent}/start");
    let started = stack
        .send_as(key, Method::POST, &path, Some(&json!({"body": body})))
        .await;
    assert_eq!(started.status, 200, "{:?}", started.body);
    started.body
}

/// Starts a session of `agent` with `body` and waits for its end: the session, and its lines.
pub async fn session_to_its_end(
    stack: &Stack,
    key: &ApiKey,
    agent: &str,
    body: Value,
) -> (Value, String) {
    let started = start(stack, key, agent, body).await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    let path = format!("/agents/{agent}/sessions/{id}");
    let ended = until(stack, key, &path, |s| s["status"] == "ended").await;
    let logs = format!("/agents/{agent}/logs?sessionId={id}&order=asc&limit=100");
    let lines = until(stack, key, &logs, |page| {
        page.to_string().contains("[agent-hosting]")
    })
    .await;
    (ended, lines.to_string())
}
