//! A fake replica's agent: an HTTP server keeping the container contract and the test knobs of
//! examples/agent/agent.py, line for line where a scenario can tell (statuses, log lines).

use std::convert::Infallible;
use std::sync::{Arc, Weak};
use std::time::Duration;

use agent_holder::contract::{SESSION_ID_HEADER, TRANSPORT_HEADER};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::Shared;
use super::book::{Level, LogBook};
use crate::replica::{EnvVar, ExitReason, ReplicaId};

const DEFAULT_READY_AFTER: Duration = Duration::from_millis(300);
const MAX_DURATION_SECONDS: f64 = 600.0;
const DEFAULT_DURATION_SECONDS: f64 = 5.0;
const HOLD_AFTER_ALLOCATING: Duration = Duration::from_secs(5);
const EXIT_AFTER_READY: Duration = Duration::from_secs(1);

/// The knobs of a replica's environment.
pub(super) struct StartKnobs {
    /// `EXAMPLE_READY_AFTER_SECONDS`: `/readyz` answers 503 until then.
    pub ready_after: Duration,
    /// `EXAMPLE_EXIT_AT_START`: the process exits with it at start.
    pub exit_at_start: Option<i64>,
    /// `EXAMPLE_EXIT_AFTER_READY`: the process exits with it a second after it is ready.
    pub exit_after_ready: Option<i64>,
}

impl StartKnobs {
    pub fn of(env: &[EnvVar]) -> Self {
        let get = |name: &str| env.iter().rev().find(|var| var.name == name);
        let ready_after = get("EXAMPLE_READY_AFTER_SECONDS")
            .and_then(|var| var.value.trim().parse::<f64>().ok())
            .filter(|seconds| seconds.is_finite())
            .map_or(DEFAULT_READY_AFTER, |seconds| {
                Duration::from_secs_f64(seconds.max(0.0))
            });
        let code = |name| {
            get(name)
                .filter(|var| !var.value.is_empty())
                .and_then(|var| var.value.trim().parse().ok())
        };
        StartKnobs {
            ready_after,
            exit_at_start: code("EXAMPLE_EXIT_AT_START"),
            exit_after_ready: code("EXAMPLE_EXIT_AFTER_READY"),
        }
    }
}

/// One replica's agent, shared by its connections.
pub(super) struct Agent {
    pub id: ReplicaId,
    pub engine: Weak<Shared>,
    pub book: Arc<LogBook>,
    pub ready_at: Instant,
    /// `EXAMPLE_EXIT_AFTER_READY`.
    pub exit_after_ready: Option<i64>,
    pub memory_mib: u32,
    /// agent.py's `environment: ...` line.
    pub environment: String,
    /// Paused: nothing is answered while it is.
    pub frozen: tokio::sync::watch::Receiver<bool>,
}

impl Agent {
    /// Once it is not paused (never, for a replica paused until its stop).
    async fn thawed(&self) {
        let mut frozen = self.frozen.clone();
        let _ = frozen.wait_for(|frozen| !frozen).await;
    }

    /// The process exits: the engine stops this server, so the current request never answers.
    async fn exit(&self, reason: ExitReason) -> Response<Full<Bytes>> {
        if let Some(engine) = self.engine.upgrade() {
            engine.exit(&self.id, reason);
        }
        std::future::pending().await
    }
}

/// Serves until the task is aborted (the replica exits or is stopped), which drops the listener
/// and every connection.
pub(super) async fn serve(listener: TcpListener, agent: Arc<Agent>) {
    let mut tasks = JoinSet::new();
    let becoming_ready = agent.clone();
    tasks.spawn(async move {
        tokio::time::sleep_until(becoming_ready.ready_at).await;
        becoming_ready
            .book
            .write("become_ready", Level::Info, None, "ready");
        if let Some(code) = becoming_ready.exit_after_ready {
            tokio::time::sleep(EXIT_AFTER_READY).await;
            let text = format!("exiting with code {code} after it was ready");
            (becoming_ready.book).write("exit_ready", Level::Error, None, &text);
            becoming_ready.exit(ExitReason::Exited { code }).await;
        }
    });
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tasks.spawn(connection(stream, agent.clone()));
                }
                Err(error) => {
                    tracing::debug!(replica = %agent.id, %error, "fake agent accept failed");
                    // A full descriptor table: let connections end before accepting again.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = tasks.join_next() => {}
        }
    }
}

async fn connection(stream: TcpStream, agent: Arc<Agent>) {
    let service = service_fn(move |request| answer(agent.clone(), request));
    let served = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(error) = served {
        tracing::debug!(%error, "fake agent connection ended");
    }
}

async fn answer(
    agent: Arc<Agent>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    agent.thawed().await;
    let answered = answer_thawed(&agent, request).await;
    // Paused meanwhile (a session's request, held): the answer waits too.
    agent.thawed().await;
    Ok(answered)
}

async fn answer_thawed(agent: &Arc<Agent>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    match (&parts.method, parts.uri.path()) {
        (&Method::GET, "/readyz") if Instant::now() >= agent.ready_at => {
            document(StatusCode::OK, json!({"status": "ok"}))
        }
        (&Method::GET, "/readyz") => document(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "starting"}),
        ),
        (&Method::GET, "/livez") => document(StatusCode::OK, json!({"status": "ok"})),
        (&Method::POST, "/bot") => match parsed(&body) {
            Ok(members) => bot(agent, parts.headers, members).await,
            Err(refusal) => document(StatusCode::BAD_REQUEST, json!({"error": refusal})),
        },
        _ => document(StatusCode::NOT_FOUND, json!({"error": "not found"})),
    }
}

fn parsed(body: &[u8]) -> Result<Map<String, Value>, &'static str> {
    if body.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(members)) => Ok(members),
        Ok(_) => Err("the body is not a JSON object"),
        Err(_) => Err("the body is not JSON"),
    }
}

/// A session: agent.py's `bot`.
async fn bot(agent: &Agent, headers: HeaderMap, body: Map<String, Value>) -> Response<Full<Bytes>> {
    let header = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let session = header(SESSION_ID_HEADER).map(str::to_owned);
    let session = session.as_deref();
    let transport = header(TRANSPORT_HEADER).unwrap_or("none");
    let mut keys: Vec<&str> = body.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let started = format!(
        "session started transport={transport} body keys=[{}]",
        keys.join(", ")
    );
    agent.book.write("bot", Level::Info, session, &started);
    agent
        .book
        .write("bot", Level::Info, session, &agent.environment);
    if let Some(engine) = agent.engine.upgrade() {
        engine.record_bot_request(&agent.id, headers.clone(), Value::Object(body.clone()));
    }
    let knobs = match BotKnobs::of(&body) {
        Ok(knobs) => knobs,
        Err(refusal) => {
            let text = format!("refused: {refusal}");
            agent.book.write("bot", Level::Warning, session, &text);
            return document(StatusCode::BAD_REQUEST, json!({"error": refusal}));
        }
    };
    let Some(status) = knobs.status else {
        let refusal = "status must be an HTTP status (100 to 599)";
        return document(StatusCode::BAD_REQUEST, json!({"error": refusal}));
    };
    if let Some(count) = knobs.log_lines {
        agent.book.flood(count);
    }
    tokio::time::sleep(knobs.duration).await;
    if let Some(code) = knobs.exit_code {
        let text = format!("exiting with code {code} mid-session");
        agent.book.write("bot", Level::Error, session, &text);
        return agent.exit(ExitReason::Exited { code }).await;
    }
    if let Some(mib) = knobs.allocate_mib {
        let text = format!("allocating {mib} MiB");
        agent.book.write("bot", Level::Info, session, &text);
        // The kernel's OOM killer, for a fake: only the limit decides.
        if mib > i64::from(agent.memory_mib) {
            return agent.exit(ExitReason::OomKilled).await;
        }
        let text = format!("holding {mib} MiB");
        agent.book.write("bot", Level::Info, session, &text);
        tokio::time::sleep(HOLD_AFTER_ALLOCATING).await;
    }
    agent
        .book
        .write("bot", Level::Info, session, "session ending");
    document(status, json!({}))
}

/// The `/bot` body's knobs, refused as agent.py's `number_knob` refuses them.
struct BotKnobs {
    duration: Duration,
    exit_code: Option<i64>,
    allocate_mib: Option<i64>,
    /// `logLines`: numbered lines written at once on stdout.
    log_lines: Option<u64>,
    /// `None`: not an HTTP status.
    status: Option<StatusCode>,
}

impl BotKnobs {
    fn of(body: &Map<String, Value>) -> Result<Self, String> {
        let seconds = match body.get("durationSeconds") {
            None => DEFAULT_DURATION_SECONDS,
            Some(value) => value
                .as_f64()
                .ok_or("durationSeconds must be a number".to_owned())?,
        };
        let status = integer(body, "status")?.unwrap_or(200);
        Ok(BotKnobs {
            duration: Duration::from_secs_f64(seconds.clamp(0.0, MAX_DURATION_SECONDS)),
            exit_code: integer(body, "exitCode")?,
            allocate_mib: integer(body, "allocateMiB")?,
            log_lines: integer(body, "logLines")?.map(|n| n.max(0).unsigned_abs()),
            status: u16::try_from(status)
                .ok()
                .filter(|status| (100..=599).contains(status))
                .and_then(|status| StatusCode::from_u16(status).ok()),
        })
    }
}

fn integer(body: &Map<String, Value>, name: &str) -> Result<Option<i64>, String> {
    match body.get(name) {
        None => Ok(None),
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("{name} must be an integer")),
    }
}

fn document(status: StatusCode, document: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(document.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
