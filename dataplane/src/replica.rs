//! What a replica is: one container of a deployment's image (contract section 12), what it is
//! started with, and what became of it. Engines map these onto their own (Docker's labels and
//! limits, ECS's tags and task sizes); nothing here knows an engine.

use std::fmt;
use std::net::SocketAddr;

use agent_holder::{CHECK_MISSES_ENV, CHECK_SECONDS_ENV, Checks, Endpoint, TOKEN_ENV, Token};
use serde::{Deserialize, Serialize};

/// The port the container contract serves on (`PORT=8080`, the anchor's default).
pub const AGENT_PORT: u16 = 8080;

/// A replica's id: the engine's own (a container id, a task ARN).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ReplicaId(pub String);

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The labels (Docker) or tags (ECS) every replica carries: who it belongs to. They are fixed
/// when it starts, so nothing that changes later (a claim) lives here.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReplicaLabels {
    /// The stack that started it (locally `run-$PORT`): two stacks never touch each other's.
    pub stack: String,
    pub namespace: String,
    pub agent: String,
    pub service_id: String,
    pub deployment_id: String,
}

impl ReplicaLabels {
    /// The label names, each under the `agent-hosting.` prefix, with their values.
    pub fn pairs(&self) -> [(&'static str, &str); 5] {
        [
            (label::STACK, &self.stack),
            (label::NAMESPACE, &self.namespace),
            (label::AGENT, &self.agent),
            (label::SERVICE_ID, &self.service_id),
            (label::DEPLOYMENT_ID, &self.deployment_id),
        ]
    }

    /// The labels read back from an engine's `name -> value` pairs; `None` when one is missing
    /// (not a replica of ours).
    pub fn from_pairs<'a>(mut get: impl FnMut(&str) -> Option<&'a str>) -> Option<Self> {
        let mut value = |name: &str| get(name).map(str::to_owned);
        Some(ReplicaLabels {
            stack: value(label::STACK)?,
            namespace: value(label::NAMESPACE)?,
            agent: value(label::AGENT)?,
            service_id: value(label::SERVICE_ID)?,
            deployment_id: value(label::DEPLOYMENT_ID)?,
        })
    }
}

/// The label names.
pub mod label {
    pub const STACK: &str = "agent-hosting.stack";
    pub const NAMESPACE: &str = "agent-hosting.namespace";
    pub const AGENT: &str = "agent-hosting.agent";
    pub const SERVICE_ID: &str = "agent-hosting.serviceId";
    pub const DEPLOYMENT_ID: &str = "agent-hosting.deploymentId";
    /// Which of a replica's containers this is, where a replica is two (Docker): one of
    /// [`part`]'s values.
    pub const PART: &str = "agent-hosting.part";
    /// On the agent's container: its holder's container id.
    pub const HOLDER_ID: &str = "agent-hosting.holderId";
    /// On the holder's container (a task's tag on ECS): the token its requests carry
    /// (`agent_holder::Token`), read back by a data plane that adopts the replica.
    pub const HOLDER_TOKEN: &str = "agent-hosting.holderToken";

    /// The values of [`PART`].
    pub mod part {
        pub const HOLDER: &str = "holder";
        pub const AGENT: &str = "agent";
    }
}

/// A profile's hard limits (contract section 12: agent-1x 0.5 vCPU / 1 GiB, agent-2x 1 vCPU /
/// 2 GiB; on Fargate exactly those task sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub cpu_millis: u32,
    pub memory_mib: u32,
    /// Processes the replica may have at once (Fargate enforces its own; Docker is told).
    pub pids: u32,
}

/// The PID limit a replica runs under.
pub const PIDS_LIMIT: u32 = 4096;

/// The kernel capabilities an agent's container runs without, of the 14 Docker and Fargate give
/// by default: raw and packet sockets (with them a replica forges ARP and takes a neighbour's
/// traffic), device nodes, the audit log, file capabilities and chroot. An agent needs none of
/// them. What remains is what an image that runs as root may use to set itself up: CHOWN,
/// DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP and NET_BIND_SERVICE; none is
/// ever added.
pub const DROPPED_CAPABILITIES: [&str; 5] =
    ["NET_RAW", "MKNOD", "AUDIT_WRITE", "SETFCAP", "SYS_CHROOT"];

/// The holder container's own memory, a hard limit on either engine: the platform's, taken
/// out of the profile's (the agent keeps the rest).
pub const HOLDER_MEMORY_MIB: u32 = 32;

/// The holder's processes at most, where the engine bounds them per container (Docker; Fargate
/// has no per-container bound).
pub const HOLDER_PIDS: u32 = 64;

/// nobody: the holder needs no user of its image (it has none).
pub const HOLDER_USER: &str = "65534";

impl Limits {
    /// The limits of a manifest's `resources` (`cpu` "500m" or "1", `memory` "1Gi" or "2Gi"):
    /// `None` for anything else.
    pub fn of_resources(cpu: &str, memory: &str) -> Option<Self> {
        let cpu_millis = match cpu.strip_suffix('m') {
            Some(millis) => millis.parse().ok()?,
            None => cpu.parse::<u32>().ok()?.checked_mul(1000)?,
        };
        let memory_mib = memory
            .strip_suffix("Gi")?
            .parse::<u32>()
            .ok()?
            .checked_mul(1024)?;
        Some(Limits {
            cpu_millis,
            memory_mib,
            pids: PIDS_LIMIT,
        })
    }
}

/// An environment variable of a replica. Its value may be a secret: `Debug` shows the name only.
#[derive(Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

impl fmt::Debug for EnvVar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=<redacted>", self.name)
    }
}

/// Credentials for pulling an image (an image pull secret set, opened).
#[derive(Clone, PartialEq, Eq)]
pub struct PullAuth {
    pub registry: String,
    pub username: String,
    pub password: String,
}

impl fmt::Debug for PullAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PullAuth {{ registry: {}, username: {} }}",
            self.registry, self.username
        )
    }
}

/// The manifest's node type (`dailyNodeType`, one of the catalog's `NODE_TYPES`): the CPU
/// architecture a replica runs on where the engine chooses it (Fargate: `arm` is ARM64,
/// contract section 12). Locally Docker runs the host's architecture whatever it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeType {
    Arm,
}

impl NodeType {
    /// The node type of a catalog name; `None` for a name the catalog does not have.
    pub fn of_name(name: &str) -> Option<Self> {
        match name {
            "arm" => Some(NodeType::Arm),
            _ => None,
        }
    }
}

/// Everything an engine needs to run one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaSpec {
    pub labels: ReplicaLabels,
    pub image: String,
    pub pull: Option<PullAuth>,
    pub limits: Limits,
    pub node_type: NodeType,
    /// `PORT=8080` and the secret set's keys, in that order.
    pub env: Vec<EnvVar>,
    /// What the replica's holder is started with.
    pub holder: HolderSettings,
}

/// A replica's holder's token (its own, made for it) and its checks of a busy agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderSettings {
    pub token: Token,
    pub checks: Checks,
}

impl HolderSettings {
    /// A new replica's: a token of two version-4 UUIDs (244 random bits), never another
    /// replica's.
    pub fn new(checks: Checks) -> Self {
        let random = || uuid::Uuid::new_v4().simple().to_string();
        HolderSettings {
            token: Token::new(format!("{}{}", random(), random())),
            checks,
        }
    }

    /// The holder's environment: its token and its checks.
    pub fn env(&self) -> Vec<EnvVar> {
        let var = |name: &str, value: String| EnvVar {
            name: name.to_owned(),
            value,
        };
        vec![
            var(TOKEN_ENV, self.token.as_str().to_owned()),
            var(
                CHECK_SECONDS_ENV,
                self.checks.every.as_secs().max(1).to_string(),
            ),
            var(CHECK_MISSES_ENV, self.checks.misses.to_string()),
        ]
    }
}

/// Why a replica is no longer running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitReason {
    /// Its process exited with this code.
    Exited { code: i64 },
    /// The kernel killed it for memory (the profile's limit).
    OomKilled,
    /// The engine lost it (its host went away, it was removed by someone else).
    Lost,
    /// Its image could not be pulled, found after `run` returned (ECS: a task that stopped
    /// `TaskFailedToStart` with `CannotPullContainerError`): the registry's message, within
    /// [`MAX_PULL_MESSAGE_BYTES`]. A pull that fails within `run` is `RunError::PullFailed`.
    PullFailed { message: String },
}

/// The most of a registry's message a pull failure keeps: section 7's 1 KiB of a report's error.
pub const MAX_PULL_MESSAGE_BYTES: usize = 1024;

/// The end of a registry's `message` (where it names the cause) within
/// [`MAX_PULL_MESSAGE_BYTES`], cut on a character boundary.
pub fn pull_message(message: &str) -> String {
    let mut start = message.len().saturating_sub(MAX_PULL_MESSAGE_BYTES);
    while !message.is_char_boundary(start) {
        start += 1;
    }
    message[start..].to_owned()
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Exited { code } => write!(f, "exited with code {code}"),
            ExitReason::OomKilled => f.write_str("killed for memory (OOM)"),
            ExitReason::Lost => f.write_str("lost by the engine"),
            ExitReason::PullFailed { .. } => f.write_str("its image could not be pulled"),
        }
    }
}

/// What a replica is doing, as the engine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicaStatus {
    /// Created or running; whether it is ready is the container contract's question.
    Running,
    Exited(ExitReason),
}

/// One replica as the engine lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaView {
    pub id: ReplicaId,
    pub labels: ReplicaLabels,
    /// Where its container contract answers (port 8080), once it has an address.
    pub address: Option<SocketAddr>,
    /// Where its holder answers (`agent_holder::HOLDER_PORT` in the agent's network namespace)
    /// and its token, once it has an address: sessions are handed to it and their ends asked
    /// of it.
    pub holder: Option<Endpoint>,
    pub status: ReplicaStatus,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profiles_resources_are_their_hard_limits() {
        for profile in shared::catalog::PROFILES {
            assert!(
                Limits::of_resources(profile.cpu, profile.memory).is_some(),
                "{}",
                profile.name
            );
        }
        assert_eq!(
            Limits::of_resources("500m", "1Gi"),
            Some(Limits {
                cpu_millis: 500,
                memory_mib: 1024,
                pids: PIDS_LIMIT
            })
        );
        assert_eq!(
            Limits::of_resources("1", "2Gi").map(|l| (l.cpu_millis, l.memory_mib)),
            Some((1000, 2048))
        );
        assert_eq!(Limits::of_resources("1.5", "2Gi"), None);
        assert_eq!(Limits::of_resources("1", "2G"), None);
    }

    #[test]
    fn every_node_type_of_the_catalog_is_one_a_replica_runs_on() {
        for name in shared::catalog::NODE_TYPES {
            assert!(NodeType::of_name(name).is_some(), "{name}");
        }
        assert_eq!(
            NodeType::of_name(shared::catalog::DEFAULT_NODE_TYPE),
            Some(NodeType::Arm)
        );
        assert_eq!(NodeType::of_name("x86"), None);
    }

    #[test]
    fn a_pull_failures_message_keeps_its_end_within_one_kib() {
        let long = format!("CannotPullContainerError: {}: not found", "é".repeat(2000));
        let message = pull_message(&long);
        assert!(message.len() <= MAX_PULL_MESSAGE_BYTES, "{}", message.len());
        assert!(message.ends_with("é: not found"), "{message}");
        assert_eq!(pull_message("manifest unknown"), "manifest unknown");
    }

    #[test]
    fn a_secret_value_never_reaches_debug_output() {
        let env = EnvVar {
            name: "OPENAI_API_KEY".into(),
            value: "sk-very-secret".into(),
        };
        let pull = PullAuth {
            registry: "ghcr.io".into(),
            username: "acme".into(),
            password: "hunter2".into(),
        };
        let shown = format!("{env:?} {pull:?}");
        assert!(
            shown.contains("OPENAI_API_KEY") && shown.contains("acme"),
            "{shown}"
        );
        assert!(
            !shown.contains("sk-very-secret") && !shown.contains("hunter2"),
            "{shown}"
        );
    }
}
