//! Sessions end to end (contract sections 11 and 12), through the stack and its data plane on the
//! Docker Engine running the example agent's image (`EXAMPLE_IMAGE`, built by scripts/e2e.sh),
//! driven by the anchor's own clients unchanged (PyPI pipecatcloud): the SDK's
//! `Session(agent, public_key).start()` gets a session id, its replica holding the agent's
//! `POST /bot`; the CLI's `pipecat cloud agent sessions` lists it; the agent's own lines read by
//! `sessionId`; a stop ends it and frees its place; a session never reported ended is ended by
//! the sweep at its deadline, and its replica stopped.

use std::process::Command;
use std::time::Duration;

use integration_tests::bounded::{self, Bound, Try};
use integration_tests::stack::{Answer, Stack, bearer};
use reqwest::Method;
use serde_json::{Value, json};
use shared::auth::{ApiKey, KeyKind};

/// The anchor's SDK and CLI, pointed at the stack with the variables their users set.
struct Anchor {
    python: String,
    cli: String,
    host: String,
}

impl Anchor {
    fn new(stack: &Stack) -> Self {
        let cli = std::env::var("PIPECAT_BIN").expect("PIPECAT_BIN: scripts/e2e.sh installs it");
        let python = std::path::Path::new(&cli).with_file_name("python");
        Anchor {
            python: python.to_string_lossy().into_owned(),
            cli,
            host: stack.api.trim_end_matches("/v1").to_owned(),
        }
    }

    /// `Session(agent, key, SessionParams(data=body)).start()`: its result, or its error's code.
    fn start(&self, agent: &str, public_key: &ApiKey, body: &Value) -> Result<Value, String> {
        let script = r#"
import asyncio, json, sys
from pipecatcloud.exception import AgentStartError
from pipecatcloud.session import Session, SessionParams
agent, key, data = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
try:
    result = asyncio.run(Session(agent, key, SessionParams(data=data)).start())
    print(json.dumps({"ok": result}))
except AgentStartError as error:
    print(json.dumps({"error": error.error_code}))
"#;
        let output = Command::new(&self.python)
            .args(["-c", script, agent, public_key.expose(), &body.to_string()])
            .env("PIPECAT_API_HOST", &self.host)
            .output()
            .expect("the anchor's SDK runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let answer: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|_| panic!("{output:?}"));
        match answer.get("ok") {
            Some(result) => Ok(result.clone()),
            None => Err(answer["error"].as_str().unwrap_or_default().to_owned()),
        }
    }

    /// `pipecat cloud agent sessions AGENT ARGS...` as JSON, with a private key.
    fn sessions(&self, key: &ApiKey, agent: &str, args: &[&str]) -> Value {
        let config = std::env::temp_dir().join(format!("pcc-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(&config, "").unwrap();
        let output = Command::new(&self.cli)
            .args(["cloud", "agent", "sessions", agent])
            .args(args)
            .env("PIPECAT_API_HOST", &self.host)
            .env(
                "PIPECAT_SERVICES_SESSIONS_PATH",
                "/v1/agents/{service}/sessions",
            )
            .env("PIPECAT_TOKEN", key.expose())
            .env("PIPECAT_ORG", "e2e")
            .env("PIPECAT_CONFIG_PATH", &config)
            .env("PIPECAT_OUTPUT", "json")
            .env("NO_COLOR", "1")
            .output()
            .expect("the anchor's CLI runs");
        let _ = std::fs::remove_file(&config);
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{output:?}"))
    }
}

async fn call(stack: &Stack, key: &ApiKey, method: Method, path: &str) -> Answer {
    stack
        .call(method, path, Some(&bearer(key)), |request| request)
        .await
}

/// Reads `path` until `done` holds of its answer (30 s at most).
async fn until(stack: &Stack, key: &ApiKey, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let bound = Bound::new(120, Duration::from_secs(30));
    bounded::until(path, bound, || async {
        let answer = call(stack, key, Method::GET, path).await;
        assert_eq!(answer.status, 200, "{path}: {:?}", answer.body);
        match done(&answer.body) {
            true => Try::Done(answer.body),
            false => Try::Again {
                why: answer.body.to_string(),
                wait: Duration::from_millis(250),
            },
        }
    })
    .await
}

/// Whether a page of lines holds one that `is` says is it.
fn has_line(page: &Value, is: impl Fn(&str) -> bool) -> bool {
    let lines = page["logs"].as_array().into_iter().flatten();
    lines.filter_map(|line| line["log"].as_str()).any(is)
}

/// The example agent's image, which the stack's data plane runs.
fn example_image() -> String {
    std::env::var("EXAMPLE_IMAGE").expect("EXAMPLE_IMAGE: scripts/e2e.sh builds the example agent")
}

/// An agent of the example image with room for two sessions of at most `max_seconds` and one
/// warm replica (so that a start answers `started`), reported ready by the data plane.
async fn ready_agent(stack: &Stack, key: &ApiKey, name: &str, max_seconds: u32) {
    let body = json!({"serviceName": name, "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 2},
                      "maxSessionDuration": max_seconds});
    let created = stack.create(key, &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    until(stack, key, &format!("/agents/{name}"), |agent| {
        agent["activeDeploymentReady"] == true
    })
    .await;
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn the_sdk_starts_a_session_the_cli_lists_it_and_a_stop_frees_its_place() {
    let stack = Stack::from_env();
    let anchor = Anchor::new(&stack);
    let (caller, key) = stack.account("sessions").await;
    let public = stack.key_of(&caller.account_id, KeyKind::Public).await;
    // Its sessions end long after the other test's sweep.
    ready_agent(&stack, &key, "voice", 3_600).await;

    // The example agent holds `/bot` that long (its most), unless stopped.
    let started = anchor
        .start("voice", &public, &json!({"durationSeconds": 600}))
        .expect("the SDK's start");
    let id = started["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    assert_eq!(started["status"], "started", "{started}");
    // A session asking for no transport: the agent's own, so nothing to connect with is made up.
    for detail in ["wsUrl", "token", "dailyRoom", "dailyToken"] {
        assert!(started.get(detail).is_none(), "{detail}: {started}");
    }
    let agent = call(&stack, &key, Method::GET, "/agents/voice").await;
    assert_eq!(agent.body["activeSessionCount"], 1);

    let listed = anchor.sessions(&key, "voice", &[]);
    let sessions = listed["sessions"]
        .as_array()
        .expect("the list, as the CLI printed it");
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], id.as_str());
    assert_eq!(sessions[0]["endState"], "active");
    let active = anchor.sessions(&key, "voice", &["--end-state", "active"]);
    assert_eq!(active["sessions"].as_array().map(Vec::len), Some(1));
    let one = anchor.sessions(&key, "voice", &["--id", &id]);
    assert_eq!(one["sessionId"], id.as_str(), "{one}");

    let logs = until(
        &stack,
        &key,
        &format!("/agents/voice/logs?sessionId={id}&order=asc"),
        |page| has_line(page, |line| line.contains("session started")),
    )
    .await;
    let first = logs["logs"][0]["log"].as_str().unwrap_or_default();
    assert!(
        first.contains("session started transport=none body keys=[durationSeconds]")
            && first.contains(&id),
        "the agent's own first line of the session, with the X-Daily-Session-Id it received: \
         {logs}"
    );
    assert!(
        logs["logs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|line| line["sessionId"] == id.as_str())
    );

    let path = format!("/agents/voice/sessions/{id}");
    let stopped = call(&stack, &key, Method::DELETE, &path).await;
    assert_eq!(stopped.status, 200);
    assert_eq!(
        stopped.body,
        json!({"status": "terminated", "sessionId": id})
    );
    let ended = until(&stack, &key, &path, |session| session["status"] == "ended").await;
    assert_eq!(ended["completionStatus"], "terminated");
    assert_eq!(ended["endState"], "terminated");
    assert!(ended.get("wsUrl").is_none(), "no address once it has ended");
    let agent = call(&stack, &key, Method::GET, "/agents/voice").await;
    assert_eq!(agent.body["activeSessionCount"], 0, "its place is free");
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_full_agent_answers_at_capacity_and_the_sweep_frees_what_is_never_reported_ended() {
    let stack = Stack::from_env();
    let anchor = Anchor::new(&stack);
    let (caller, key) = stack.account("capacity").await;
    let public = stack.key_of(&caller.account_id, KeyKind::Public).await;
    ready_agent(&stack, &key, "busy", 60).await;
    // The example agent holds these 10 minutes: longer than the agent's 60 s maximum.
    let long = json!({"durationSeconds": 600});
    for _ in 0..2 {
        anchor.start("busy", &public, &long).expect("a place");
    }
    assert_eq!(
        anchor.start("busy", &public, &long),
        Err("AGENT_AT_CAPACITY".to_owned()),
        "the SDK reads the contract's code"
    );
    let refused = stack
        .call(
            Method::POST,
            "/public/busy/start",
            Some(&bearer(&public)),
            |request| request.json(&json!({})),
        )
        .await;
    assert_eq!(refused.status, 429);
    assert!(refused.header("retry-after").is_some());

    // A sweep as the schedule would run it past the sessions' deadlines (60 s and the grace).
    let later = time::OffsetDateTime::now_utc() + time::Duration::minutes(7);
    let event = json!({"version": "0", "id": uuid::Uuid::new_v4().to_string(),
        "detail-type": "Scheduled Event", "source": "aws.events", "account": "000000000000",
        "time": later.format(&time::format_description::well_known::Rfc3339).unwrap(),
        "region": "us-east-1", "resources": [], "detail": {}});
    let function = std::env::var("STACK_SWEEPER_FUNCTION").expect("the stack names it");
    let swept = stack.invoke(&function, &event).await;
    assert!(swept["ended"].as_u64() >= Some(2), "{swept}");
    let expired = call(
        &stack,
        &key,
        Method::GET,
        "/agents/busy/sessions?status=ended",
    )
    .await;
    let sessions = expired.body["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{:?}", expired.body);
    assert!(sessions.iter().all(|s| s["completionStatus"] == "expired"));
    // The sweep asked the data plane to stop them: each agent got its SIGTERM mid-session.
    for session in sessions {
        let id = session["sessionId"].as_str().expect("a session id");
        let path = format!("/agents/busy/logs?sessionId={id}");
        until(&stack, &key, &path, |page| {
            has_line(page, |line| line.ends_with("stopping"))
        })
        .await;
    }
    let agent = call(&stack, &key, Method::GET, "/agents/busy").await;
    assert_eq!(agent.body["activeSessionCount"], 0);
    anchor
        .start("busy", &public, &json!({}))
        .expect("room again");
}
