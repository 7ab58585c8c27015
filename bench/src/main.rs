//! `make bench`: one table of what a serverless user pays for, measured on this machine.
//!
//! - cold init of each function's release binary: from process start to its first poll of the
//!   Lambda Runtime API (served here, on loopback), median of BENCH_STARTS (default 21) starts,
//!   next to a hello-world lambda_runtime binary of the same profile (`hello-lambda`, with
//!   lambda_runtime's own `#[tokio::main]`), the same on the current-thread runtime the functions
//!   use (`hello-current-thread`), and that with the service's DynamoDB client built at init
//!   (`hello-dynamodb`: the floor once the AWS SDK is in); a baseline build's are measured when
//!   it has them;
//! - the first request after init (the first DynamoDB call and its connection included), median
//!   of BENCH_COLD_STARTS (default 11) cold starts, and warm latency, p50 and p99 of
//!   BENCH_REQUESTS (default 200), for create and logs, on DynamoDB Local (DYNAMODB_ENDPOINT);
//! - stripped release binary sizes, native and (when `make build` made them) arm64.
//!
//! With `BENCH_BASELINE=dir` (binaries of the same names, e.g. built at an earlier commit by
//! `make bench BASELINE=rev`), every figure is also taken for those, in the same run and
//! interleaved, so an optimisation's before and after are measured under the same conditions.
//!
//! Items read per logs page are `make logs-cost`'s table; handler CPU is `cargo bench`.

mod runtime_api;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use runtime_api::RuntimeApi;
use shared::agent::AgentStore;
use shared::config::TableNames;
use shared::logs::LogStore;
use shared::store::dynamodb::DynamoStore;
use shared::store::tables;

const FUNCTIONS: &[&str] = &["create-agent", "agent-logs", "ingest-logs", "authorizer"];
/// What the functions' init is compared with, each a column of ratios: lambda_runtime's own
/// hello-world (`#[tokio::main]`), the same on the functions' current-thread runtime, and that
/// with the service's DynamoDB client built at init.
const BASELINES: [&str; 3] = ["hello-lambda", "hello-current-thread", "hello-dynamodb"];
const TIMEOUT: Duration = Duration::from_secs(20);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ is in the workspace")
        .to_path_buf()
}

/// A set of binaries under test: this tree's release build, or the baseline's.
struct Build {
    label: String,
    dir: PathBuf,
}

impl Build {
    fn binary(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn required_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} must be set (make bench sets it)"))
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
async fn start(
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
async fn init_once(binary: &Path, tables: &TableNames, endpoint: &str) -> Duration {
    let (_, mut child, init) = start(binary, tables, endpoint).await;
    let _ = child.kill().await;
    init
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

struct Latency {
    /// Median over the cold starts.
    first: Duration,
    p50: Duration,
    p99: Duration,
}

/// Sends one event and times its answer, which must be a success of `expected` status.
async fn invoke(api: &mut RuntimeApi, binary: &Path, event: Vec<u8>, expected: u16) -> Duration {
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
async fn latency(
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
async fn time_to_unavailable(binary: &Path, tables: &TableNames, runs: usize) -> Duration {
    let endpoint = black_hole().await;
    let event = event_file("create-agent.json").to_string().into_bytes();
    let mut times = Vec::new();
    for _ in 0..runs {
        let (mut api, mut child, _) = start(binary, tables, &endpoint).await;
        times.push(invoke(&mut api, binary, event.clone(), 503).await);
        let _ = child.kill().await;
    }
    times.sort_unstable();
    percentile(&times, 0.50)
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
    let cold_starts = env_number("BENCH_COLD_STARTS", 11);

    let client =
        shared::aws::dynamodb_client(Some(&endpoint)).expect("a client for DynamoDB Local");
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

    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    let mut builds = vec![Build {
        label: "this tree".into(),
        dir: target.join("release"),
    }];
    if let Some(dir) = std::env::var_os("BENCH_BASELINE").filter(|dir| !dir.is_empty()) {
        let label = std::env::var("BENCH_BASELINE_LABEL").unwrap_or_else(|_| "baseline".into());
        builds.push(Build {
            label,
            dir: PathBuf::from(dir),
        });
    }

    // Cold init, interleaved (binaries and builds) so that a noisy moment hurts all alike.
    // The baselines come first, so a binary's index among them is its column's.
    let binaries: Vec<&str> = BASELINES.iter().chain(FUNCTIONS).copied().collect();
    // A baseline commit may predate some of them: what a baseline build lacks is left out.
    let present = |build_index: usize, build: &Build, name: &str| {
        build_index == 0 || build.binary(name).exists()
    };
    for (build_index, build) in builds.iter().enumerate() {
        for name in binaries
            .iter()
            .filter(|name| !present(build_index, build, name))
        {
            eprintln!("{}: no {name}, left out", build.label);
        }
    }
    let mut inits = vec![vec![Vec::<Duration>::new(); binaries.len()]; builds.len()];
    for _ in 0..starts {
        for (name_index, name) in binaries.iter().enumerate() {
            for (build_index, build) in builds.iter().enumerate() {
                if !present(build_index, build, name) {
                    continue;
                }
                let time = init_once(&build.binary(name), &tables, &endpoint).await;
                inits[build_index][name_index].push(time);
            }
        }
    }
    let medians: Vec<Vec<Option<Duration>>> = inits
        .iter_mut()
        .map(|per_binary| {
            per_binary
                .iter_mut()
                .map(|times| {
                    times.sort_unstable();
                    (!times.is_empty()).then(|| percentile(times, 0.5))
                })
                .collect()
        })
        .collect();

    // Latency of create: the gateway's event, a new name each time.
    let create = event_file("create-agent.json");
    let create_events = |build_index: usize| {
        (0..cold_starts + requests)
            .map(|i| {
                let mut event = create.clone();
                event["body"] = serde_json::json!({
                    "serviceName": format!("bench-{build_index}-{i}"),
                    "image": "ghcr.io/acme/agent:1.0"})
                .to_string()
                .into();
                event.to_string().into_bytes()
            })
            .collect::<Vec<Vec<u8>>>()
    };
    // DynamoDB Local's JVM warms up on its first requests: a throwaway run first, so that its
    // warm-up is not charged to the first requests measured.
    let mut throwaway = create_events(builds.len());
    throwaway.truncate(50);
    let binary = builds[0].binary("create-agent");
    latency(&[binary], &tables, &endpoint, vec![throwaway], 201, 1).await;
    let create_binaries: Vec<PathBuf> = builds.iter().map(|b| b.binary("create-agent")).collect();
    let events = (0..builds.len()).map(create_events).collect();
    let create_latency = latency(
        &create_binaries,
        &tables,
        &endpoint,
        events,
        201,
        cold_starts,
    )
    .await;

    // Latency of logs: the gateway's event for demo-agent, with 1,000 lines stored.
    let logs = event_file("agent-logs.json");
    let namespace = logs["requestContext"]["authorizer"]["namespace"]
        .as_str()
        .expect("the fixture's namespace")
        .to_owned();
    let owner = shared::auth::Principal {
        account_id: "dev".into(),
        namespace: namespace.clone(),
    };
    let (name, config) = shared::agent::ConfigChanges::from_json(
        serde_json::json!({"serviceName": "demo-agent", "image": "ghcr.io/acme/agent:1.0"}),
    )
    .and_then(shared::agent::ConfigChanges::into_new_agent)
    .expect("a valid agent");
    let agent = shared::agent::AgentRecord::new(&owner, &name, config, "2026-11-22T00:00:00.000Z");
    store
        .create_agent(&agent, None)
        .await
        .expect("the demo agent");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    let lines: Vec<shared::logs::LogLine> = (0..1_000u64)
        .map(|i| shared::logs::LogLine {
            service_id: agent.service_id.clone(),
            deployment_id: agent.active.deployment.id.clone(),
            session_id: Some("demo-session".into()),
            event_id: format!("{i:056}"),
            timestamp_nanos: now - 600_000_000_000 + i * 1_000_000,
            text: format!("bench line {i}: a typical agent log line of about this length"),
        })
        .collect();
    store.put_lines(&lines, 30).await.expect("the demo lines");
    let throwaway = vec![logs.to_string().into_bytes(); 50];
    let binary = builds[0].binary("agent-logs");
    latency(&[binary], &tables, &endpoint, vec![throwaway], 200, 1).await;
    let logs_binaries: Vec<PathBuf> = builds.iter().map(|b| b.binary("agent-logs")).collect();
    let events = vec![vec![logs.to_string().into_bytes(); cold_starts + requests]; builds.len()];
    let logs_latency = latency(&logs_binaries, &tables, &endpoint, events, 200, cold_starts).await;

    println!(
        "Cold init (process start to first Runtime API poll), median of {starts} starts, release profile:\n"
    );
    let columns: Vec<String> = BASELINES.iter().map(|name| format!("vs {name}")).collect();
    println!("| binary | build | init median | {} |", columns.join(" | "));
    println!("|---|---|---:|{}", "---:|".repeat(BASELINES.len()));
    let ratio = |median: Duration, reference: Option<Duration>| {
        reference.map_or("-".into(), |reference| {
            format!("{:.2}x", median.as_secs_f64() / reference.as_secs_f64())
        })
    };
    for (name_index, name) in binaries.iter().enumerate() {
        for (build_index, build) in builds.iter().enumerate() {
            let Some(median) = medians[build_index][name_index] else {
                continue;
            };
            let ratios: Vec<String> = (0..BASELINES.len())
                .map(|baseline| ratio(median, medians[build_index][baseline]))
                .collect();
            println!(
                "| {name} | {} | {:.2} ms | {} |",
                build.label,
                millis(median),
                ratios.join(" | ")
            );
        }
    }
    println!(
        "\nRequests through the Runtime API on DynamoDB Local ({cold_starts} cold starts and {requests} warm requests each):\n"
    );
    println!("| request | build | first after init (median) | warm p50 | warm p99 |");
    println!("|---|---|---:|---:|---:|");
    for (name, latencies) in [
        ("create (POST /v1/agents)", &create_latency),
        (
            "logs page (GET .../logs, limit 5, 1,000 lines)",
            &logs_latency,
        ),
    ] {
        for (build, latency) in builds.iter().zip(latencies) {
            println!(
                "| {name} | {} | {:.2} ms | {:.2} ms | {:.2} ms |",
                build.label,
                millis(latency.first),
                millis(latency.p50),
                millis(latency.p99)
            );
        }
    }
    let silent_runs = 3;
    let unavailable =
        time_to_unavailable(&builds[0].binary("create-agent"), &tables, silent_runs).await;
    println!(
        "\nA store that accepts connections and never answers: create's 503 with Retry-After \
         after {:.0} ms (median of {silent_runs}; the SDK client's operation bound is {} s, \
         the function's timeout 10 s).",
        millis(unavailable),
        shared::aws::OPERATION_TIMEOUT.as_secs()
    );
    println!("\nStripped release binaries:\n");
    println!("| binary | build | native x86_64 | arm64 bootstrap (make build) |");
    println!("|---|---|---:|---:|");
    for name in binaries {
        for (build_index, build) in builds.iter().enumerate() {
            if !present(build_index, build, name) {
                continue;
            }
            let native = size(&build.binary(name)).map_or("-".into(), megabytes);
            // `make build`'s bootstraps are this tree's.
            let arm = match build_index {
                0 => arm64_bootstrap(name).map_or("-".into(), megabytes),
                _ => "-".into(),
            };
            println!("| {name} | {} | {native} | {arm} |", build.label);
        }
    }
}

/// The size of `name`'s arm64 bootstrap from the last `make build` (`.aws-sam/build/`).
fn arm64_bootstrap(name: &str) -> Option<u64> {
    let entries = workspace().join(".aws-sam/build").read_dir().ok()?;
    entries.flatten().find_map(|entry| {
        let function = entry.file_name().to_string_lossy().to_lowercase();
        (function.replace("function", "") == name.replace('-', ""))
            .then(|| size(&entry.path().join("bootstrap")))
            .flatten()
    })
}
