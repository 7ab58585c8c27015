//! A deployment's task definition (docs/data-plane.md, "On ECS"): one family per deployment, the
//! profile's Fargate task size exactly, the agent's container and the holder's. Secret values
//! never appear here: the agent's secret keys are named by reference (`secrets`, a Secrets
//! Manager ARN and JSON key), and so are the pull credentials (`repositoryCredentials`).

use agent_holder::{HOLDER_PORT, Token};
use aws_sdk_ecs::types::{
    ContainerCondition, ContainerDefinition, ContainerDependency, ContainerOverride,
    CpuArchitecture, KernelCapabilities, KeyValuePair, LinuxParameters, LogConfiguration,
    LogDriver, OsFamily, PortMapping, RepositoryCredentials, RuntimePlatform, Secret, Tag,
    TaskOverride, TransportProtocol,
};

use super::EcsConfig;
use crate::engine::STOP_GRACE;
use crate::replica::{
    AGENT_PORT, DROPPED_CAPABILITIES, HOLDER_MEMORY_MIB, HOLDER_USER, HolderSettings, Limits,
    NodeType, ReplicaLabels, ReplicaSpec, label,
};

/// The container names inside a replica's task.
pub const AGENT_CONTAINER: &str = "agent";
pub const HOLDER_CONTAINER: &str = "holder";

/// The environment variable that stays a plain value: the platform's, never a secret.
const PLAIN_ENV: &str = "PORT";

/// A deployment's task definition family.
pub fn family(deployment_id: &str) -> String {
    format!("ah-{deployment_id}")
}

/// The awslogs stream prefix of a deployment's agent containers in the staging group:
/// `{namespace}/{agent}/{deploymentId}`. A prefix is only the head of a stream name, so it
/// follows CloudWatch Logs' stream name rules (1-512 characters, no `:` or `*`), which allow
/// `/`; ECS adds `/{container}/{taskId}` itself. Namespaces and agent names are DNS labels and
/// deployment ids UUIDs (contract), so the whole name stays under 200 characters.
pub fn log_prefix(labels: &ReplicaLabels) -> String {
    format!(
        "{}/{}/{}",
        labels.namespace, labels.agent, labels.deployment_id
    )
}

/// The awslogs stream of a task's agent container: `{prefix}/{container}/{taskId}`.
pub fn log_stream(prefix: &str, task_id: &str) -> String {
    format!("{prefix}/{AGENT_CONTAINER}/{task_id}")
}

/// The awslogs options that say where a container's lines are.
pub const GROUP_OPTION: &str = "awslogs-group";
pub const PREFIX_OPTION: &str = "awslogs-stream-prefix";

/// The CPU architecture of a node type on Fargate (contract section 12: `arm` is Graviton).
pub fn cpu_architecture(node_type: NodeType) -> CpuArchitecture {
    match node_type {
        NodeType::Arm => CpuArchitecture::Arm64,
    }
}

/// A Fargate task size: CPU units (1024 = one vCPU) and MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSize {
    pub cpu_units: u32,
    pub memory_mib: u32,
}

impl TaskSize {
    /// The profile's limits as a Fargate size, exactly; `None` when Fargate has no such size
    /// (its table: 0.25 vCPU with 0.5-2 GiB, 0.5 with 1-4, 1 with 2-8, 2 with 4-16, 4 with 8-30).
    pub fn of(limits: &Limits) -> Option<Self> {
        let cpu_units = limits.cpu_millis.checked_mul(1024)? / 1000;
        let (low, high, step) = match cpu_units {
            256 => (512, 2048, 1024),
            512 => (1024, 4096, 1024),
            1024 => (2048, 8192, 1024),
            2048 => (4096, 16384, 1024),
            4096 => (8192, 30720, 1024),
            _ => return None,
        };
        let memory_mib = limits.memory_mib;
        let valid = (low..=high).contains(&memory_mib)
            && (memory_mib == 512 || memory_mib.is_multiple_of(step));
        valid.then_some(TaskSize {
            cpu_units,
            memory_mib,
        })
    }
}

/// Where the deployment's secret values are, by ARN: never the values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    /// The secret holding the secret set's keys as one JSON object.
    pub env: Option<String>,
    /// The secret holding `{"username", "password"}` for the image's registry.
    pub pull: Option<String>,
}

/// The task definition could not be written from the spec.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    #[error("Fargate has no task size of {cpu_millis} mCPU and {memory_mib} MiB")]
    NoTaskSize { cpu_millis: u32, memory_mib: u32 },
    #[error("a secret key {0} has no secret to be read from")]
    MissingReference(String),
    #[error("the task definition is incomplete: {0}")]
    Incomplete(String),
}

/// Everything RegisterTaskDefinition is given for a deployment.
#[derive(Debug, Clone)]
pub struct Definition {
    pub family: String,
    pub size: TaskSize,
    pub node_type: NodeType,
    pub containers: Vec<ContainerDefinition>,
    pub tags: Vec<Tag>,
}

impl Definition {
    pub fn runtime_platform(&self) -> RuntimePlatform {
        RuntimePlatform::builder()
            .cpu_architecture(cpu_architecture(self.node_type))
            .operating_system_family(OsFamily::Linux)
            .build()
    }
}

/// The deployment's task definition for `spec`.
pub fn definition(
    config: &EcsConfig,
    spec: &ReplicaSpec,
    references: &References,
) -> Result<Definition, DefinitionError> {
    let size = TaskSize::of(&spec.limits).ok_or(DefinitionError::NoTaskSize {
        cpu_millis: spec.limits.cpu_millis,
        memory_mib: spec.limits.memory_mib,
    })?;
    Ok(Definition {
        family: family(&spec.labels.deployment_id),
        size,
        node_type: spec.node_type,
        containers: vec![agent(config, spec, size, references)?, holder(config)?],
        tags: label_tags(&spec.labels),
    })
}

/// The replica's labels as ECS tags (the task definition's and the task's).
pub fn label_tags(labels: &ReplicaLabels) -> Vec<Tag> {
    (labels.pairs().iter())
        .map(|(key, value)| Tag::builder().key(*key).value(*value).build())
        .collect()
}

/// A task's tags: its labels and its holder's token (a data plane that adopts the task reads
/// it back; the agent's container has no task role to read tags with).
pub fn tags(labels: &ReplicaLabels, token: &Token) -> Vec<Tag> {
    let mut tags = label_tags(labels);
    tags.push(
        Tag::builder()
            .key(label::HOLDER_TOKEN)
            .value(token.as_str())
            .build(),
    );
    tags
}

/// The holder's environment of this task alone (its token and checks): a task definition is a
/// deployment's, shared by its replicas, and a token is one replica's.
pub fn holder_overrides(holder: &HolderSettings) -> TaskOverride {
    let env = (holder.env().into_iter()).map(|var| {
        KeyValuePair::builder()
            .name(var.name)
            .value(var.value)
            .build()
    });
    TaskOverride::builder()
        .container_overrides(
            ContainerOverride::builder()
                .name(HOLDER_CONTAINER)
                .set_environment(Some(env.collect()))
                .build(),
        )
        .build()
}

/// The agent's container: first in the definition (moto describes a task's first container
/// only), essential, `PORT` in the environment and every other key by reference. Its memory is
/// a reservation, not a limit: the task's size is the hard limit, as the profile says.
fn agent(
    config: &EcsConfig,
    spec: &ReplicaSpec,
    size: TaskSize,
    references: &References,
) -> Result<ContainerDefinition, DefinitionError> {
    let mut container = ContainerDefinition::builder()
        .name(AGENT_CONTAINER)
        .image(&spec.image)
        .essential(true)
        .memory_reservation(to_i32(size.memory_mib - HOLDER_MEMORY_MIB))
        .port_mappings(port(AGENT_PORT))
        .stop_timeout(to_i32(STOP_GRACE.as_secs() as u32))
        .depends_on(
            ContainerDependency::builder()
                .container_name(HOLDER_CONTAINER)
                .condition(ContainerCondition::Start)
                .build()
                .map_err(incomplete)?,
        )
        .linux_parameters(
            LinuxParameters::builder()
                .capabilities(
                    (DROPPED_CAPABILITIES.iter())
                        .fold(KernelCapabilities::builder(), |caps, dropped| {
                            caps.drop(*dropped)
                        })
                        .build(),
                )
                .build(),
        )
        .log_configuration(awslogs(
            config,
            &config.replica_log_group,
            &log_prefix(&spec.labels),
        )?);
    for var in &spec.env {
        container = if var.name == PLAIN_ENV {
            container.environment(
                KeyValuePair::builder()
                    .name(&var.name)
                    .value(&var.value)
                    .build(),
            )
        } else {
            let arn = references
                .env
                .as_deref()
                .ok_or_else(|| DefinitionError::MissingReference(var.name.clone()))?;
            container.secrets(
                Secret::builder()
                    .name(&var.name)
                    .value_from(format!("{arn}:{}::", var.name))
                    .build()
                    .map_err(incomplete)?,
            )
        };
    }
    if let Some(pull) = &references.pull {
        container = container.repository_credentials(
            RepositoryCredentials::builder()
                .credentials_parameter(pull)
                .build()
                .map_err(incomplete)?,
        );
    }
    Ok(container.build())
}

/// The holder's container: the platform's, 32 MiB, read-only, no capability, user nobody.
/// The agent depends on it, so ECS stops the agent first (with its grace), then the holder.
fn holder(config: &EcsConfig) -> Result<ContainerDefinition, DefinitionError> {
    Ok(ContainerDefinition::builder()
        .name(HOLDER_CONTAINER)
        .image(&config.holder_image)
        .essential(true)
        .memory(to_i32(HOLDER_MEMORY_MIB))
        .port_mappings(port(HOLDER_PORT))
        .readonly_root_filesystem(true)
        .user(HOLDER_USER)
        .linux_parameters(
            LinuxParameters::builder()
                .capabilities(KernelCapabilities::builder().drop("ALL").build())
                .build(),
        )
        .log_configuration(awslogs(
            config,
            &config.platform_log_group,
            HOLDER_CONTAINER,
        )?)
        .build())
}

fn port(port: u16) -> PortMapping {
    PortMapping::builder()
        .container_port(i32::from(port))
        .protocol(TransportProtocol::Tcp)
        .build()
}

fn awslogs(
    config: &EcsConfig,
    group: &str,
    prefix: &str,
) -> Result<LogConfiguration, DefinitionError> {
    LogConfiguration::builder()
        .log_driver(LogDriver::Awslogs)
        .options(GROUP_OPTION, group)
        .options("awslogs-region", &config.region)
        .options(PREFIX_OPTION, prefix)
        .build()
        .map_err(incomplete)
}

fn incomplete(err: aws_sdk_ecs::error::BuildError) -> DefinitionError {
    DefinitionError::Incomplete(err.to_string())
}

/// Task sizes are far below `i32::MAX`.
fn to_i32(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests;
