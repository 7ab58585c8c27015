//! What the Docker engine's contract tests share: the example agent's image, a stack of each
//! test's own (removed at its end, a panic included), specs, and the container contract spoken
//! plainly from the host.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use data_plane::docker::DockerEngine;
use data_plane::engine::Engine;
use data_plane::replica::{
    AGENT_PORT, EnvVar, HolderSettings, Limits, NodeType, PIDS_LIMIT, ReplicaLabels, ReplicaSpec,
    ReplicaView,
};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, timeout};

/// The example agent's image, built once per test binary by the repository's script (a
/// debootstrap of Debian with python3 the first time on a host, a minute or two).
pub fn example_image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| local_image("example-image"))
}

/// The holder's image, built once per test binary by the repository's script (the holder
/// binary and its libraries, seconds once built).
pub fn holder_image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| local_image("holder-image"))
}

/// The image `scripts/local.sh <command>` builds, by the name it prints last.
fn local_image(command: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(root.join("scripts/local.sh"))
        .arg(command)
        .current_dir(&root)
        .output()
        .expect("scripts/local.sh runs");
    assert!(
        out.status.success(),
        "scripts/local.sh {command} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let image = stdout.lines().last().unwrap_or_default().trim().to_owned();
    assert!(!image.is_empty(), "no image name printed");
    image
}

/// A stack of this test's own; everything labelled with it, and its networks, are removed
/// when it is dropped, whether the test passed or panicked.
pub struct Stack {
    pub name: String,
}

impl Stack {
    pub fn new() -> Stack {
        let id = uuid::Uuid::new_v4().simple().to_string();
        Stack {
            name: format!("test-{}", &id[..10]),
        }
    }

    pub fn labels(&self, namespace: &str) -> ReplicaLabels {
        ReplicaLabels {
            stack: self.name.clone(),
            namespace: namespace.to_owned(),
            agent: "voice".to_owned(),
            service_id: uuid::Uuid::new_v4().to_string(),
            deployment_id: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// A spec of the example agent in `namespace`: 256 MiB, half a CPU, `PORT=8080`, then
    /// `env`.
    pub fn spec(&self, namespace: &str, env: &[(&str, &str)]) -> ReplicaSpec {
        let mut vars = vec![var("PORT", &AGENT_PORT.to_string())];
        vars.extend(env.iter().map(|(name, value)| var(name, value)));
        ReplicaSpec {
            labels: self.labels(namespace),
            image: example_image().to_owned(),
            pull: None,
            limits: Limits {
                cpu_millis: 500,
                memory_mib: 256,
                pids: PIDS_LIMIT,
            },
            node_type: NodeType::Arm,
            env: vars,
            holder: HolderSettings::new(agent_holder::Checks::default()),
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let filter = format!("label=agent-hosting.stack={}", self.name);
        let ids = docker_cli(&["ps", "-aq", "--filter", &filter]);
        if !ids.is_empty() {
            let mut args = vec!["rm", "-f"];
            args.extend(ids.iter().map(String::as_str));
            docker_cli(&args);
        }
        let networks = docker_cli(&["network", "ls", "-q", "--filter", &filter]);
        if !networks.is_empty() {
            let mut args = vec!["network", "rm"];
            args.extend(networks.iter().map(String::as_str));
            docker_cli(&args);
        }
    }
}

/// The docker CLI's output lines (the cleanup does not rely on the engine under test).
fn docker_cli(args: &[&str]) -> Vec<String> {
    Command::new("docker")
        .args(args)
        .output()
        .map(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned)
                .filter(|line| !line.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: value.to_owned(),
    }
}

/// An engine of its own, its replicas' lines on a socket of its own.
pub async fn engine() -> DockerEngine {
    static ENGINES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = ENGINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let socket = data_plane::docker::log_socket(&format!("test-{}-{n}", std::process::id()));
    DockerEngine::connect(holder_image(), socket)
        .await
        .expect("the Docker Engine answers")
}

/// A client of the same daemon, to inspect what the engine asked for.
pub async fn docker() -> Docker {
    Docker::connect_with_unix_defaults()
        .expect("the docker socket")
        .negotiate_version()
        .await
        .expect("an API version")
}

/// The stack's replicas once `done` holds for them, polled for at most 60 s.
pub async fn listed_until(
    engine: &DockerEngine,
    stack: &Stack,
    done: impl Fn(&[ReplicaView]) -> bool,
) -> Vec<ReplicaView> {
    let poll = async {
        loop {
            let views = engine.list(&stack.name).await.expect("list");
            if done(&views) {
                return views;
            }
            sleep(Duration::from_millis(250)).await;
        }
    };
    timeout(Duration::from_secs(60), poll)
        .await
        .expect("the replicas reached the state within 60 s")
}

/// One HTTP/1.1 exchange with the replica at `addr`: its status and body, `None` when it
/// could not be had within 5 s.
pub async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: replica\r\nConnection: close\r\n\
         X-Daily-Session-Id: test-session\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.ok()?;
        let status = answer.split(' ').nth(1)?.parse().ok()?;
        let body = answer
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        Some((status, body))
    };
    timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}

/// Waits (at most 60 s) for `/readyz` at `addr` to answer 200, from the host.
pub async fn ready(addr: SocketAddr) {
    let poll = async {
        while http(addr, "GET", "/readyz", "")
            .await
            .map(|(status, _)| status)
            != Some(200)
        {
            sleep(Duration::from_millis(250)).await;
        }
    };
    timeout(Duration::from_secs(60), poll)
        .await
        .expect("the replica answered /readyz 200 within 60 s");
}

/// Runs `cmd` in the container and returns what it wrote (at most 30 s).
pub async fn exec(docker: &Docker, container: &str, cmd: &[&str]) -> String {
    let created = docker
        .create_exec(
            container,
            CreateExecOptions {
                cmd: Some(cmd.to_vec()),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                ..Default::default()
            },
        )
        .await
        .expect("create exec");
    let StartExecResults::Attached { output, .. } = docker
        .start_exec(&created.id, None)
        .await
        .expect("start exec")
    else {
        panic!("exec not attached");
    };
    let collected = output
        .filter_map(|frame| async move { frame.ok().map(|frame| frame.to_string()) })
        .collect::<Vec<_>>();
    timeout(Duration::from_secs(30), collected)
        .await
        .expect("the exec ended within 30 s")
        .concat()
}
