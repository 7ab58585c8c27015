//! `make run` as a developer runs it all day, in several terminals of one checkout: two at once
//! (a `PORT` each, one `DYNAMODB_PORT`) both answer, each on data of its own, and `make api-key
//! PORT=` issues keys into the store of the stack on that port; one more on a `PORT` in use refuses,
//! saying which stack holds it; one killed hard (SIGKILL of its process group, what a closed
//! terminal or the OOM killer does) leaves no process; Ctrl-C stops the other within 10 s,
//! leaving none either.
//!
//! Processes are followed by tree, not by name: this test adopts the orphans of everything the
//! stacks start, so a server that leaves its parent stays in the tree it is looked for in.
//!
//! The Makefile's e2e target runs it once the functions are built; alone:
//! `cargo test --workspace --test local_stack -- --ignored --show-output`.

mod process_tree;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use integration_tests::bounded::{self, Bound, Try};
use integration_tests::workspace;
use process_tree::Process;
use serde_json::{Value, json};

/// A `make run` answers within this (a first run on a cold checkout builds every function).
const START: Duration = Duration::from_secs(15 * 60);
/// One more on a port in use refuses before it starts anything.
const REFUSAL: Duration = Duration::from_secs(60);
/// Ctrl-C stops a stack within this (the bound).
const INTERRUPT: Duration = Duration::from_secs(10);
/// SIGKILL of a process group: what the kernel then ends is gone within this.
const HARD_KILL: Duration = Duration::from_secs(10);

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// One `make run PORT=... DYNAMODB_PORT=...` in a process group of its own, as a terminal
/// starts it, its output in a file.
struct Run {
    child: Child,
    port: u16,
    output: PathBuf,
}

impl Run {
    /// With DynamoDB Local asked on `dynamodb` (a stack finding it taken moves to a free one).
    fn start(port: u16, dynamodb: u16) -> Self {
        let output =
            std::env::temp_dir().join(format!("local-stack-make-run-{port}-{}.log", free_port()));
        let log = std::fs::File::create(&output).unwrap();
        let child = std::os::unix::process::CommandExt::process_group(
            Command::new("make")
                .current_dir(workspace())
                .args(["--no-print-directory", "run"])
                .arg(format!("PORT={port}"))
                .arg(format!("DYNAMODB_PORT={dynamodb}"))
                // A make of its own, not a sub-make of `make test`'s.
                .env_remove("MAKEFLAGS")
                .env_remove("MAKELEVEL")
                .env_remove("MFLAGS")
                .stdin(Stdio::null())
                .stdout(Stdio::from(log.try_clone().unwrap()))
                .stderr(Stdio::from(log)),
            0,
        )
        .spawn()
        .expect("make runs");
        Run {
            child,
            port,
            output,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn printed(&self) -> String {
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }

    fn api(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The dev key it prints once it serves; fails if it stops first or takes past [`START`].
    fn key(&mut self) -> String {
        let deadline = Instant::now() + START;
        loop {
            if let Some(key) = self
                .printed()
                .lines()
                .find_map(|line| line.trim().strip_prefix("Dev API key: ").map(str::to_owned))
            {
                return key;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "make run PORT={} stopped ({status}) before serving:\n{}",
                    self.port,
                    self.printed()
                );
            }
            assert!(
                Instant::now() < deadline,
                "make run PORT={} printed no key within {START:?}:\n{}",
                self.port,
                self.printed()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Its exit status, if it ends within `within`.
    fn exit_within(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            process_tree::reap_except(&[self.pid()]);
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Whatever a failing run leaves: every process this test started, and the stacks' data.
struct Cleanup {
    data: Vec<PathBuf>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        process_tree::kill_descendants();
        for dir in &self.data {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http
        .request(method, url)
        .header("authorization", format!("Bearer {key}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let answer = request.send().await.expect("the stack answers");
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

/// `GET /v1/agents` on `run` with `key`: the status and the names listed.
async fn list(http: &reqwest::Client, run: &Run, key: &str) -> (u16, Vec<String>) {
    let url = format!("{}/agents", run.api());
    let (status, body) = call(http, reqwest::Method::GET, url, key, None).await;
    let names = body["services"]
        .as_array()
        .map(|agents| {
            let names = agents.iter().filter_map(|agent| agent["name"].as_str());
            names.map(str::to_owned).collect()
        })
        .unwrap_or_default();
    (status, names)
}

/// Both answer with their own keys; an agent created on `a` is not on `b`, whose accounts do not
/// know `a`'s key either. Answers what broke.
async fn each_keeps_its_own_data(a: &Run, key_a: &str, b: &Run, key_b: &str) -> Vec<String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let agent = format!("only-on-{}", a.port);
    let create = json!({"serviceName": agent, "image": "ghcr.io/acme/agent:1.0"});
    let url = format!("{}/agents", a.api());
    let (created, body) = call(&http, reqwest::Method::POST, url, key_a, Some(create)).await;
    assert_eq!(created, 201, "create on PORT={}: {body}", a.port);
    let (on_a, on_b) = (list(&http, a, key_a).await, list(&http, b, key_b).await);
    assert_eq!((on_a.0, on_b.0), (200, 200), "GET /v1/agents on each");
    assert!(
        on_a.1.contains(&agent),
        "PORT={} lists its agent: {on_a:?}",
        a.port
    );
    let mut broken = Vec::new();
    if on_b.1.contains(&agent) {
        broken.push(format!(
            "PORT={} lists {agent}, created on PORT={}",
            b.port, a.port
        ));
    }
    let (status, _) = list(&http, b, key_a).await;
    if status != 401 {
        broken.push(format!(
            "PORT={} answers {status} to the key PORT={} issued (its accounts are its own: 401)",
            b.port, a.port
        ));
    }
    broken
}

/// `make run` serves the console at `/console/` with the stack's `config.json` (its pool's
/// client) and prints where, with the person to sign in as. Answers what broke.
async fn serves_its_console(run: &Run) -> Vec<String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let console = format!("http://127.0.0.1:{}/console/", run.port);
    let mut broken = Vec::new();
    let printed = run.printed();
    if !printed
        .lines()
        .any(|line| line.contains(&console) && line.contains("dev@example.com"))
    {
        broken.push(format!(
            "PORT={} printed no console line naming {console} and dev@example.com:\n{printed}",
            run.port
        ));
    }
    let page = http.get(&console).send().await.unwrap();
    let status = page.status().as_u16();
    let html = page.text().await.unwrap_or_default();
    if status != 200 || !html.contains("id=\"main\"") {
        broken.push(format!(
            "GET {console}: {status}, not the console's page: {html:.200}"
        ));
    }
    let config = http
        .get(format!("{console}config.json"))
        .send()
        .await
        .unwrap();
    let status = config.status().as_u16();
    let config: Value = config.json().await.unwrap_or_default();
    if status != 200 || config["clientId"].as_str().is_none_or(str::is_empty) {
        broken.push(format!(
            "GET {console}config.json: {status}, no pool client: {config}"
        ));
    }
    broken
}

/// One more `make run` on the `PORT` of the stack whose processes are `holder` refuses within
/// [`REFUSAL`], naming that stack's port and one of its PIDs. Answers what broke.
fn another_on_its_port_refuses(port: u16, holder: &[Process]) -> Option<String> {
    let mut again = Run::start(port, free_port());
    let exited = again.exit_within(REFUSAL);
    process_tree::signal_group(again.pid(), libc::SIGKILL);
    let said = again.printed();
    let refused = exited.is_some_and(|status| !status.success());
    if !refused {
        return Some(format!(
            "a second make run PORT={port} did not refuse within {REFUSAL:?} ({exited:?}):\n{said}"
        ));
    }
    let named = said
        .split_once(&format!("in use by the stack on port {port} (pid "))
        .and_then(|(_, rest)| rest.split(')').next()?.parse::<i32>().ok());
    let names_holder = named.is_some_and(|pid| holder.iter().any(|process| process.pid == pid));
    (!names_holder).then(|| {
        format!("a second make run PORT={port} refused without naming the stack on port {port} and one of its PIDs:\n{said}")
    })
}

/// SIGKILL of the stack's process group: within [`HARD_KILL`] none of `tree` runs, its port
/// is free, and none of its replicas is left in the Docker Engine. Answers what broke.
fn killed_hard_leaves_nothing(run: &Run, tree: &[Process]) -> Vec<String> {
    runs_a_replica(run.port);
    process_tree::signal_group(run.pid(), libc::SIGKILL);
    let left = process_tree::wait_gone(tree, HARD_KILL, &[run.pid()]);
    let mut broken = Vec::new();
    if !left.is_empty() {
        broken.push(format!(
            "SIGKILL of make run PORT={}'s process group left, {HARD_KILL:?} later:{}",
            run.port,
            describe(&left)
        ));
    }
    if TcpStream::connect(("127.0.0.1", run.port)).is_ok() {
        broken.push(format!(
            "port {} still answers after its make run was killed",
            run.port
        ));
    }
    replicas_removed(run.port);
    broken
}

/// `docker ARGS`' output, trimmed (what went wrong, if it could not run).
fn docker_listed(args: &[&str]) -> String {
    let output = Command::new("docker").args(args).output();
    output.map_or_else(
        |error| format!("docker: {error}"),
        |output| String::from_utf8_lossy(&output.stdout).trim().to_owned(),
    )
}

/// The label of the replicas and networks of the stack on `port`.
fn stack_label(port: u16) -> String {
    format!("label=agent-hosting.stack=run-{port}")
}

/// Waits until the stack on `port` runs a replica (its demo agent's warm one) in the Docker
/// Engine, so that what a kill leaves of it can be seen.
fn runs_a_replica(port: u16) {
    bounded::until_blocking(
        "make run's demo agent's replica",
        Bound::new(240, Duration::from_secs(60)),
        || match docker_listed(&["ps", "-q", "--filter", &stack_label(port)]) {
            ids if !ids.is_empty() && !ids.starts_with("docker:") => Try::Done(()),
            ids => Try::Again {
                why: format!("running: [{ids}]"),
                wait: Duration::from_millis(250),
            },
        },
    );
}

/// Waits (at most [`HARD_KILL`]) until no Docker container or network of the stack on `port`
/// is left: its data plane's replicas run in the engine, outside the stack's processes, and
/// must go with it too.
fn replicas_removed(port: u16) {
    bounded::until_blocking(
        "the killed stack's replicas removed",
        Bound::new(40, HARD_KILL),
        || {
            let containers = docker_listed(&["ps", "-aq", "--filter", &stack_label(port)]);
            let networks = docker_listed(&["network", "ls", "-q", "--filter", &stack_label(port)]);
            match containers.is_empty() && networks.is_empty() {
                true => Try::Done(()),
                false => Try::Again {
                    why: format!("containers [{containers}], networks [{networks}]"),
                    wait: Duration::from_millis(250),
                },
            }
        },
    );
}

/// SIGINT to the stack's process group, as Ctrl-C sends it: within [`INTERRUPT`] make has
/// exited and none of `tree` runs. Answers what broke.
fn interrupted_stops_within_10_s(run: &mut Run, tree: &[Process]) -> Option<String> {
    let interrupted = Instant::now();
    process_tree::signal_group(run.pid(), libc::SIGINT);
    let exited = run.exit_within(INTERRUPT);
    let rest = INTERRUPT.saturating_sub(interrupted.elapsed());
    let left = process_tree::wait_gone(tree, rest, &[run.pid()]);
    let took = interrupted.elapsed().as_secs_f64();
    println!("Ctrl-C: make run stopped in {took:.1} s ({exited:?})");
    (exited.is_none() || !left.is_empty()).then(|| {
        format!(
            "Ctrl-C of make run PORT={}: make {exited:?}, left after {INTERRUPT:?}:{}",
            run.port,
            describe(&left)
        )
    })
}

/// The stack's whole tree now; a stack that serves runs more than make and its shell.
fn serving_tree(run: &Run) -> Vec<Process> {
    let tree = process_tree::tree(run.pid());
    assert!(
        tree.len() > 5,
        "make run PORT={} serves with {} processes only",
        run.port,
        tree.len()
    );
    tree
}

fn describe(processes: &[Process]) -> String {
    processes
        .iter()
        .map(|process| format!("\n  {}", process.describe()))
        .collect()
}

/// `make api-key PORT=...` as a developer runs it beside a stack: its key, or what it said.
fn api_key(port: u16, account: &str) -> Result<String, String> {
    let output = Command::new("make")
        .current_dir(workspace())
        .args(["--no-print-directory", "api-key"])
        .arg(format!("PORT={port}"))
        .arg(format!("ACCOUNT={account}"))
        .env_remove("MAKEFLAGS")
        .env_remove("MAKELEVEL")
        .env_remove("MFLAGS")
        .env_remove("DYNAMODB_ENDPOINT")
        .output()
        .expect("make runs");
    let printed = String::from_utf8_lossy(&output.stdout);
    match (output.status.success(), printed.lines().last()) {
        (true, Some(key)) => Ok(key.trim().to_owned()),
        _ => Err(format!(
            "{}{}",
            printed,
            String::from_utf8_lossy(&output.stderr)
        )),
    }
}

/// `make api-key PORT=` of the second stack (whose DynamoDB Local moved off the port the first
/// took) gives a key that stack accepts; of a PORT no stack serves, a sentence saying so.
async fn api_key_finds_the_stack_on_its_port(b: &Run) -> Vec<String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut broken = Vec::new();
    match api_key(b.port, "second") {
        Ok(key) => {
            let (status, _) = list(&http, b, &key).await;
            if status != 200 {
                broken.push(format!(
                    "make api-key PORT={}'s key: GET /v1/agents answered {status}",
                    b.port
                ));
            }
        }
        Err(said) => broken.push(format!("make api-key PORT={} failed: {said}", b.port)),
    }
    let nobody = free_port();
    match api_key(nobody, "nobody") {
        Err(said) if said.contains(&format!("no stack serves on PORT={nobody}")) => {}
        other => broken.push(format!(
            "make api-key PORT={nobody} (no stack there) did not say so: {other:?}"
        )),
    }
    broken
}

#[tokio::test(flavor = "current_thread")]
#[ignore = "starts two make run stacks: run by the Makefile's e2e target"]
async fn two_make_runs_in_one_checkout_keep_their_own_data_and_leave_nothing_when_stopped() {
    process_tree::adopt_orphans();
    let (port_a, port_b) = (free_port(), free_port());
    let _cleanup = Cleanup {
        data: [port_a, port_b]
            .map(|port| workspace().join(format!(".local/run-{port}")))
            .to_vec(),
    };
    // Both with one DYNAMODB_PORT, as two `make run PORT=…` with the default do: the second
    // finds it taken and moves its DynamoDB Local to a free port.
    let dynamodb = free_port();
    let started = Instant::now();
    let mut a = Run::start(port_a, dynamodb);
    let key_a = a.key();
    let mut b = Run::start(port_b, dynamodb);
    let key_b = b.key();
    let took = started.elapsed().as_secs_f64();
    println!("two make runs serving after {took:.1} s");

    let mut broken = each_keeps_its_own_data(&a, &key_a, &b, &key_b).await;
    broken.extend(api_key_finds_the_stack_on_its_port(&b).await);
    broken.extend(serves_its_console(&a).await);
    let tree_a = serving_tree(&a);
    broken.extend(another_on_its_port_refuses(port_a, &tree_a));
    broken.extend(killed_hard_leaves_nothing(&a, &tree_a));
    let tree_b = serving_tree(&b);
    broken.extend(interrupted_stops_within_10_s(&mut b, &tree_b));
    assert!(broken.is_empty(), "{}", broken.join("\n\n"));
}
