//! The fake's replicas keep the example agent's knobs, through the contract's own client.

use agent_holder::contract::{self, BotOutcome, BotRequest, HeldSession};
use agent_holder::{HolderState, Outcome, client};
use futures_util::StreamExt;
use serde_json::json;
use tokio::time::timeout;

use super::*;
use crate::replica::{EnvVar, HolderSettings, Limits, NodeType, ReplicaLabels};

const BOUND: Duration = Duration::from_secs(10);
const SESSION: &str = "0198c0de-0000-7000-8000-0000000000aa";

fn spec(stack: &str, image: &str, env: &[(&str, &str)]) -> ReplicaSpec {
    let mut vars = vec![("PORT", "8080")];
    vars.extend_from_slice(env);
    ReplicaSpec {
        labels: ReplicaLabels {
            stack: stack.into(),
            namespace: "acme".into(),
            agent: "helper".into(),
            service_id: "service-1".into(),
            deployment_id: "deployment-1".into(),
        },
        image: image.into(),
        pull: None,
        limits: Limits {
            cpu_millis: 500,
            memory_mib: 1024,
            pids: 4096,
        },
        node_type: NodeType::Arm,
        env: vars
            .into_iter()
            .map(|(name, value)| EnvVar {
                name: name.into(),
                value: value.into(),
            })
            .collect(),
        holder: HolderSettings::new(agent_holder::Checks::default()),
    }
}

/// A replica ready at once.
async fn ready_replica(engine: &FakeEngine) -> (ReplicaId, SocketAddr) {
    let spec = spec(
        "run-9000",
        EXAMPLE_IMAGE,
        &[
            ("EXAMPLE_READY_AFTER_SECONDS", "0"),
            ("OPENAI_API_KEY", "sk-secret"),
        ],
    );
    let id = engine.run(&spec).await.unwrap();
    (id.clone(), view(engine, &id).await.address.unwrap())
}

async fn view(engine: &FakeEngine, id: &ReplicaId) -> ReplicaView {
    let views = engine.list("run-9000").await.unwrap();
    views.into_iter().find(|view| &view.id == id).unwrap()
}

async fn session(addr: SocketAddr, body: serde_json::Value) -> HeldSession {
    let request = BotRequest {
        session_id: SESSION.into(),
        body,
        transport: Some(shared::session::Transport::Websocket.name().to_owned()),
        room: None,
    };
    timeout(BOUND, contract::hand_over(addr, &request))
        .await
        .unwrap()
        .unwrap()
}

async fn outcome(addr: SocketAddr, body: serde_json::Value) -> BotOutcome {
    timeout(BOUND, session(addr, body).await.outcome())
        .await
        .unwrap()
}

fn closed() -> BotOutcome {
    BotOutcome::AgentError {
        reason: "the connection closed before an answer".into(),
    }
}

/// The texts of the replica's lines so far (the stream stops following once they are read).
async fn lines(engine: &FakeEngine, id: &ReplicaId) -> Vec<String> {
    let mut stream = engine.logs(id, None);
    let mut texts = Vec::new();
    while let Ok(Some(line)) = timeout(Duration::from_millis(200), stream.next()).await {
        texts.push(line.unwrap().text);
    }
    texts
}

#[tokio::test]
async fn readyz_answers_503_until_example_ready_after_seconds_then_200() {
    let engine = FakeEngine::new();
    let late = engine
        .run(&spec(
            "run-9000",
            EXAMPLE_IMAGE,
            &[("EXAMPLE_READY_AFTER_SECONDS", "3600")],
        ))
        .await
        .unwrap();
    let late_addr = view(&engine, &late).await.address.unwrap();
    assert!(!contract::is_ready(late_addr).await);
    let (soon, addr) = ready_replica(&engine).await;
    assert!(contract::is_ready(addr).await);
    assert_eq!(view(&engine, &soon).await.status, ReplicaStatus::Running);
    let texts = lines(&engine, &soon).await;
    assert!(texts[0].ends_with("| NONE - starting"), "{texts:?}");
    // The secret set's names, never their values; PORT and EXAMPLE_ left out.
    assert!(
        texts[1].ends_with("NONE - environment: OPENAI_API_KEY"),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|text| text.ends_with("NONE - ready")),
        "{texts:?}"
    );
    assert!(texts.iter().all(|text| !text.contains("sk-secret")));
}

#[tokio::test]
async fn example_exit_at_start_exits_at_once_with_that_code() {
    let engine = FakeEngine::new();
    let id = engine
        .run(&spec(
            "run-9000",
            EXAMPLE_IMAGE,
            &[("EXAMPLE_EXIT_AT_START", "3")],
        ))
        .await
        .unwrap();
    let replica = view(&engine, &id).await;
    assert_eq!(
        replica.status,
        ReplicaStatus::Exited(ExitReason::Exited { code: 3 })
    );
    assert_eq!(replica.address, None);
    assert!(engine.specs().is_empty());
    let texts = lines(&engine, &id).await;
    assert!(texts.last().unwrap().contains("| ERROR    |"), "{texts:?}");
    assert!(
        texts
            .last()
            .unwrap()
            .ends_with("exiting at start with code 3"),
        "{texts:?}"
    );
}

#[tokio::test]
async fn another_image_fails_to_pull_with_the_registrys_message() {
    let engine = FakeEngine::new();
    let failed = engine
        .run(&spec("run-9000", "ghcr.io/acme/helper:1.2", &[]))
        .await;
    let Err(RunError::PullFailed { message }) = failed else {
        panic!("{failed:?}")
    };
    assert_eq!(
        message,
        "pull access denied for ghcr.io/acme/helper, repository does not exist or may require 'docker login'"
    );
    assert_eq!(engine.run_count(), 1);
    assert!(engine.list("run-9000").await.unwrap().is_empty());
}

#[tokio::test]
async fn the_late_unpullable_image_runs_then_is_listed_exited_pull_failed() {
    let engine = FakeEngine::new();
    let id = engine
        .run(&spec("run-9000", LATE_UNPULLABLE_IMAGE, &[]))
        .await
        .unwrap();
    let listed = engine.list("run-9000").await.unwrap();
    let replica = listed.iter().find(|view| view.id == id).unwrap();
    let ReplicaStatus::Exited(ExitReason::PullFailed { message }) = &replica.status else {
        panic!("{:?}", replica.status)
    };
    assert!(
        message.starts_with("pull access denied for agent-hosting.local/late-unpullable,"),
        "{message}"
    );
    assert_eq!(replica.address, None);
}

#[tokio::test]
async fn a_session_is_answered_200_after_its_duration_and_logged_under_its_id() {
    let engine = FakeEngine::new();
    let (id, addr) = ready_replica(&engine).await;
    let body = json!({"durationSeconds": 0, "greeting": "hi"});
    assert_eq!(outcome(addr, body.clone()).await, BotOutcome::Completed);
    let requests = engine.bot_requests(&id);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].0.get("x-daily-session-id").unwrap(), SESSION);
    assert_eq!(requests[0].1, body);
    let texts = lines(&engine, &id).await;
    let started = format!(
        "| {SESSION} - session started transport=websocket body keys=[durationSeconds, greeting]"
    );
    assert!(
        texts.iter().any(|text| text.ends_with(&started)),
        "{texts:?}"
    );
    assert!(
        texts
            .last()
            .unwrap()
            .ends_with(&format!("| {SESSION} - session ending")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn status_answers_with_that_status_and_a_bad_knob_is_refused() {
    let engine = FakeEngine::new();
    let (_, addr) = ready_replica(&engine).await;
    let answered = |status: &str| BotOutcome::AgentError {
        reason: format!("answered {status}"),
    };
    assert_eq!(
        outcome(addr, json!({"durationSeconds": 0, "status": 503})).await,
        answered("503")
    );
    assert_eq!(
        outcome(addr, json!({"durationSeconds": "soon"})).await,
        answered("400")
    );
    assert_eq!(outcome(addr, json!({"status": 700})).await, answered("400"));
}

#[tokio::test]
async fn exit_code_exits_mid_session_without_an_answer() {
    let engine = FakeEngine::new();
    let (id, addr) = ready_replica(&engine).await;
    assert_eq!(
        outcome(addr, json!({"durationSeconds": 0, "exitCode": 7})).await,
        closed()
    );
    assert_eq!(
        view(&engine, &id).await.status,
        ReplicaStatus::Exited(ExitReason::Exited { code: 7 })
    );
    assert!(!contract::is_ready(addr).await, "the server stopped");
}

#[tokio::test]
async fn allocate_mib_over_the_memory_limit_is_killed_for_memory() {
    let engine = FakeEngine::new();
    let (id, addr) = ready_replica(&engine).await;
    assert_eq!(
        outcome(addr, json!({"durationSeconds": 0, "allocateMiB": 1025})).await,
        closed()
    );
    assert_eq!(
        view(&engine, &id).await.status,
        ReplicaStatus::Exited(ExitReason::OomKilled)
    );
}

#[tokio::test]
async fn allocate_mib_within_the_memory_limit_holds_then_completes() {
    let engine = FakeEngine::new();
    let (id, addr) = ready_replica(&engine).await;
    let body = json!({"durationSeconds": 0, "allocateMiB": 1024});
    assert_eq!(outcome(addr, body).await, BotOutcome::Completed);
    assert_eq!(view(&engine, &id).await.status, ReplicaStatus::Running);
}

#[tokio::test]
async fn list_shows_the_stacks_replicas_only() {
    let engine = FakeEngine::new();
    let (mine, _) = ready_replica(&engine).await;
    engine
        .run(&spec("run-9100", EXAMPLE_IMAGE, &[]))
        .await
        .unwrap();
    let ids: Vec<ReplicaId> = engine
        .list("run-9000")
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.id)
        .collect();
    assert_eq!(ids, vec![mine]);
    assert_eq!(engine.list("run-9100").await.unwrap().len(), 1);
    assert_eq!(engine.specs().len(), 2);
    assert_eq!(engine.run_count(), 2);
}

#[tokio::test]
async fn stop_removes_the_replica_ends_its_logs_and_is_idempotent() {
    let engine = FakeEngine::new();
    let (id, _) = ready_replica(&engine).await;
    let following = tokio::spawn(engine.logs(&id, None).collect::<Vec<_>>());
    engine.stop(&id, Duration::ZERO).await.unwrap();
    engine.stop(&id, Duration::ZERO).await.unwrap();
    engine
        .stop(&ReplicaId("fake-unknown".into()), Duration::ZERO)
        .await
        .unwrap();
    assert!(engine.list("run-9000").await.unwrap().is_empty());
    let followed = timeout(BOUND, following).await.unwrap().unwrap();
    assert!(
        followed
            .last()
            .unwrap()
            .as_ref()
            .unwrap()
            .text
            .ends_with("NONE - stopping")
    );
    let unknown = engine.logs(&id, None).collect::<Vec<_>>().await;
    assert!(
        matches!(unknown[..], [Err(EngineError::NoSuchReplica(_))]),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn logs_since_leave_out_the_earlier_lines() {
    let engine = FakeEngine::new();
    let (id, addr) = ready_replica(&engine).await;
    let mut stream = engine.logs(&id, None);
    let first = timeout(BOUND, stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome(addr, json!({"durationSeconds": 0})).await,
        BotOutcome::Completed
    );
    let since = OffsetDateTime::now_utc();
    assert!(first.at < since);
    let later = engine.logs(&id, Some(since));
    engine.stop(&id, Duration::ZERO).await.unwrap();
    let later = timeout(BOUND, later.collect::<Vec<_>>()).await.unwrap();
    let texts: Vec<String> = later.into_iter().map(|line| line.unwrap().text).collect();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].ends_with("stopping"));
}

#[tokio::test]
async fn kill_mid_session_drops_the_held_connection() {
    let engine = FakeEngine::new();
    let (id, addr) = ready_replica(&engine).await;
    let held = session(addr, json!({"durationSeconds": 600})).await;
    engine.kill(&id, ExitReason::Lost);
    assert_eq!(timeout(BOUND, held.outcome()).await.unwrap(), closed());
    assert_eq!(
        view(&engine, &id).await.status,
        ReplicaStatus::Exited(ExitReason::Lost)
    );
    assert!(engine.specs().is_empty());
}

#[tokio::test]
async fn stop_mid_session_drops_the_held_connection() {
    let engine = FakeEngine::new();
    let (id, addr) = ready_replica(&engine).await;
    let held = session(addr, json!({"durationSeconds": 600})).await;
    engine.stop(&id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(timeout(BOUND, held.outcome()).await.unwrap(), closed());
}

#[tokio::test]
async fn dropping_the_engine_stops_its_replicas() {
    let engine = FakeEngine::new();
    let (id, addr) = ready_replica(&engine).await;
    let held = session(addr, json!({"durationSeconds": 600})).await;
    let following = engine.logs(&id, None);
    drop(engine);
    assert_eq!(timeout(BOUND, held.outcome()).await.unwrap(), closed());
    assert!(timeout(BOUND, following.collect::<Vec<_>>()).await.is_ok());
}

/// The holder's state once it says `ended`, by its long poll.
async fn holder_ended(holder: &agent_holder::Endpoint) -> HolderState {
    timeout(BOUND, async {
        loop {
            let state = client::state(holder, Duration::from_secs(2)).await.unwrap();
            if matches!(state, HolderState::Ended { .. }) {
                return state;
            }
        }
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn its_holder_hands_the_session_to_its_agent_and_outlives_the_agents_exit() {
    let engine = FakeEngine::new();
    let (id, _) = ready_replica(&engine).await;
    let holder = view(&engine, &id).await.holder.unwrap();
    let request = BotRequest {
        session_id: SESSION.into(),
        body: json!({"durationSeconds": 600}),
        transport: None,
        room: None,
    };
    client::hand_over(&holder, &request).await.unwrap();
    assert_eq!(engine.bot_requests(&id).len(), 1);
    engine.kill(&id, ExitReason::Exited { code: 3 });
    let state = holder_ended(&holder).await;
    assert!(
        matches!(&state, HolderState::Ended { session_id, outcome: Outcome::AgentError, .. } if session_id == SESSION),
        "{state:?}"
    );
    engine.stop(&id, Duration::from_secs(1)).await.unwrap();
    assert!(client::state(&holder, Duration::ZERO).await.is_err());
}
