//! The development data plane under a backlog, against a running stack (cargo lambda watch):
//! 300 deployments requested in a burst, the data plane killed while their reports are pending
//! and more requested while it is down, then started again. The API keeps answering throughout
//! (`GET /v1/agents` probed the whole time), every agent ends ready, and a data plane started
//! once more finds nothing left to do: it resumes from its checkpoint instead of replaying the
//! stream.
//!
//! `scripts/e2e.sh watch backlog` starts the stack without a data plane (this suite runs its
//! own: `STACK_DATA_PLANE_BIN`), and with the stack's variables (tests/src/stack.rs).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use integration_tests::bounded::Bound;
use integration_tests::stack::{Stack, bearer};
use integration_tests::workspace;
use serde_json::json;
use shared::auth::ApiKey;

const BURST: usize = 300;
const WHILE_DOWN: usize = 20;
/// Creates in flight at once: a client's pool, far under the 100 invocations of one function
/// that cargo lambda watch can hold before it stops every route (docs/testing.md).
const CLIENT_CONCURRENCY: usize = 16;
/// A request that waits longer than this means the API stopped answering.
const HANG: Duration = Duration::from_secs(5);

fn variable(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: run scripts/e2e.sh watch backlog"))
}

/// One run of the development data plane, its output in a file.
struct DataPlane {
    child: Child,
    output: PathBuf,
}

impl DataPlane {
    fn start(checkpoint: &Path, run: &str) -> Self {
        let output = checkpoint.with_file_name(format!("data-plane-{run}.log"));
        let log = std::fs::File::create(&output).unwrap();
        let child = Command::new(variable("STACK_DATA_PLANE_BIN"))
            .current_dir(workspace())
            .args(["--invoke-url", &variable("STACK_LAMBDA_URL")])
            .args(["--function-names", "binary", "--ready-after-ms", "300"])
            .arg("--checkpoint")
            .arg(checkpoint)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("the development data plane starts");
        DataPlane { child, output }
    }

    /// Kills it (SIGKILL: nothing is saved on the way out) and answers what it printed.
    fn kill(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        std::fs::read_to_string(&self.output).unwrap()
    }
}

/// `GET /v1/agents?limit=1` again and again until `stop`, each answer's time; a failure or a
/// wait past [`HANG`] ends the probe with the reason.
async fn probe(api: String, key: ApiKey, stop: Arc<AtomicBool>) -> Result<Vec<Duration>, String> {
    let http = reqwest::Client::builder().timeout(HANG).build().unwrap();
    let mut times = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let answer = http
            .get(format!("{api}/agents?limit=1"))
            .header("authorization", bearer(&key))
            .send()
            .await
            .map_err(|error| format!("GET /v1/agents after {} answers: {error}", times.len()))?;
        if answer.status() != 200 {
            return Err(format!("GET /v1/agents: {}", answer.status()));
        }
        times.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(times)
}

/// Creates `count` agents named `{prefix}-{i}`, [`CLIENT_CONCURRENCY`] at a time.
async fn create_agents(stack: &Arc<Stack>, key: &ApiKey, prefix: &str, count: usize) {
    let names: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    for batch in names.chunks(CLIENT_CONCURRENCY) {
        let creates: Vec<_> = batch
            .iter()
            .map(|name| {
                let (stack, key, name) = (stack.clone(), key.clone(), name.clone());
                tokio::spawn(async move {
                    let body = json!({"serviceName": name, "image": "ghcr.io/acme/agent:1.0"});
                    stack.create(&key, &body).await
                })
            })
            .collect();
        for create in creates {
            let answer = create.await.unwrap();
            assert_eq!(answer.status, 201, "{:?}", answer.body);
        }
    }
}

/// The account's agents that are not ready yet, by reading the whole list.
async fn not_ready(stack: &Stack, key: &ApiKey) -> (usize, Vec<String>) {
    let (mut listed, mut waiting, mut cursor) = (0, Vec::new(), None::<String>);
    let mut pages = Bound::new(100, Duration::from_secs(120)).start("the agents' last page");
    loop {
        pages.spend();
        let mut params = vec![("limit", "100".to_owned())];
        params.extend(cursor.take().map(|cursor| ("cursor", cursor)));
        let page = stack
            .call(
                reqwest::Method::GET,
                "/agents",
                Some(&bearer(key)),
                |request| request.query(&params),
            )
            .await;
        assert_eq!(page.status, 200, "{:?}", page.body);
        for agent in page.body["services"].as_array().unwrap() {
            listed += 1;
            if agent["activeDeploymentReady"] != json!(true) {
                waiting.push(agent["name"].as_str().unwrap().to_owned());
            }
        }
        match page.body["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (listed, waiting),
        }
    }
}

fn count_lines(output: &str, marker: &str) -> usize {
    output.lines().filter(|line| line.contains(marker)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_burst_and_restarts_of_the_data_plane_leave_the_api_answering_and_every_agent_ready() {
    let stack = Arc::new(Stack::from_env());
    let (_, key) = stack.account("backlog").await;
    let directory = workspace().join(format!(
        ".local/e2e-backlog-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&directory).unwrap();
    let checkpoint = directory.join("checkpoint.json");

    // cargo lambda watch starts a function on its first request: that start is not the API
    // failing to answer under the backlog.
    for route in ["/agents", "/agents/warm-up"] {
        stack
            .call(
                reqwest::Method::GET,
                route,
                Some(&bearer(&key)),
                |request| request,
            )
            .await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let probing = tokio::spawn(probe(stack.api.clone(), key.clone(), stop.clone()));

    // A burst, the data plane killed with its reports pending, more requested while it is down.
    let first = DataPlane::start(&checkpoint, "first");
    let burst_started = Instant::now();
    create_agents(&stack, &key, "burst", BURST).await;
    let burst = burst_started.elapsed();
    let first_output = first.kill();
    create_agents(&stack, &key, "while-down", WHILE_DOWN).await;

    let second = DataPlane::start(&checkpoint, "second");
    let started = Instant::now();
    let deadline = started + Duration::from_secs(240);
    let (listed, waiting) = loop {
        let (listed, waiting) = not_ready(&stack, &key).await;
        if waiting.is_empty() || Instant::now() > deadline {
            break (listed, waiting);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let all_ready = started.elapsed();
    assert_eq!(listed, BURST + WHILE_DOWN);
    assert!(
        waiting.is_empty(),
        "{} agents not ready after {all_ready:?}: {:?}",
        waiting.len(),
        &waiting[..waiting.len().min(10)]
    );
    // The last deliveries' place saved (it is saved every 250 ms).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second_output = second.kill();

    // Started once more, it finds nothing to report: it resumes after what it finished.
    let third = DataPlane::start(&checkpoint, "third");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let third_output = third.kill();
    stop.store(true, Ordering::Relaxed);
    let times = probing
        .await
        .unwrap()
        .unwrap_or_else(|reason| panic!("the API stopped answering: {reason}"));

    let reported = |output: &str| count_lines(output, "dev data plane: reported");
    let requested = |output: &str| count_lines(output, "Deployment Requested");
    let mut sorted = times.clone();
    sorted.sort();
    println!(
        "backlog: {} creates in {burst:?} ({CLIENT_CONCURRENCY} at a time); first data plane: {} \
         requested, {} reported before it was killed; second: {} requested, {} reported, every \
         agent ready {all_ready:?} after it started; third: {} requested, {} reported",
        BURST,
        requested(&first_output),
        reported(&first_output),
        requested(&second_output),
        reported(&second_output),
        requested(&third_output),
        reported(&third_output),
    );
    println!(
        "GET /v1/agents throughout: {} answers, median {:?}, slowest {:?}",
        sorted.len(),
        sorted[sorted.len() / 2],
        sorted[sorted.len() - 1]
    );
    assert!(sorted.len() > 10, "the probe ran the whole time");
    assert_eq!(
        (requested(&third_output), reported(&third_output)),
        (0, 0),
        "a restart resumes instead of replaying:\n{third_output}"
    );
    assert!(third_output.contains("shards resumed"), "{third_output}");
    let _ = std::fs::remove_dir_all(&directory);
}
