//! A scriptable engine for the reconciler's scenarios: every replica of [`EXAMPLE_IMAGE`] is an
//! in-process agent (an HTTP server on 127.0.0.1) that keeps the container contract and the test
//! knobs the example agent (examples/agent/agent.py) shares with it, so one scenario runs on
//! both engines, beside the real holder's server (holder/src/server.rs) handing sessions to it,
//! as in a replica's two containers. Any other image fails to pull, as a registry refuses an
//! unknown repository: within `run`, or after it for [`LATE_UNPULLABLE_IMAGE`] (as on ECS, whose
//! task stops `TaskFailedToStart` once RunTask answered).

mod agent;
mod book;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_holder::Endpoint;
use agent_holder::server::{self as holder, Holder};
use futures_util::stream::BoxStream;
use http::HeaderMap;
use time::OffsetDateTime;
use tokio::net::TcpListener;
use tokio::task::AbortHandle;

use crate::engine::{Engine, EngineError, LogLine, RunError};
use crate::replica::{
    ExitReason, HolderSettings, ReplicaId, ReplicaSpec, ReplicaStatus, ReplicaView, pull_message,
};

use agent::Agent;
use book::{Level, LogBook};

/// The image the fake knows: the example agent's.
pub const EXAMPLE_IMAGE: &str = "agent-hosting.local/example-agent:fake";

/// An image whose pull fails after `run` returned: its replica is listed exited
/// `PullFailed`, with the registry's message.
pub const LATE_UNPULLABLE_IMAGE: &str = "agent-hosting.local/late-unpullable:fake";

/// The in-memory engine. Clones share their replicas.
#[derive(Clone, Default)]
pub struct FakeEngine {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    runs: usize,
    replicas: BTreeMap<ReplicaId, Replica>,
    retires: Vec<RetireAsked>,
    /// How many of the next retires fail.
    failing_retires: u32,
}

/// A `retire` the engine was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetireAsked {
    pub deployment_id: String,
    /// The deployment's replicas the engine still had (exited ones too): none, if asked right.
    pub replicas_left: usize,
    /// Whether it answered an error (see [`FakeEngine::fail_retires`]).
    pub failed: bool,
}

struct Replica {
    spec: ReplicaSpec,
    address: Option<SocketAddr>,
    holder: Option<Endpoint>,
    status: ReplicaStatus,
    /// The agent's server task: aborting it drops its listener and every connection it holds.
    server: Option<AbortHandle>,
    /// The holder's server task: it outlives the agent's exit, as the holder's container does,
    /// and ends with the replica's stop.
    holder_server: Option<AbortHandle>,
    book: Arc<LogBook>,
    bot_requests: Vec<(HeaderMap, serde_json::Value)>,
    /// Paused: its agent answers nothing (its connections are accepted, as a frozen process's
    /// socket accepts them).
    frozen: tokio::sync::watch::Sender<bool>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The replica exits: its server stops (its connections drop); it stays listed, exited.
    fn exit(&self, id: &ReplicaId, reason: ExitReason) {
        let mut state = self.state();
        let Some(replica) = state.replicas.get_mut(id) else {
            return;
        };
        if replica.status != ReplicaStatus::Running {
            return;
        }
        tracing::info!(replica = %id, %reason, "fake replica exited");
        replica.status = ReplicaStatus::Exited(reason);
        replica.address = None;
        if let Some(server) = replica.server.take() {
            server.abort();
        }
    }

    fn record_bot_request(&self, id: &ReplicaId, headers: HeaderMap, body: serde_json::Value) {
        if let Some(replica) = self.state().replicas.get_mut(id) {
            replica.bot_requests.push((headers, body));
        }
    }
}

/// The engine dropped (a test ended): its replicas go with it, as if stopped.
impl Drop for Shared {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for replica in state.replicas.values_mut() {
            for server in [replica.server.take(), replica.holder_server.take()]
                .into_iter()
                .flatten()
            {
                server.abort();
            }
            replica.book.close();
        }
    }
}

impl FakeEngine {
    pub fn new() -> Self {
        Self::default()
    }

    /// The running replicas and what they were started with.
    pub fn specs(&self) -> Vec<(ReplicaId, ReplicaSpec)> {
        let state = self.shared.state();
        state
            .replicas
            .iter()
            .filter(|(_, replica)| replica.status == ReplicaStatus::Running)
            .map(|(id, replica)| (id.clone(), replica.spec.clone()))
            .collect()
    }

    /// The `POST /bot` requests the replica received: their headers and JSON bodies.
    pub fn bot_requests(&self, id: &ReplicaId) -> Vec<(HeaderMap, serde_json::Value)> {
        let state = self.shared.state();
        state
            .replicas
            .get(id)
            .map(|replica| replica.bot_requests.clone())
            .unwrap_or_default()
    }

    /// The replica exits for `reason` now (its held connections drop), as the engine would see
    /// a crash, an OOM kill or a lost host.
    pub fn kill(&self, id: &ReplicaId, reason: ExitReason) {
        self.shared.exit(id, reason);
    }

    /// The replica's agent is paused (`docker pause`): it stays listed running, and answers
    /// nothing from now on.
    pub fn freeze(&self, id: &ReplicaId) {
        if let Some(replica) = self.shared.state().replicas.get(id) {
            replica.frozen.send_replace(true);
        }
    }

    /// Every `retire` asked, in order.
    pub fn retires(&self) -> Vec<RetireAsked> {
        self.shared.state().retires.clone()
    }

    /// The next `n` retires answer `Unavailable`, as a throttled or absent AWS would.
    pub fn fail_retires(&self, n: u32) {
        self.shared.state().failing_retires = n;
    }

    /// Whether the replica is paused, as its agent watches it.
    fn frozen(&self, id: &ReplicaId) -> tokio::sync::watch::Receiver<bool> {
        match self.shared.state().replicas.get(id) {
            Some(replica) => replica.frozen.subscribe(),
            None => tokio::sync::watch::Sender::new(false).subscribe(),
        }
    }

    /// How many times `run` was called (pull failures too).
    pub fn run_count(&self) -> usize {
        self.shared.state().runs
    }

    fn start_replica(&self, spec: &ReplicaSpec, address: Option<SocketAddr>) -> ReplicaId {
        let mut state = self.shared.state();
        state.next_id += 1;
        let id = ReplicaId(format!("fake-{:06}", state.next_id));
        state.replicas.insert(
            id.clone(),
            Replica {
                spec: spec.clone(),
                address,
                holder: None,
                status: ReplicaStatus::Running,
                server: None,
                holder_server: None,
                book: Arc::new(LogBook::default()),
                bot_requests: Vec::new(),
                frozen: tokio::sync::watch::Sender::new(false),
            },
        );
        id
    }

    fn book(&self, id: &ReplicaId) -> Option<Arc<LogBook>> {
        let state = self.shared.state();
        state.replicas.get(id).map(|replica| replica.book.clone())
    }
}

impl Engine for FakeEngine {
    async fn run(&self, spec: &ReplicaSpec) -> Result<ReplicaId, RunError> {
        self.shared.state().runs += 1;
        if spec.image == LATE_UNPULLABLE_IMAGE {
            let id = self.start_replica(spec, None);
            let message = pull_message(&pull_denied(&spec.image));
            self.shared.exit(&id, ExitReason::PullFailed { message });
            return Ok(id);
        }
        if spec.image != EXAMPLE_IMAGE {
            return Err(RunError::PullFailed {
                message: pull_denied(&spec.image),
            });
        }
        let knobs = agent::StartKnobs::of(&spec.env);
        if let Some(code) = knobs.exit_at_start {
            let id = self.start_replica(spec, None);
            if let Some(book) = self.book(&id) {
                book.write_start(&spec.env);
                let text = format!("exiting at start with code {code}");
                book.write("main", Level::Error, None, &text);
            }
            self.shared.exit(&id, ExitReason::Exited { code });
            return Ok(id);
        }
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|error| EngineError::Unavailable(error.to_string()))?;
        let address = listener
            .local_addr()
            .map_err(|error| EngineError::Unavailable(error.to_string()))?;
        let id = self.start_replica(spec, Some(address));
        let Some(book) = self.book(&id) else {
            return Err(EngineError::NoSuchReplica(id).into());
        };
        book.write_start(&spec.env);
        let agent = Agent {
            id: id.clone(),
            engine: Arc::downgrade(&self.shared),
            book,
            ready_at: tokio::time::Instant::now() + knobs.ready_after,
            exit_after_ready: knobs.exit_after_ready,
            memory_mib: spec.limits.memory_mib,
            environment: book::environment(&spec.env),
            frozen: self.frozen(&id),
        };
        let server = tokio::spawn(agent::serve(listener, Arc::new(agent)));
        let (holder, holder_server) = serve_holder(address, &spec.holder).await?;
        let holder_address = holder.address;
        match self.shared.state().replicas.get_mut(&id) {
            Some(replica) => {
                replica.server = Some(server.abort_handle());
                replica.holder = Some(holder);
                replica.holder_server = Some(holder_server);
            }
            None => {
                server.abort();
                holder_server.abort();
            }
        }
        tracing::info!(replica = %id, %address, holder = %holder_address, "fake replica started");
        Ok(id)
    }

    async fn stop(&self, id: &ReplicaId, _grace: Duration) -> Result<(), EngineError> {
        let removed = self.shared.state().replicas.remove(id);
        if let Some(replica) = removed {
            if let Some(server) = replica.server {
                server.abort();
                // The example agent's SIGTERM handler.
                replica.book.write("stop", Level::Info, None, "stopping");
            }
            if let Some(holder) = replica.holder_server {
                holder.abort();
            }
            replica.book.close();
            tracing::info!(replica = %id, "fake replica stopped");
        }
        Ok(())
    }

    async fn list(&self, stack: &str) -> Result<Vec<ReplicaView>, EngineError> {
        let state = self.shared.state();
        Ok(state
            .replicas
            .iter()
            .filter(|(_, replica)| replica.spec.labels.stack == stack)
            .map(|(id, replica)| ReplicaView {
                id: id.clone(),
                labels: replica.spec.labels.clone(),
                address: replica.address,
                holder: replica.holder.clone(),
                status: replica.status.clone(),
            })
            .collect())
    }

    fn logs(
        &self,
        id: &ReplicaId,
        since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        match self.book(id) {
            Some(book) => book.follow(since),
            None => Box::pin(futures_util::stream::once(std::future::ready(Err(
                EngineError::NoSuchReplica(id.clone()),
            )))),
        }
    }

    /// Records the ask (the fake keeps nothing per deployment to release).
    async fn retire(&self, deployment_id: &str) -> Result<(), EngineError> {
        let mut state = self.shared.state();
        let replicas_left = (state.replicas.values())
            .filter(|replica| replica.spec.labels.deployment_id == deployment_id)
            .count();
        let failed = state.failing_retires > 0;
        state.failing_retires = state.failing_retires.saturating_sub(1);
        state.retires.push(RetireAsked {
            deployment_id: deployment_id.to_owned(),
            replicas_left,
            failed,
        });
        match failed {
            true => Err(EngineError::Unavailable("a failing retire (fake)".into())),
            false => Ok(()),
        }
    }
}

/// The real holder's server for the agent at `agent`, on a port of its own, with the spec's
/// token and checks: where it answers and its task.
async fn serve_holder(
    agent: SocketAddr,
    settings: &HolderSettings,
) -> Result<(Endpoint, AbortHandle), EngineError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|error| EngineError::Unavailable(error.to_string()))?;
    let address = listener
        .local_addr()
        .map_err(|error| EngineError::Unavailable(error.to_string()))?;
    let holder = Holder::new(agent, settings.token.clone(), settings.checks);
    let server = tokio::spawn(holder::serve(listener, holder));
    let endpoint = Endpoint {
        address,
        token: settings.token.clone(),
    };
    Ok((endpoint, server.abort_handle()))
}

/// What Docker says when a registry has no such repository (or refuses it without login).
fn pull_denied(image: &str) -> String {
    let without_digest = image.split('@').next().unwrap_or(image);
    let name_start = without_digest.rfind('/').map_or(0, |slash| slash + 1);
    let repository = match without_digest[name_start..].rfind(':') {
        Some(colon) => &without_digest[..name_start + colon],
        None => without_digest,
    };
    format!(
        "pull access denied for {repository}, repository does not exist or may require 'docker login'"
    )
}

#[cfg(test)]
mod tests;
