//! ECS's Task State Change events (EventBridge, `source: aws.ecs`), read as the task
//! DescribeTasks would show, so that an event and a listing classify a task's end the same way
//! ([`tasks::end`]). An event carries no tags: who the task belongs to is its ARN's and
//! `startedBy`'s (the deployment), the rest is the reconciler's to look up.

use aws_sdk_ecs::types::{Attachment, Container, KeyValuePair, Task, TaskStopCode};
use serde::Deserialize;

use super::tasks::{self, TaskEnd};
use crate::replica::ReplicaId;

/// The `detail-type` of a task's state change.
pub const DETAIL_TYPE: &str = "ECS Task State Change";

/// What a Task State Change event says of its task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStateChange {
    pub replica: ReplicaId,
    pub cluster_arn: String,
    /// The deployment whose replica it is (`startedBy`).
    pub deployment_id: Option<String>,
    pub last_status: String,
    /// What became of it, once it is STOPPED.
    pub end: Option<TaskEnd>,
}

/// The event could not be read as a Task State Change.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("not an ECS Task State Change event: {0}")]
    NotTaskStateChange(String),
    #[error("a Task State Change event that does not parse: {0}")]
    Malformed(#[from] serde_json::Error),
}

#[derive(Deserialize)]
struct Envelope {
    source: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
    detail: Detail,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Detail {
    task_arn: String,
    cluster_arn: String,
    last_status: String,
    started_by: Option<String>,
    stop_code: Option<String>,
    stopped_reason: Option<String>,
    #[serde(default)]
    containers: Vec<EventContainer>,
    #[serde(default)]
    attachments: Vec<EventAttachment>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventContainer {
    name: String,
    last_status: Option<String>,
    exit_code: Option<i32>,
    reason: Option<String>,
}

#[derive(Deserialize)]
struct EventAttachment {
    r#type: Option<String>,
    #[serde(default)]
    details: Vec<EventDetail>,
}

#[derive(Deserialize)]
struct EventDetail {
    name: String,
    value: String,
}

/// Reads an EventBridge event (its JSON text).
pub fn task_state_change(event: &str) -> Result<TaskStateChange, EventError> {
    let envelope: Envelope = serde_json::from_str(event)?;
    if envelope.source != "aws.ecs" || envelope.detail_type != DETAIL_TYPE {
        return Err(EventError::NotTaskStateChange(format!(
            "{} / {}",
            envelope.source, envelope.detail_type
        )));
    }
    let detail = envelope.detail;
    let task = as_task(&detail);
    Ok(TaskStateChange {
        replica: ReplicaId(detail.task_arn),
        cluster_arn: detail.cluster_arn,
        deployment_id: detail.started_by,
        last_status: detail.last_status,
        end: tasks::end(&task),
    })
}

/// The event's task as DescribeTasks would give it (the fields the classification reads).
fn as_task(detail: &Detail) -> Task {
    let containers = detail.containers.iter().map(|container| {
        Container::builder()
            .name(&container.name)
            .set_last_status(container.last_status.clone())
            .set_exit_code(container.exit_code)
            .set_reason(container.reason.clone())
            .build()
    });
    let attachments = detail.attachments.iter().map(|attachment| {
        // Events name an ENI attachment `eni`; DescribeTasks `ElasticNetworkInterface`.
        let r#type = match attachment.r#type.as_deref() {
            Some("eni") => Some("ElasticNetworkInterface".to_owned()),
            other => other.map(str::to_owned),
        };
        Attachment::builder()
            .set_type(r#type)
            .set_details(Some(
                attachment
                    .details
                    .iter()
                    .map(|detail| {
                        KeyValuePair::builder()
                            .name(&detail.name)
                            .value(&detail.value)
                            .build()
                    })
                    .collect(),
            ))
            .build()
    });
    Task::builder()
        .task_arn(&detail.task_arn)
        .cluster_arn(&detail.cluster_arn)
        .last_status(&detail.last_status)
        .set_started_by(detail.started_by.clone())
        .set_stop_code(detail.stop_code.as_deref().map(TaskStopCode::from))
        .set_stopped_reason(detail.stopped_reason.clone())
        .set_containers(Some(containers.collect()))
        .set_attachments(Some(attachments.collect()))
        .build()
}

#[cfg(test)]
mod tests;
