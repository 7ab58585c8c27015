//! The data plane's scenarios (src/testing/scenarios.rs) on the Docker Engine: the same bodies
//! as tests/scenarios_on_fake.rs, every replica real containers: the example agent's image
//! (`scripts/local.sh example-image`) beside its holder's (`scripts/local.sh holder-image`). Needs a Docker Engine (`scripts/local.sh
//! docker-engine`): without one every test fails, none is skipped. What a scenario asks beyond
//! the engine port is read from the daemon as an operator would: the container's labels, limits
//! and environment, the agent's own lines; a kill for memory is the agent's `allocateMiB` knob.

#[path = "docker_engine/support.rs"]
#[allow(dead_code)] // the contract tests' support: this suite uses a part of it
mod support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::models::ContainerInspectResponse;
use bollard::query_parameters::{ListContainersOptions, LogsOptions};
use data_plane::docker::DockerEngine;
use data_plane::engine::Engine;
use data_plane::reconciler::Config;
use data_plane::replica::{Limits, ReplicaId, ReplicaLabels, ReplicaStatus, label};
use data_plane::testing::scenarios::{Harness, Inspected};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, timeout};

/// How long a replica may take to be killed once its agent is asked to allocate past its limit.
const KILL_WAIT: Duration = Duration::from_secs(30);

/// The Docker Engine, and the stacks the scenarios made on it: each removed with its networks
/// when the harness is dropped, whether the scenario passed or panicked.
struct OnDocker {
    engine: Arc<DockerEngine>,
    docker: Docker,
    stacks: Mutex<Vec<support::Stack>>,
}

async fn docker() -> OnDocker {
    OnDocker {
        engine: Arc::new(support::engine().await),
        docker: support::docker().await,
        stacks: Mutex::default(),
    }
}

impl OnDocker {
    /// The stacks the scenario made, by name.
    fn stack_names(&self) -> Vec<String> {
        let stacks = self.stacks.lock().expect("not poisoned");
        stacks.iter().map(|stack| stack.name.clone()).collect()
    }

    /// The container of the replica's agent: the replica's own, or the one in its holder's
    /// network namespace. `None` once it is gone.
    async fn agent_container(&self, id: &ReplicaId) -> Option<ContainerInspectResponse> {
        let inspected = self.docker.inspect_container(&id.0, None).await.ok()?;
        let labels = inspected
            .config
            .as_ref()?
            .labels
            .clone()
            .unwrap_or_default();
        if labels.get(label::PART).map(String::as_str) != Some(label::part::HOLDER) {
            return Some(inspected);
        }
        let namespace = format!("container:{}", inspected.id.as_deref()?);
        let stack = labels.get(label::STACK)?;
        let filters = HashMap::from([(
            "label".to_owned(),
            vec![format!("{}={stack}", label::STACK)],
        )]);
        let options = ListContainersOptions {
            all: true,
            filters: Some(filters),
            ..Default::default()
        };
        let listed = self.docker.list_containers(Some(options)).await.ok()?;
        let agent = listed.into_iter().find(|container| {
            let mode = container
                .host_config
                .as_ref()
                .and_then(|h| h.network_mode.as_ref());
            mode == Some(&namespace)
        })?;
        self.docker
            .inspect_container(agent.id.as_deref()?, None)
            .await
            .ok()
    }

    /// The replica's agent address, while the engine lists it running.
    async fn running_address(&self, id: &ReplicaId) -> Option<SocketAddr> {
        for stack in self.stack_names() {
            let views = self.engine.list(&stack).await.expect("the engine lists");
            if let Some(view) = views.into_iter().find(|view| view.id == *id) {
                return match view.status {
                    ReplicaStatus::Running => view.address,
                    ReplicaStatus::Exited(_) => None,
                };
            }
        }
        None
    }

    /// The variables the image itself sets (`PATH`, ...): the container lists them too.
    async fn image_env(&self, image: &str) -> Vec<String> {
        let inspected = self.docker.inspect_image(image).await.expect("the image");
        inspected
            .config
            .and_then(|config| config.env)
            .unwrap_or_default()
    }

    /// Everything the container wrote, stdout and stderr, as lines.
    async fn lines(&self, container: &str) -> Vec<String> {
        let options = LogsOptions {
            stdout: true,
            stderr: true,
            follow: false,
            ..Default::default()
        };
        let frames = self.docker.logs(container, Some(options));
        let text: Vec<String> = frames
            .filter_map(|frame| async move { frame.ok().map(|frame| frame.to_string()) })
            .collect()
            .await;
        text.concat().lines().map(str::to_owned).collect()
    }
}

impl Harness for OnDocker {
    type E = DockerEngine;

    fn engine(&self) -> Arc<DockerEngine> {
        self.engine.clone()
    }

    fn example_image(&self) -> String {
        support::example_image().to_owned()
    }

    fn absent_image(&self) -> String {
        "agent-hosting.local/no-such-agent:1".to_owned()
    }

    fn config(&self, stack: &str) -> Config {
        let mut stacks = self.stacks.lock().expect("not poisoned");
        if stacks.iter().all(|known| known.name != stack) {
            stacks.push(support::Stack {
                name: stack.to_owned(),
            });
        }
        let mut config = Config::for_stack(stack);
        // Shorter than the contract's, long enough for a container's start on 2 busy cores.
        config.tick = Duration::from_millis(100);
        config.readiness_timeout = Duration::from_secs(15);
        config.backoff_first = Duration::from_millis(100);
        config.backoff_most = Duration::from_millis(800);
        config.stop_grace = Duration::from_secs(1);
        config.holder_checks = agent_holder::Checks {
            every: Duration::from_secs(1),
            misses: 3,
        };
        config
    }

    async fn inspect(&self, id: &ReplicaId) -> Option<Inspected> {
        let container = self.agent_container(id).await?;
        let config = container.config?;
        let pairs = config.labels.unwrap_or_default();
        let labels = ReplicaLabels::from_pairs(|name| pairs.get(name).map(String::as_str))?;
        let host = container.host_config?;
        let mib = |bytes: i64| u32::try_from(bytes / (1024 * 1024)).ok();
        let limits = Limits {
            cpu_millis: u32::try_from(host.nano_cpus? / 1_000_000).ok()?,
            memory_mib: mib(host.memory?)?,
            pids: u32::try_from(host.pids_limit?).ok()?,
        };
        let from_image = self.image_env(config.image.as_deref()?).await;
        let env = config
            .env
            .unwrap_or_default()
            .into_iter()
            .filter(|var| !from_image.contains(var))
            .filter_map(|var| {
                let (name, value) = var.split_once('=')?;
                Some((name.to_owned(), value.to_owned()))
            })
            .collect();
        Some(Inspected {
            labels,
            limits,
            env,
        })
    }

    /// Read from the agent's own line for each session: `... | {sessionId} - session started`.
    async fn sessions_of(&self, id: &ReplicaId) -> Vec<String> {
        let Some(container) = self.agent_container(id).await else {
            return Vec::new();
        };
        let Some(container_id) = container.id else {
            return Vec::new();
        };
        self.lines(&container_id)
            .await
            .iter()
            .filter_map(|line| {
                let (session, message) = line.rsplit(" | ").next()?.split_once(" - ")?;
                let named = session != "NONE" && message.starts_with("session started");
                named.then(|| session.to_owned())
            })
            .collect()
    }

    /// `docker pause` of the agent's container: its processes frozen by their cgroup.
    async fn freeze(&self, id: &ReplicaId) {
        if let Err(error) = self.docker.pause_container(&id.0).await {
            panic!("docker pause {id}: {error}");
        }
    }

    /// The agent is asked, as a session's body would, to allocate 512 MiB past its limit; the
    /// kernel kills it. Returns once the engine no longer lists it running.
    async fn oom_kill(&self, id: &ReplicaId) {
        let Some(memory) = self.inspect(id).await.map(|seen| seen.limits.memory_mib) else {
            return;
        };
        let body = format!(
            r#"{{"durationSeconds": 0, "allocateMiB": {}}}"#,
            memory + 512
        );
        let request = format!(
            "POST /bot HTTP/1.1\r\nHost: replica\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let killed = async {
            // Until it listens (a replica just started), then until it is gone.
            while let Some(address) = self.running_address(id).await {
                if let Ok(mut stream) = TcpStream::connect(address).await
                    && stream.write_all(request.as_bytes()).await.is_ok()
                {
                    let mut answer = Vec::new();
                    let _ = stream.read_to_end(&mut answer).await;
                }
                sleep(Duration::from_millis(100)).await;
            }
        };
        assert!(
            timeout(KILL_WAIT, killed).await.is_ok(),
            "replica {id} was not killed for memory within {KILL_WAIT:?}"
        );
    }
}

data_plane::every_scenario!(docker().await);
