//! A cluster's tasks as replicas: listed (running and stopped), described with their tags, and
//! what became of a stopped one, classified from ECS's stop code and reasons (AWS's "Amazon ECS
//! stopped task error messages": `CannotPullContainerError`, `OutOfMemoryError`, an essential
//! container's exit code).

use std::net::{IpAddr, SocketAddr};

use agent_holder::{Endpoint, HOLDER_PORT, Token};
use aws_sdk_ecs::Client;
use aws_sdk_ecs::types::{DesiredStatus, Task, TaskField, TaskStopCode};

use super::definition::AGENT_CONTAINER;
use super::error::sdk_error;
use crate::engine::EngineError;
use crate::replica::{
    AGENT_PORT, ExitReason, ReplicaId, ReplicaLabels, ReplicaStatus, label, pull_message,
};

/// The reason the data plane gives StopTask: a task stopped with it is removed, as far as
/// `list` is concerned (AWS also deletes its tags; moto keeps them).
pub const STOP_REASON: &str = "agent-hosting: stopped by the data plane";

/// DescribeTasks takes at most this many tasks at once.
const DESCRIBE_BATCH: usize = 100;

/// What became of a task that stopped by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskEnd {
    /// The image could not be pulled: the registry's message (bounded, `pull_message`).
    PullFailed {
        message: String,
    },
    OomKilled,
    Exited {
        code: i64,
    },
    /// Stopped without an exit code of its agent (its host went away, someone else stopped it).
    Lost {
        reason: String,
    },
}

impl TaskEnd {
    /// As the engine port says it (`run` reports a pull failure it sees itself; one found
    /// after `run` returned is the listing's `PullFailed`).
    pub fn exit_reason(&self) -> ExitReason {
        match self {
            TaskEnd::OomKilled => ExitReason::OomKilled,
            TaskEnd::Exited { code } => ExitReason::Exited { code: *code },
            TaskEnd::PullFailed { message } => ExitReason::PullFailed {
                message: message.clone(),
            },
            TaskEnd::Lost { .. } => ExitReason::Lost,
        }
    }
}

/// The ARNs of the cluster's tasks, sorted, running and stopped (ECS keeps a stopped task visible
/// for about an hour).
pub async fn list_arns(client: &Client, cluster: &str) -> Result<Vec<String>, EngineError> {
    let mut arns = Vec::new();
    for desired in [DesiredStatus::Running, DesiredStatus::Stopped] {
        let mut pages = client
            .list_tasks()
            .cluster(cluster)
            .desired_status(desired)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            arns.extend(page.map_err(sdk_error)?.task_arns.unwrap_or_default());
        }
    }
    arns.sort();
    arns.dedup();
    Ok(arns)
}

/// The tasks named, with their tags; ones ECS no longer knows are left out.
pub async fn describe(
    client: &Client,
    cluster: &str,
    arns: &[String],
) -> Result<Vec<Task>, EngineError> {
    let mut tasks = Vec::with_capacity(arns.len());
    for batch in arns.chunks(DESCRIBE_BATCH) {
        let described = client
            .describe_tasks()
            .cluster(cluster)
            .set_tasks(Some(batch.to_vec()))
            .include(TaskField::Tags)
            .send()
            .await
            .map_err(sdk_error)?;
        tasks.extend(described.tasks.unwrap_or_default());
    }
    Ok(tasks)
}

/// The one task named; `None` when ECS no longer knows it.
pub async fn describe_one(
    client: &Client,
    cluster: &str,
    replica: &ReplicaId,
) -> Result<Option<Task>, EngineError> {
    Ok(describe(client, cluster, std::slice::from_ref(&replica.0))
        .await?
        .into_iter()
        .find(|task| task.task_arn() == Some(replica.0.as_str())))
}

/// Its ARN and labels; `None` for a task without all of them (not ours, or stopped by us on
/// AWS, which deletes a stopped task's tags).
pub fn identity(task: &Task) -> Option<(ReplicaId, ReplicaLabels)> {
    let id = ReplicaId(task.task_arn()?.to_owned());
    let labels = ReplicaLabels::from_pairs(|name| {
        task.tags()
            .iter()
            .find(|tag| tag.key() == Some(name))
            .and_then(|tag| tag.value())
    })?;
    Some((id, labels))
}

/// Whether the data plane stopped it (then it is gone, as a removed container is).
pub fn stopped_by_us(task: &Task) -> bool {
    task.stopped_reason() == Some(STOP_REASON)
}

/// The task's id, the last part of its ARN (its awslogs stream's last part).
pub fn task_id(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

/// Its ENI's private address, once it has one.
pub fn private_ip(task: &Task) -> Option<IpAddr> {
    task.attachments()
        .iter()
        .filter(|attachment| attachment.r#type() == Some("ElasticNetworkInterface"))
        .flat_map(|attachment| attachment.details())
        .find(|detail| detail.name() == Some("privateIPv4Address"))
        .and_then(|detail| detail.value()?.parse().ok())
}

/// Where its container contract answers.
pub fn agent_address(task: &Task) -> Option<SocketAddr> {
    private_ip(task).map(|ip| SocketAddr::new(ip, AGENT_PORT))
}

/// Where its holder answers, and its token (the task's tag).
pub fn holder(task: &Task) -> Option<Endpoint> {
    let token = (task.tags().iter())
        .find(|tag| tag.key() == Some(label::HOLDER_TOKEN))
        .and_then(|tag| tag.value())?;
    Some(Endpoint {
        address: SocketAddr::new(private_ip(task)?, HOLDER_PORT),
        token: Token::new(token),
    })
}

/// Running (provisioning, pulling or running) until ECS says STOPPED.
pub fn status(task: &Task) -> ReplicaStatus {
    match end(task) {
        Some(end) => ReplicaStatus::Exited(end.exit_reason()),
        None => ReplicaStatus::Running,
    }
}

/// What became of it, once it is STOPPED.
pub fn end(task: &Task) -> Option<TaskEnd> {
    if task.last_status() != Some("STOPPED") {
        return None;
    }
    Some(classify(task))
}

/// A stopped task's end: a pull failure or an OOM kill named by any container or the task,
/// else the agent's exit code, else lost with the task's reason. The one classification: the
/// listing ([`end`]) and the Task State Change events (`events`) both come here. A pull failure
/// is named by its reason alone, whatever the stop code (ECS gives `TaskFailedToStart`).
pub fn classify(task: &Task) -> TaskEnd {
    let reasons: Vec<&str> = task
        .containers()
        .iter()
        .filter_map(|container| container.reason())
        .chain(task.stopped_reason())
        .collect();
    if let Some(message) = reasons
        .iter()
        .find(|reason| reason.starts_with("CannotPullContainerError"))
    {
        return TaskEnd::PullFailed {
            message: pull_message(message),
        };
    }
    if reasons
        .iter()
        .any(|reason| reason.starts_with("OutOfMemoryError"))
    {
        return TaskEnd::OomKilled;
    }
    let agent_exit = task
        .containers()
        .iter()
        .find(|container| container.name() == Some(AGENT_CONTAINER))
        .and_then(|container| container.exit_code());
    match (agent_exit, task.stop_code()) {
        (Some(code), _) => TaskEnd::Exited {
            code: i64::from(code),
        },
        (None, stop_code) => TaskEnd::Lost {
            reason: lost_reason(task, stop_code),
        },
    }
}

fn lost_reason(task: &Task, stop_code: Option<&TaskStopCode>) -> String {
    let code = stop_code.map_or("unknown", TaskStopCode::as_str);
    match task.stopped_reason() {
        Some(reason) => format!("{code}: {reason}"),
        None => code.to_owned(),
    }
}

#[cfg(test)]
mod tests;
