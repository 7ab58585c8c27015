//! `make bench`'s figures of the data plane on the Docker Engine (issue 32): create -> ready,
//! warm and cold session starts and get-agent's latency, through a stack whose data plane runs
//! the example agent's image (scripts/e2e.sh's `dataplane-bench` suite), beside the engine's own
//! container start and the image's readiness. It prints a table and the goals, met or missed;
//! it asserts no time (a slow shared machine is a figure, not a failure) and writes no file.

use std::process::Command;
use std::time::{Duration, Instant};

use integration_tests::bounded::{self, Bound, Try};
use integration_tests::stack::Stack;
use reqwest::Method;
use serde_json::{Value, json};
use shared::auth::ApiKey;

const CREATES: usize = 10;
const WARM_STARTS: usize = 30;
const COLD_STARTS: usize = 10;
const GETS: usize = 100;
const ENGINE_STARTS: usize = 10;
/// How often a wait that is timed looks again: the look's own interval adds at most this to a
/// figure.
const LOOK: Duration = Duration::from_millis(20);
/// The label naming the part of a replica a container is (the holder beside the agent).
const PART_LABEL: &str = "agent-hosting.part";
/// A session's length on the example agent: short, so that its replica is soon replaced.
const SESSION_SECONDS: f64 = 0.5;

/// The example agent's image, as scripts/e2e.sh built it.
fn example_image() -> String {
    std::env::var("EXAMPLE_IMAGE").expect("EXAMPLE_IMAGE: scripts/e2e.sh builds the example agent")
}

/// The stack label the stack's data plane puts on its replicas.
fn stack_label() -> String {
    std::env::var("DATA_PLANE_STACK").expect("DATA_PLANE_STACK: scripts/e2e.sh names it")
}

/// One figure's samples, in milliseconds.
struct Figure {
    name: &'static str,
    samples: Vec<f64>,
}

impl Figure {
    fn new(name: &'static str) -> Self {
        Figure {
            name,
            samples: Vec::new(),
        }
    }

    fn add(&mut self, elapsed: Duration) {
        self.samples.push(elapsed.as_secs_f64() * 1000.0);
    }

    /// The nearest-rank percentile `p` (0 to 100): with 10 samples, p99 is the largest.
    fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.samples.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank.min(sorted.len()) - 1]
    }

    fn row(&self) -> String {
        format!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} |",
            self.name,
            self.samples.len(),
            self.percentile(0.0),
            self.percentile(50.0),
            self.percentile(99.0),
            self.percentile(100.0)
        )
    }
}

/// Reads `path` every [`LOOK`] until `done` holds of its answer (60 s at most).
async fn until(stack: &Stack, key: &ApiKey, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let bound = Bound::new(3000, Duration::from_secs(60));
    stack.read_until(key, path, (bound, LOOK), done).await
}

/// `docker` with `args`, on a blocking thread, 60 s at most: its stdout; panics when it fails.
async fn docker(args: &[&str]) -> String {
    let owned: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let run = tokio::task::spawn_blocking(move || Command::new("docker").args(&owned).output());
    let output = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap_or_else(|_| panic!("docker {args:?}: no answer within 60 s"))
        .expect("the blocking task runs")
        .expect("the docker command runs");
    assert!(
        output.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every container of this stack's `agent` in `namespace`, holders too, in any state: its id,
/// its part (empty when it has none) and its state.
async fn containers(namespace: &str, agent: &str) -> Vec<(String, String, String)> {
    let format = format!("{{{{.ID}}}} {{{{.Label \"{PART_LABEL}\"}}}} {{{{.State}}}}");
    let listed = docker(&[
        "ps",
        "-a",
        "--no-trunc",
        "--format",
        &format,
        "--filter",
        &format!("label=agent-hosting.stack={}", stack_label()),
        "--filter",
        &format!("label=agent-hosting.namespace={namespace}"),
        "--filter",
        &format!("label=agent-hosting.agent={agent}"),
    ])
    .await;
    listed
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ' ');
            let (id, part, state) = (fields.next()?, fields.next()?, fields.next()?);
            Some((id.to_owned(), part.to_owned(), state.trim().to_owned()))
        })
        .collect()
}

/// Whether each container's network answers `/readyz` 200 on 8080 (a holder's is its agent's).
async fn all_ready(http: &reqwest::Client, ids: &[&str]) -> bool {
    let mut args = vec![
        "inspect",
        "-f",
        "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
    ];
    args.extend(ids);
    for line in docker(&args).await.lines() {
        let Some(ip) = line.split_whitespace().next() else {
            return false;
        };
        let url = format!("http://{ip}:8080/readyz");
        match http.get(&url).send().await {
            Ok(answer) if answer.status() == 200 => {}
            _ => return false,
        }
    }
    true
}

/// Waits (untimed) until the agent runs `count` replicas, each ready, and nothing else of it is
/// left (a replica being stopped holds a place under maxAgents): a warm start then finds idle
/// ready replicas, and a cold start an agent with room for one more.
async fn until_settled(http: &reqwest::Client, namespace: &str, agent: &str, count: usize) {
    let what = format!("{count} ready replicas of {agent} and nothing else");
    bounded::until(&what, Bound::new(600, Duration::from_secs(120)), || async {
        let all = containers(namespace, agent).await;
        let holders: Vec<&str> = (all.iter())
            .filter(|(_, part, _)| part == "holder")
            .map(|(id, _, _)| id.as_str())
            .collect();
        let agents: Vec<&str> = (all.iter())
            .filter(|(_, part, _)| part != "holder")
            .map(|(id, _, _)| id.as_str())
            .collect();
        let settled = all.iter().all(|(_, _, state)| state == "running")
            && agents.len() == count
            && (holders.is_empty() || holders.len() == count);
        // A holder's network is its agent's; without holders, the agents have their own.
        let networks = if holders.is_empty() {
            &agents
        } else {
            &holders
        };
        if settled && (count == 0 || all_ready(http, networks).await) {
            return Try::Done(());
        }
        Try::Again {
            why: format!("{} containers, {} agents", all.len(), agents.len()),
            wait: Duration::from_millis(100),
        }
    })
    .await
}

async fn create(stack: &Stack, key: &ApiKey, name: &str, min: u32, max: u32) {
    let body = json!({"serviceName": name, "image": example_image(),
                      "autoScaling": {"minAgents": min, "maxAgents": max}});
    let created = stack
        .send_as(key, Method::POST, "/agents", Some(&body))
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
}

async fn until_ready(stack: &Stack, key: &ApiKey, name: &str) {
    until(stack, key, &format!("/agents/{name}"), |a| {
        a["activeDeploymentReady"] == true
    })
    .await;
}

/// POST /agents -> GET shows `activeDeploymentReady`, an agent of its own each time.
async fn creates(stack: &Stack, key: &ApiKey) -> Figure {
    let mut figure = Figure::new("create -> ready (minAgents 1)");
    for i in 0..CREATES {
        let name = format!("bench-ready-{i}");
        let clock = Instant::now();
        create(stack, key, &name, 1, 1).await;
        until_ready(stack, key, &name).await;
        figure.add(clock.elapsed());
        // Its replica would only take the machine's time from the figures after it.
        let path = format!("/agents/{name}");
        assert_eq!(
            stack.send_as(key, Method::DELETE, &path, None).await.status,
            200
        );
    }
    figure
}

/// One start: the start call's own latency and the time until `started` (the answer, or the
/// session read until it says so); the session as it was then.
async fn start(stack: &Stack, key: &ApiKey, agent: &str) -> (Duration, Duration, Value) {
    let body = json!({"body": {"durationSeconds": SESSION_SECONDS}});
    let path = format!("/public/{agent}/start");
    let clock = Instant::now();
    let answer = stack.send_as(key, Method::POST, &path, Some(&body)).await;
    let answered = clock.elapsed();
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let id = answer.body["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    let session_path = format!("/agents/{agent}/sessions/{id}");
    if answer.body["status"] != "started" {
        until(stack, key, &session_path, |s| s["status"] != "starting").await;
    }
    let started = clock.elapsed();
    let session = until(stack, key, &session_path, |s| s["status"] == "ended").await;
    assert_eq!(session["completionStatus"], "completed", "{session}");
    (answered, started, session)
}

struct Starts {
    answered: Figure,
    started: Figure,
    bot_start: Figure,
    cold: usize,
}

/// Starts on `agent`, each after its reserve is back to `reserve` running replicas (untimed).
async fn starts(
    (stack, key, http): (&Stack, &ApiKey, &reqwest::Client),
    namespace: &str,
    agent: &str,
    reserve: usize,
    n: usize,
    names: [&'static str; 3],
) -> Starts {
    let mut figures = Starts {
        answered: Figure::new(names[0]),
        started: Figure::new(names[1]),
        bot_start: Figure::new(names[2]),
        cold: 0,
    };
    for _ in 0..n {
        until_settled(http, namespace, agent, reserve).await;
        let (answered, started, session) = start(stack, key, agent).await;
        figures.answered.add(answered);
        figures.started.add(started);
        if let Some(seconds) = session["botStartSeconds"].as_f64() {
            figures.bot_start.add(Duration::from_secs_f64(seconds));
        }
        if session["coldStart"] == true {
            figures.cold += 1;
        }
    }
    figures
}

/// GET /agents/{name}, one after another.
async fn gets(stack: &Stack, key: &ApiKey, name: &str) -> Figure {
    let mut figure = Figure::new("GET /agents/{name}");
    for _ in 0..GETS {
        let clock = Instant::now();
        let answer = stack.get(key, name).await;
        figure.add(clock.elapsed());
        assert_eq!(answer.status, 200, "{:?}", answer.body);
    }
    figure
}

/// A replica as the data plane starts one, by hand: the holder's container (its image, 32 MiB,
/// read-only, no capability, nobody), then the example agent's in its network namespace; both
/// `docker run -d`, timed together.
async fn holder_and_agent(holder_image: &str) -> Figure {
    let mut figure = Figure::new("docker run -d: holder, then the agent in its namespace");
    let label = format!("agent-hosting.bench={}", stack_label());
    for _ in 0..ENGINE_STARTS {
        let clock = Instant::now();
        let holder = docker(&[
            "run",
            "-d",
            "--label",
            &label,
            "--memory",
            "32m",
            "--read-only",
            "--cap-drop",
            "ALL",
            "--user",
            "65534",
            "--security-opt",
            "no-new-privileges",
            holder_image,
        ])
        .await;
        let holder = holder.trim().to_owned();
        let network = format!("container:{holder}");
        let agent = docker(&[
            "run",
            "-d",
            "-e",
            "PORT=8080",
            "--label",
            &label,
            "--network",
            &network,
            &example_image(),
        ])
        .await;
        figure.add(clock.elapsed());
        docker(&["rm", "-f", agent.trim(), &holder]).await;
    }
    figure
}

/// The engine alone: `docker run -d` of the example image (create + start -> running), then its
/// `/readyz` asked every 10 ms until the first 200.
async fn engine(http: &reqwest::Client) -> (Figure, Figure) {
    let mut run = Figure::new("docker run -d (create+start -> running)");
    let mut ready = Figure::new("example image: start -> /readyz 200");
    let label = format!("agent-hosting.bench={}", stack_label());
    for _ in 0..ENGINE_STARTS {
        let clock = Instant::now();
        let id = docker(&[
            "run",
            "-d",
            "-e",
            "PORT=8080",
            "--label",
            &label,
            &example_image(),
        ])
        .await;
        run.add(clock.elapsed());
        let id = id.trim().to_owned();
        let ready_clock = Instant::now();
        let address = docker(&[
            "inspect",
            "-f",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
            &id,
        ])
        .await;
        let url = format!("http://{}:8080/readyz", address.trim());
        bounded::until(&url, Bound::new(3000, Duration::from_secs(30)), || async {
            match http.get(&url).send().await {
                Ok(answer) if answer.status() == 200 => Try::Done(()),
                other => Try::Again {
                    why: format!("{other:?}"),
                    wait: Duration::from_millis(10),
                },
            }
        })
        .await;
        ready.add(ready_clock.elapsed());
        docker(&["rm", "-f", &id]).await;
    }
    (run, ready)
}

fn goal(name: &str, figure: f64, bound: f64) -> String {
    let verdict = if figure <= bound { "met" } else { "missed" };
    format!("| {name} | {figure:.0} ms | {bound:.0} ms | {verdict} |")
}

#[tokio::test]
#[ignore = "a benchmark: scripts/e2e.sh's dataplane-bench suite runs it on the Docker Engine"]
async fn the_data_planes_figures_on_the_docker_engine() {
    let stack = Stack::from_env();
    let (caller, key) = stack.account("bench").await;
    let namespace = caller.namespace.as_str();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .expect("an HTTP client");
    // The image's first start (and the functions' first answers) before any clock runs.
    create(&stack, &key, "bench-warm", 3, 4).await;
    create(&stack, &key, "bench-cold", 0, 1).await;
    until_ready(&stack, &key, "bench-warm").await;
    until_ready(&stack, &key, "bench-cold").await;
    // The session functions' first answers (the start, the reports) too: a first start is not
    // what a warm start costs.
    until_settled(&http, namespace, "bench-warm", 3).await;
    start(&stack, &key, "bench-warm").await;

    let (engine_run, readiness) = engine(&http).await;
    // The holder's image, as scripts/e2e.sh built it for the data plane (absent before it).
    let two_runs = match std::env::var("DATA_PLANE_HOLDER_IMAGE") {
        Ok(image) => holder_and_agent(&image).await,
        Err(_) => Figure::new("docker run -d: holder, then the agent in its namespace"),
    };
    let created = creates(&stack, &key).await;
    let get = gets(&stack, &key, "bench-warm").await;
    let warm = starts(
        (&stack, &key, &http),
        namespace,
        "bench-warm",
        3,
        WARM_STARTS,
        [
            "warm start: the start call's answer",
            "warm start: start -> started",
            "warm: botStartSeconds",
        ],
    )
    .await;
    let cold = starts(
        (&stack, &key, &http),
        namespace,
        "bench-cold",
        0,
        COLD_STARTS,
        [
            "cold start: the start call's answer",
            "cold start: start -> started",
            "cold: botStartSeconds",
        ],
    )
    .await;

    println!("\nThe data plane on the Docker Engine (ms)\n");
    println!("| figure | n | min | p50 | p99 | max |\n|---|---:|---:|---:|---:|---:|");
    let figures = [
        &engine_run,
        &two_runs,
        &readiness,
        &created,
        &get,
        &warm.answered,
        &warm.started,
        &warm.bot_start,
        &cold.answered,
        &cold.started,
        &cold.bot_start,
    ];
    for figure in figures.iter().filter(|f| !f.samples.is_empty()) {
        println!("{}", figure.row());
    }
    for figure in [&warm.started, &cold.started] {
        let order: Vec<String> = figure.samples.iter().map(|ms| format!("{ms:.0}")).collect();
        println!("\n{}, in order: {}", figure.name, order.join(" "));
    }
    println!(
        "\nwarm starts reported coldStart: {} of {WARM_STARTS}; cold starts: {} of {COLD_STARTS}",
        warm.cold, cold.cold
    );
    let cold_bound = engine_run.percentile(50.0) + readiness.percentile(50.0) + 500.0;
    println!("\n| goal (p50) | figure | bound | |\n|---|---:|---:|---|");
    println!(
        "{}",
        goal(
            "warm start, end to end",
            warm.started.percentile(50.0),
            150.0
        )
    );
    println!(
        "{}",
        goal(
            "cold start (engine start + readiness + 0.5 s)",
            cold.started.percentile(50.0),
            cold_bound
        )
    );
    if !two_runs.samples.is_empty() {
        // The holder is the platform's own container: the engine starts two for a replica.
        let bound = two_runs.percentile(50.0) + readiness.percentile(50.0) + 500.0;
        let name = "cold start (holder + agent start + readiness + 0.5 s)";
        println!("{}", goal(name, cold.started.percentile(50.0), bound));
    }
    println!(
        "{}",
        goal("create -> ready", created.percentile(50.0), 5000.0)
    );
}
