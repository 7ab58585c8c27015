//! Amazon ECS on Fargate as the [`Engine`] (contract section 12, issue 33;
//! docs/data-plane.md, "On ECS"): a replica is a standalone Fargate task of its deployment's task
//! definition (never a service: a service may scale in a task that holds a session). The
//! concerns, each its own file: the task definition ([`definition`]), the secret values
//! written where the definition names them ([`secrets`]), tasks listed and their ends
//! classified ([`tasks`]), ECS's Task State Change events read the same way ([`events`]), the
//! lines read back from CloudWatch Logs ([`logs`]), a retired deployment's revisions
//! deregistered ([`revisions`]), the SDKs' failures ([`error`]).

pub mod definition;
mod error;
pub mod events;
mod logs;
mod revisions;
pub mod secrets;
pub mod tasks;

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_ecs::types::{
    AssignPublicIp, AwsVpcConfiguration, Compatibility, LaunchType, NetworkConfiguration,
    NetworkMode,
};
use futures_util::stream::BoxStream;
use time::OffsetDateTime;
use tokio::sync::Mutex;

use crate::engine::{Engine, EngineError, LogLine, RunError, STOP_ANSWER_MARGIN};
use crate::replica::{ReplicaId, ReplicaSpec, ReplicaView};
use definition::Definition;
use error::{is_task_not_found, sdk_error};
use tasks::TaskEnd;

/// What the stack gives the engine (template parameters and resources).
#[derive(Debug, Clone)]
pub struct EcsConfig {
    pub cluster: String,
    /// The platform team's subnets and the one security group every task is in.
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
    /// A public IP for each task (default no: the subnets route out through NAT).
    pub assign_public_ip: bool,
    /// The role ECS pulls images, writes logs and reads secrets with; no container has it.
    pub execution_role_arn: String,
    /// The holder's image (the stack's ECR).
    pub holder_image: String,
    /// Where the deployments' secrets are written (the execution role reads only this prefix).
    pub secrets_prefix: String,
    /// The KMS key the deployments' secrets are encrypted under (else Secrets Manager's own).
    pub secrets_kms_key: Option<String>,
    /// The region awslogs writes in.
    pub region: String,
    /// The platform's log group, for the holders' lines (never the customer's).
    pub platform_log_group: String,
    /// The stack's staging group awslogs writes the agents' lines to (REPLICA_LOG_GROUP): never
    /// section 5's `/agent-hosting/...` groups, whose subscription would ingest each line a
    /// second time under a stream name section 5 does not know; the shipper carries the lines
    /// from here to section 5's streams.
    pub replica_log_group: String,
    /// Between two reads of a task's state or lines.
    pub poll: Duration,
    /// How long `run` waits for a task to leave PENDING (its pull) before answering anyway.
    pub start_timeout: Duration,
}

/// The AWS clients the engine speaks through, built by the caller (region, credentials,
/// endpoint, bounds: one `SdkConfig`).
#[derive(Debug, Clone)]
pub struct EcsClients {
    pub ecs: aws_sdk_ecs::Client,
    pub secrets: aws_sdk_secretsmanager::Client,
    pub logs: aws_sdk_cloudwatchlogs::Client,
}

impl EcsClients {
    pub fn new(config: &aws_config::SdkConfig) -> Self {
        EcsClients {
            ecs: aws_sdk_ecs::Client::new(config),
            secrets: aws_sdk_secretsmanager::Client::new(config),
            logs: aws_sdk_cloudwatchlogs::Client::new(config),
        }
    }
}

/// A deployment's registered task definition, and the spec it was written from (a hash: the
/// values it covers stay in memory only).
#[derive(Debug, Clone)]
struct Registered {
    spec_hash: u64,
    arn: String,
}

/// ECS on Fargate in one cluster.
pub struct EcsEngine {
    clients: EcsClients,
    config: Arc<EcsConfig>,
    /// Per deployment: written once per process, again when its spec changes.
    registered: Mutex<HashMap<String, Registered>>,
    /// Tasks stopped through this engine (moto keeps a stopped task's tags; AWS drops them).
    removed: std::sync::Mutex<HashSet<ReplicaId>>,
}

impl EcsEngine {
    pub fn new(clients: EcsClients, config: EcsConfig) -> Self {
        EcsEngine {
            clients,
            config: Arc::new(config),
            registered: Mutex::new(HashMap::new()),
            removed: std::sync::Mutex::new(Default::default()),
        }
    }

    /// The deployment's secrets written and its task definition registered; its ARN.
    async fn task_definition(&self, spec: &ReplicaSpec) -> Result<String, EngineError> {
        let deployment = &spec.labels.deployment_id;
        let spec_hash = hash(spec);
        let mut registered = self.registered.lock().await;
        if let Some(known) = registered.get(deployment)
            && known.spec_hash == spec_hash
        {
            return Ok(known.arn.clone());
        }
        let references = secrets::write(&self.clients.secrets, &self.config, spec).await?;
        let definition = definition::definition(&self.config, spec, &references)
            .map_err(|err| EngineError::Refused(err.to_string()))?;
        let arn = self.register(definition).await?;
        tracing::info!(deployment_id = %deployment, task_definition = %arn, "task definition registered");
        registered.insert(
            deployment.clone(),
            Registered {
                spec_hash,
                arn: arn.clone(),
            },
        );
        Ok(arn)
    }

    async fn register(&self, definition: Definition) -> Result<String, EngineError> {
        let registered = self
            .clients
            .ecs
            .register_task_definition()
            .family(&definition.family)
            .requires_compatibilities(Compatibility::Fargate)
            .network_mode(NetworkMode::Awsvpc)
            .cpu(definition.size.cpu_units.to_string())
            .memory(definition.size.memory_mib.to_string())
            .runtime_platform(definition.runtime_platform())
            .execution_role_arn(&self.config.execution_role_arn)
            .set_container_definitions(Some(definition.containers))
            .set_tags(Some(definition.tags))
            .send()
            .await
            .map_err(sdk_error)?;
        registered
            .task_definition
            .and_then(|definition| definition.task_definition_arn)
            .ok_or_else(|| EngineError::Refused("RegisterTaskDefinition answered no ARN".into()))
    }

    /// One standalone task of the definition, in the stack's subnets, tagged with the labels.
    async fn run_task(&self, spec: &ReplicaSpec, arn: &str) -> Result<ReplicaId, EngineError> {
        let network = AwsVpcConfiguration::builder()
            .set_subnets(Some(self.config.subnets.clone()))
            .set_security_groups(Some(self.config.security_groups.clone()))
            .assign_public_ip(match self.config.assign_public_ip {
                true => AssignPublicIp::Enabled,
                false => AssignPublicIp::Disabled,
            })
            .build()
            .map_err(|err| EngineError::Refused(err.to_string()))?;
        let ran = self
            .clients
            .ecs
            .run_task()
            .cluster(&self.config.cluster)
            .task_definition(arn)
            .launch_type(LaunchType::Fargate)
            .count(1)
            .started_by(&spec.labels.deployment_id)
            .network_configuration(
                NetworkConfiguration::builder()
                    .awsvpc_configuration(network)
                    .build(),
            )
            .set_tags(Some(definition::tags(&spec.labels, &spec.holder.token)))
            .overrides(definition::holder_overrides(&spec.holder))
            .send()
            .await
            .map_err(sdk_error)?;
        if let Some(failure) = ran.failures().first() {
            return Err(EngineError::Refused(format!(
                "RunTask: {} {}",
                failure.reason().unwrap_or("failed"),
                failure.detail().unwrap_or_default()
            )));
        }
        ran.tasks()
            .first()
            .and_then(|task| task.task_arn())
            .map(|arn| ReplicaId(arn.to_owned()))
            .ok_or_else(|| EngineError::Refused("RunTask answered no task".into()))
    }

    /// Waits (bounded) for the task to leave PENDING: a pull that failed is the run's error, as
    /// on Docker; any other stop is left for `list` to report.
    async fn await_start(&self, replica: &ReplicaId) -> Result<(), RunError> {
        let deadline = tokio::time::Instant::now() + self.config.start_timeout;
        loop {
            let task =
                tasks::describe_one(&self.clients.ecs, &self.config.cluster, replica).await?;
            match task
                .as_ref()
                .map(|task| (task.last_status(), tasks::end(task)))
            {
                Some((_, Some(TaskEnd::PullFailed { message }))) => {
                    self.forget(replica);
                    return Err(RunError::PullFailed { message });
                }
                Some((_, Some(_))) | Some((Some("RUNNING"), None)) | None => return Ok(()),
                Some(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(replica = %replica, "task still starting at the start timeout");
                return Ok(());
            }
            tokio::time::sleep(self.config.poll).await;
        }
    }

    /// Waits (bounded) until ECS says the task is STOPPED or forgot it.
    async fn await_stopped(&self, replica: &ReplicaId, bound: Duration) -> Result<(), EngineError> {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let task =
                tasks::describe_one(&self.clients.ecs, &self.config.cluster, replica).await?;
            if task.is_none_or(|task| task.last_status() == Some("STOPPED")) {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(EngineError::Unavailable(format!(
                    "{replica} was not stopped within {bound:?}"
                )));
            }
            tokio::time::sleep(self.config.poll).await;
        }
    }

    /// From now on the task is not listed.
    fn forget(&self, replica: &ReplicaId) {
        if let Ok(mut removed) = self.removed.lock() {
            removed.insert(replica.clone());
        }
    }

    fn is_removed(&self, replica: &ReplicaId) -> bool {
        self.removed
            .lock()
            .map(|removed| removed.contains(replica))
            .unwrap_or(false)
    }

    /// Forgets the removed tasks ECS no longer lists (it keeps a stopped task about an hour),
    /// so the set stays as small as the cluster's recent tasks.
    fn prune_removed(&self, listed: &[String]) {
        if let Ok(mut removed) = self.removed.lock() {
            removed.retain(|replica| listed.binary_search(&replica.0).is_ok());
        }
    }
}

/// A hash of everything a task definition and its secrets are written from.
fn hash(spec: &ReplicaSpec) -> u64 {
    let mut hasher = DefaultHasher::new();
    spec.image.hash(&mut hasher);
    spec.limits.cpu_millis.hash(&mut hasher);
    spec.limits.memory_mib.hash(&mut hasher);
    spec.node_type.hash(&mut hasher);
    for var in &spec.env {
        (&var.name, &var.value).hash(&mut hasher);
    }
    if let Some(pull) = &spec.pull {
        (&pull.registry, &pull.username, &pull.password).hash(&mut hasher);
    }
    spec.labels.hash(&mut hasher);
    hasher.finish()
}

impl Engine for EcsEngine {
    async fn run(&self, spec: &ReplicaSpec) -> Result<ReplicaId, RunError> {
        let arn = self.task_definition(spec).await?;
        let replica = self.run_task(spec, &arn).await?;
        tracing::info!(
            replica = %replica,
            deployment_id = %spec.labels.deployment_id,
            image = %spec.image,
            "task started"
        );
        self.await_start(&replica).await?;
        Ok(replica)
    }

    async fn stop(&self, replica: &ReplicaId, grace: Duration) -> Result<(), EngineError> {
        // The grace is the task definition's stopTimeout (STOP_GRACE); ECS takes no other.
        let stopped = self
            .clients
            .ecs
            .stop_task()
            .cluster(&self.config.cluster)
            .task(&replica.0)
            .reason(tasks::STOP_REASON)
            .send()
            .await;
        match stopped {
            Ok(_) => {}
            Err(err) if is_task_not_found(&err) => {
                self.forget(replica);
                return Ok(());
            }
            Err(err) => return Err(sdk_error(err)),
        }
        self.forget(replica);
        self.await_stopped(replica, grace + STOP_ANSWER_MARGIN)
            .await?;
        tracing::info!(replica = %replica, "task stopped");
        Ok(())
    }

    async fn list(&self, stack: &str) -> Result<Vec<ReplicaView>, EngineError> {
        let arns = tasks::list_arns(&self.clients.ecs, &self.config.cluster).await?;
        self.prune_removed(&arns);
        let described = tasks::describe(&self.clients.ecs, &self.config.cluster, &arns).await?;
        Ok(described
            .iter()
            .filter(|task| !tasks::stopped_by_us(task))
            .filter_map(|task| {
                let (id, labels) = tasks::identity(task)?;
                if labels.stack != stack || self.is_removed(&id) {
                    return None;
                }
                Some(ReplicaView {
                    id,
                    labels,
                    address: tasks::agent_address(task),
                    holder: tasks::holder(task),
                    status: tasks::status(task),
                })
            })
            .collect())
    }

    fn logs(
        &self,
        replica: &ReplicaId,
        since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        logs::follow(
            self.clients.clone(),
            Arc::clone(&self.config),
            replica.clone(),
            since,
        )
    }

    /// Deletes the deployment's secrets, then deregisters its task definition revisions. The
    /// secrets first: they are what costs ($0.40 a secret-month) and what keeps a rotated set's
    /// values in a second place. Forgotten here first, so that a later `run` writes and
    /// registers them again.
    async fn retire(&self, deployment_id: &str) -> Result<(), EngineError> {
        self.registered.lock().await.remove(deployment_id);
        secrets::delete(&self.clients.secrets, &self.config, deployment_id).await?;
        revisions::deregister(&self.clients.ecs, deployment_id).await?;
        tracing::info!(%deployment_id, "deployment retired");
        Ok(())
    }
}
