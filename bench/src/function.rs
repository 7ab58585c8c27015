//! A function's release binary run as Lambda runs it, against the Runtime API the bench serves
//! on loopback: its init timed (process start to first poll), and its answers to events timed,
//! first after init and warm.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use shared::config::TableNames;

use crate::runtime_api::RuntimeApi;

const TIMEOUT: Duration = Duration::from_secs(20);

pub fn required_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} must be set (make bench sets it)"))
}

/// The environment Lambda gives a function, plus the service's own configuration.
pub fn lambda_env(api: &RuntimeApi, tables: &TableNames, endpoint: &str) -> Vec<(String, String)> {
    [
        ("AWS_LAMBDA_RUNTIME_API", api.address.to_string()),
        ("AWS_LAMBDA_FUNCTION_NAME", "bench".into()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256".into()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "bench".into()),
        ("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/bench".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "local".into()),
        ("AWS_SECRET_ACCESS_KEY", "local".into()),
        ("AGENTS_TABLE", tables.agents.clone()),
        ("ACCOUNTS_TABLE", tables.accounts.clone()),
        ("LOGS_TABLE", tables.logs.clone()),
        // The paged functions read their cursor secret at init, from moto's Secrets Manager
        // (scripts/with-moto.sh); builds of earlier commits read it from CURSOR_KEY.
        ("CURSOR_SECRET_ID", required_env("CURSOR_SECRET_ID")),
        (
            "SECRETS_MANAGER_ENDPOINT",
            required_env("SECRETS_MANAGER_ENDPOINT"),
        ),
        (
            "CURSOR_KEY",
            "bench-cursor-secret-of-32-bytes-or-more".into(),
        ),
        ("DYNAMODB_ENDPOINT", endpoint.into()),
        // No data plane reports here: a start answers at once, and its own work is what is timed.
        ("SESSION_START_WAIT_SECONDS", "0".into()),
        ("RUST_LOG", "warn".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn spawn(binary: &Path, env: Vec<(String, String)>) -> tokio::process::Child {
    tokio::process::Command::new(binary)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (build it with make bench)", binary.display()))
}

/// Starts `binary` with Lambda's environment and waits for its first poll: the running function
/// and its init time (process start to first poll).
pub async fn start(
    binary: &Path,
    tables: &TableNames,
    endpoint: &str,
) -> (RuntimeApi, tokio::process::Child, Duration) {
    let mut api = RuntimeApi::start().await.expect("a loopback port");
    let env = lambda_env(&api, tables, endpoint);
    let started = Instant::now();
    let child = spawn(binary, env);
    let polled = api
        .poll(TIMEOUT)
        .await
        .unwrap_or_else(|| panic!("{} never polled", binary.display()));
    (api, child, polled - started)
}

/// Process start to first poll, once.
pub async fn init_once(binary: &Path, tables: &TableNames, endpoint: &str) -> Duration {
    let (_, mut child, init) = start(binary, tables, endpoint).await;
    let _ = child.kill().await;
    init
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

pub struct Latency {
    /// Median over the cold starts.
    pub first: Duration,
    pub p50: Duration,
    pub p99: Duration,
}

/// Sends one event and times its answer, which must be a success of `expected` status.
pub async fn invoke(
    api: &mut RuntimeApi,
    binary: &Path,
    event: Vec<u8>,
    expected: u16,
) -> Duration {
    let sent = Instant::now();
    api.send(event);
    let (answered, error, body) = api.answer(TIMEOUT).await.expect("an answer");
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    assert!(
        !error && answer["statusCode"] == expected,
        "{}: {answer}",
        binary.display()
    );
    answered - sent
}

/// The first request after init, over `cold_starts` fresh processes per binary, then warm
/// requests on the last of them; each binary takes its events from its own list. Binaries take
/// turns (a cold start of each, then the next; a warm request to each, then the next), so that a
/// drift of the store (DynamoDB Local's JVM warming up) hurts every binary alike.
pub async fn latency(
    binaries: &[PathBuf],
    tables: &TableNames,
    endpoint: &str,
    events: Vec<Vec<Vec<u8>>>,
    expected: u16,
    cold_starts: usize,
) -> Vec<Latency> {
    let mut queues: Vec<_> = events.into_iter().map(Vec::into_iter).collect();
    let mut firsts = vec![Vec::new(); binaries.len()];
    let mut running = Vec::new();
    let rounds = cold_starts.max(1);
    for round in 0..rounds {
        running.clear();
        for (index, binary) in binaries.iter().enumerate() {
            let (mut api, child, _) = start(binary, tables, endpoint).await;
            let event = queues[index].next().expect("an event for each cold start");
            firsts[index].push(invoke(&mut api, binary, event, expected).await);
            // The last round's processes stay up for the warm requests.
            if round + 1 == rounds {
                running.push((api, child));
            }
        }
    }
    let mut times = vec![Vec::new(); binaries.len()];
    loop {
        let mut sent_any = false;
        for (index, (api, _)) in running.iter_mut().enumerate() {
            let Some(event) = queues[index].next() else {
                continue;
            };
            sent_any = true;
            times[index].push(invoke(api, &binaries[index], event, expected).await);
        }
        if !sent_any {
            break;
        }
    }
    firsts
        .into_iter()
        .zip(times)
        .map(|(mut firsts, mut times)| {
            firsts.sort_unstable();
            times.sort_unstable();
            Latency {
                first: percentile(&firsts, 0.50),
                p50: percentile(&times, 0.50),
                p99: percentile(&times, 0.99),
            }
        })
        .collect()
}

/// A store that accepts connections and never answers, on a free loopback port.
async fn black_hole() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let address = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{address}")
}

/// How long a create waits for its 503 when the store never answers (the SDK client's time
/// bounds; tests/tests/store_timeouts.rs asserts the answer, this times it), median of `runs`.
pub async fn time_to_unavailable(
    binary: &Path,
    tables: &TableNames,
    event: Vec<u8>,
    runs: usize,
) -> Duration {
    let endpoint = black_hole().await;
    let mut times = Vec::new();
    for _ in 0..runs {
        let (mut api, mut child, _) = start(binary, tables, &endpoint).await;
        times.push(invoke(&mut api, binary, event.clone(), 503).await);
        let _ = child.kill().await;
    }
    times.sort_unstable();
    percentile(&times, 0.50)
}
