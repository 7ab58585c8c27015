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

mod function;
mod runtime_api;
mod session_cost;

use std::path::{Path, PathBuf};
use std::time::Duration;

use function::{init_once, latency, millis, percentile};
use shared::agent::AgentStore;
use shared::config::TableNames;
use shared::logs::LogStore;
use shared::store::dynamodb::DynamoStore;
use shared::store::tables;

const FUNCTIONS: &[&str] = &[
    "create-agent",
    "get-agent",
    "agent-logs",
    "start-session",
    "ingest-logs",
    "authorizer",
];
/// What the functions' init is compared with, each a column of ratios: lambda_runtime's own
/// hello-world (`#[tokio::main]`), the same on the functions' current-thread runtime, and that
/// with the service's DynamoDB client built at init.
const BASELINES: [&str; 3] = ["hello-lambda", "hello-current-thread", "hello-dynamodb"];
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

fn event_file(name: &str) -> serde_json::Value {
    let path = workspace().join("events").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("an events/ fixture"))
        .expect("JSON")
}

/// The caller a gateway event of events/ names (its authorizer's namespace), as `account_id`.
fn fixture_owner(event: &serde_json::Value, account_id: &str) -> shared::auth::Principal {
    let namespace = event["requestContext"]["authorizer"]["namespace"]
        .as_str()
        .expect("the fixture's namespace");
    shared::auth::Principal {
        account_id: account_id.into(),
        namespace: namespace.into(),
    }
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
    let store_client = client.clone();
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
    let owner = fixture_owner(&logs, "dev");
    let (name, config) = shared::agent::ConfigChanges::from_json(
        serde_json::json!({"serviceName": "demo-agent", "image": "ghcr.io/acme/agent:1.0"}),
    )
    .and_then(shared::agent::ConfigChanges::into_new_agent)
    .expect("a valid agent");
    let agent = shared::agent::AgentRecord::new(
        &owner,
        &name,
        config,
        shared::manifest::DeploymentMode::Simulated,
        "2026-11-22T00:00:00.000Z",
    );
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

    // Latency of get: the gateway's event for demo-agent.
    let get = event_file("get-agent.json").to_string().into_bytes();
    let get_binaries: Vec<PathBuf> = builds.iter().map(|b| b.binary("get-agent")).collect();
    let events = vec![vec![get; cold_starts + requests]; builds.len()];
    let get_latency = latency(&get_binaries, &tables, &endpoint, events, 200, cold_starts).await;

    // Latency of a session start (the write path: no data plane answers, so it does not wait),
    // over ready agents enough for every start to find a place; builds without it are left out.
    let start_builds: Vec<&Build> = builds
        .iter()
        .filter(|build| build.binary("start-session").exists())
        .collect();
    let starts_needed = start_builds.len() * (cold_starts + requests);
    let start_events = session_agents(&store, starts_needed).await;
    let start_binaries: Vec<PathBuf> = start_builds
        .iter()
        .map(|b| b.binary("start-session"))
        .collect();
    let per_build = cold_starts + requests;
    let events = (0..start_builds.len())
        .map(|i| start_events[i * per_build..(i + 1) * per_build].to_vec())
        .collect();
    let start_latency = latency(
        &start_binaries,
        &tables,
        &endpoint,
        events,
        200,
        cold_starts,
    )
    .await;
    let session_cost = session_cost::measure(&store_client, &store, &tables).await;

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
    let start_labels: Vec<&Build> = start_builds.clone();
    for (name, labels, latencies) in [
        (
            "create (POST /v1/agents)",
            builds.iter().collect(),
            &create_latency,
        ),
        (
            "get (GET /v1/agents/{name})",
            builds.iter().collect(),
            &get_latency,
        ),
        (
            "logs page (GET .../logs, limit 5, 1,000 lines)",
            builds.iter().collect::<Vec<&Build>>(),
            &logs_latency,
        ),
        (
            "session start (POST /v1/public/{name}/start, no wait)",
            start_labels,
            &start_latency,
        ),
    ] {
        for (build, latency) in labels.iter().zip(latencies) {
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
    let create_event = event_file("create-agent.json").to_string().into_bytes();
    let unavailable = function::time_to_unavailable(
        &builds[0].binary("create-agent"),
        &tables,
        create_event,
        silent_runs,
    )
    .await;
    println!(
        "\nA store that accepts connections and never answers: create's 503 with Retry-After \
         after {:.0} ms (median of {silent_runs}; the SDK client's operation bound is {} s, \
         the function's timeout 10 s).",
        millis(unavailable),
        shared::aws::OPERATION_TIMEOUT.as_secs()
    );
    session_cost.print();
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

/// Ready agents in the start fixture's account with a place for each of `starts`, and the
/// gateway's start event for each place, the agents taken in turn.
async fn session_agents(store: &DynamoStore, starts: usize) -> Vec<Vec<u8>> {
    let start = event_file("start-session.json");
    let owner = fixture_owner(&start, "dev-sessions");
    let places = shared::agent::config::MAX_AGENTS.end().to_owned() as usize;
    let agents = starts.div_ceil(places);
    for i in 0..agents {
        let body = serde_json::json!({"serviceName": format!("bench-voice-{i}"),
            "image": "ghcr.io/acme/agent:1.0", "autoScaling": {"maxAgents": places}});
        session_cost::ready_agent(store, &owner, body).await;
    }
    (0..starts)
        .map(|i| {
            let name = format!("bench-voice-{}", i % agents);
            let mut event = start.clone();
            event["path"] = format!("/v1/public/{name}/start").into();
            event["pathParameters"]["agentName"] = name.into();
            event.to_string().into_bytes()
        })
        .collect()
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
