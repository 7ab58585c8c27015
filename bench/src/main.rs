//! `make bench`: one table of what a serverless user pays for, measured on this machine.
//!
//! - cold init of each function's release binary: from process start to its first poll of the
//!   Lambda Runtime API (served here, on loopback), median of BENCH_STARTS (default 21) starts,
//!   next to a hello-world lambda_runtime binary of the same profile;
//! - the first request after init (the first DynamoDB call and its connection included) and warm
//!   latency, p50 and p99 of BENCH_REQUESTS (default 200), for create and logs, on DynamoDB
//!   Local (DYNAMODB_ENDPOINT);
//! - stripped release binary sizes, native and (when `make build` made them) arm64.
//!
//! Items read per logs page are `make logs-cost`'s table; handler CPU is `cargo bench`.

mod runtime_api;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use runtime_api::RuntimeApi;
use shared::config::TableNames;
use shared::store::dynamodb::DynamoStore;
use shared::store::{AgentStore, LogStore, tables};

const FUNCTIONS: &[&str] = &["create-agent", "agent-logs", "ingest-logs", "authorizer"];
const BASELINE: &str = "hello-lambda";
const TIMEOUT: Duration = Duration::from_secs(20);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ is in the workspace")
        .to_path_buf()
}

fn release_binary(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    target.join("release").join(name)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The environment Lambda gives a function, plus the service's own configuration.
fn lambda_env(api: &RuntimeApi, tables: &TableNames, endpoint: &str) -> Vec<(String, String)> {
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
        ("DYNAMODB_ENDPOINT", endpoint.into()),
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

/// Process start to first poll, once.
async fn init_once(binary: &Path, tables: &TableNames, endpoint: &str) -> Duration {
    let mut api = RuntimeApi::start().await.expect("a loopback port");
    let env = lambda_env(&api, tables, endpoint);
    let started = Instant::now();
    let mut child = spawn(binary, env);
    let polled = api
        .poll(TIMEOUT)
        .await
        .unwrap_or_else(|| panic!("{} never polled", binary.display()));
    let _ = child.kill().await;
    polled - started
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

struct Latency {
    first: Duration,
    p50: Duration,
    p99: Duration,
    requests: usize,
}

/// Starts the function, then sends `events` one after another: the first one's time (cold
/// connection) and the rest's percentiles. Every answer must be a success of `expected` status.
async fn latency(
    binary: &Path,
    tables: &TableNames,
    endpoint: &str,
    events: Vec<Vec<u8>>,
    expected: u16,
) -> Latency {
    let mut api = RuntimeApi::start().await.expect("a loopback port");
    let env = lambda_env(&api, tables, endpoint);
    let _child = spawn(binary, env);
    api.poll(TIMEOUT).await.expect("the function polls");
    let mut times = Vec::with_capacity(events.len());
    for event in events {
        let sent = Instant::now();
        api.send(event);
        let (answered, error, body) = api.answer(TIMEOUT).await.expect("an answer");
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert!(
            !error && answer["statusCode"] == expected,
            "{}: {answer}",
            binary.display()
        );
        times.push(answered - sent);
    }
    let first = times.remove(0);
    let requests = times.len();
    times.sort_unstable();
    Latency {
        first,
        p50: percentile(&times, 0.50),
        p99: percentile(&times, 0.99),
        requests,
    }
}

fn event_file(name: &str) -> serde_json::Value {
    let path = workspace().join("events").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("an events/ fixture"))
        .expect("JSON")
}

fn size(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

fn megabytes(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1_000_000.0)
}

#[tokio::main]
async fn main() {
    let endpoint = std::env::var(shared::config::DYNAMODB_ENDPOINT)
        .expect("DYNAMODB_ENDPOINT: run through make bench, which starts DynamoDB Local");
    let starts = env_number("BENCH_STARTS", 21);
    let requests = env_number("BENCH_REQUESTS", 200);

    let client = shared::aws::dynamodb_client(Some(&endpoint)).await;
    let suffix = std::process::id();
    let tables = TableNames {
        agents: format!("bench-agents-{suffix}"),
        accounts: format!("bench-accounts-{suffix}"),
        logs: format!("bench-logs-{suffix}"),
    };
    tables::create_all(&client, &tables)
        .await
        .expect("bench tables on DynamoDB Local");
    let store = DynamoStore::new(client, tables.clone());

    // Cold init, interleaved so that a noisy moment hurts every binary alike.
    let mut binaries = vec![BASELINE];
    binaries.extend(FUNCTIONS);
    let mut inits: Vec<Vec<Duration>> = vec![Vec::new(); binaries.len()];
    for _ in 0..starts {
        for (index, name) in binaries.iter().enumerate() {
            inits[index].push(init_once(&release_binary(name), &tables, &endpoint).await);
        }
    }
    let medians: Vec<Duration> = inits
        .iter_mut()
        .map(|times| {
            times.sort_unstable();
            percentile(times, 0.5)
        })
        .collect();

    // Latency of create: the gateway's event, a new name each time.
    let create = event_file("create-agent.json");
    let create_events = (0..=requests)
        .map(|i| {
            let mut event = create.clone();
            event["body"] = serde_json::json!({"serviceName": format!("bench-{i}"),
                "image": "ghcr.io/acme/agent:1.0"})
            .to_string()
            .into();
            event.to_string().into_bytes()
        })
        .collect();
    let create_latency = latency(
        &release_binary("create-agent"),
        &tables,
        &endpoint,
        create_events,
        201,
    )
    .await;

    // Latency of logs: the gateway's event for demo-agent, with 1,000 lines stored.
    let logs = event_file("agent-logs.json");
    let namespace = logs["requestContext"]["authorizer"]["lambda"]["namespace"]
        .as_str()
        .expect("the fixture's namespace")
        .to_owned();
    let owner = shared::auth::Principal {
        account_id: "dev".into(),
        namespace: namespace.clone(),
    };
    let spec = shared::agent::AgentSpec::from_json(
        serde_json::json!({"serviceName": "demo-agent", "image": "ghcr.io/acme/agent:1.0"}),
    )
    .expect("a valid agent");
    let agent = shared::agent::Agent::new(&spec, &namespace, "2026-11-22T00:00:00.000Z");
    store
        .create_agent(&owner, &agent, None)
        .await
        .expect("the demo agent");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    let lines: Vec<shared::logs::LogLine> = (0..1_000u64)
        .map(|i| shared::logs::LogLine {
            namespace: namespace.clone(),
            agent: "demo-agent".into(),
            deployment_id: "demo-deployment".into(),
            session_id: Some("demo-session".into()),
            event_id: format!("{i:056}"),
            timestamp_nanos: now - 600_000_000_000 + i * 1_000_000,
            text: format!("bench line {i}: a typical agent log line of about this length"),
        })
        .collect();
    store.put_lines(&lines, 30).await.expect("the demo lines");
    let logs_events = (0..=requests)
        .map(|_| logs.to_string().into_bytes())
        .collect();
    let logs_latency = latency(
        &release_binary("agent-logs"),
        &tables,
        &endpoint,
        logs_events,
        200,
    )
    .await;

    let baseline = medians[0];
    println!(
        "Cold init (process start to first Runtime API poll), median of {starts} starts, release profile:\n"
    );
    println!("| binary | init median | vs hello-world |");
    println!("|---|---:|---:|");
    for (name, median) in binaries.iter().zip(&medians) {
        println!(
            "| {name} | {:.2} ms | {:.2}x |",
            millis(*median),
            median.as_secs_f64() / baseline.as_secs_f64()
        );
    }
    println!(
        "\nRequests through the Runtime API on DynamoDB Local ({} warm requests each):\n",
        create_latency.requests
    );
    println!("| request | first after init | warm p50 | warm p99 |");
    println!("|---|---:|---:|---:|");
    for (name, latency) in [
        ("create (POST /v1/agents)", &create_latency),
        (
            "logs page (GET .../logs, limit 5, 1,000 lines)",
            &logs_latency,
        ),
    ] {
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.2} ms |",
            millis(latency.first),
            millis(latency.p50),
            millis(latency.p99)
        );
    }
    println!("\nStripped release binaries:\n");
    println!("| binary | native x86_64 | arm64 bootstrap (make build) |");
    println!("|---|---:|---:|");
    for name in binaries {
        let native = size(&release_binary(name)).map_or("-".into(), megabytes);
        let arm = workspace()
            .join(".aws-sam/build")
            .read_dir()
            .ok()
            .and_then(|entries| {
                entries.flatten().find_map(|entry| {
                    let bootstrap = entry.path().join("bootstrap");
                    let function = entry.file_name().to_string_lossy().to_lowercase();
                    (function.replace("function", "") == name.replace('-', ""))
                        .then(|| size(&bootstrap))
                        .flatten()
                })
            })
            .map_or("-".into(), megabytes);
        println!("| {name} | {native} | {arm} |");
    }
}
