use serde_json::{Value, json};

use super::*;
use crate::replica::ExitReason;

// AWS's "Amazon ECS task state change events" example, for a replica's task (agent and holder)
// of one deployment: the same files serve the inbox's tests and the docs.
const RUNNING: &str = include_str!("../../../../events/ecs-task-state-change-running.json");
const EXITED: &str = include_str!("../../../../events/ecs-task-state-change-exited.json");
const OOM_KILLED: &str = include_str!("../../../../events/ecs-task-state-change-oom-killed.json");
const PULL_FAILED: &str = include_str!("../../../../events/ecs-task-state-change-pull-failed.json");

const TASK: &str =
    "arn:aws:ecs:us-west-2:111122223333:task/agent-hosting/a1173316d40a45dea9c4b8a2a6d5e2c1";
const DEPLOYMENT: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

fn end_of(event: &str) -> Option<TaskEnd> {
    task_state_change(event).unwrap().end
}

#[test]
fn a_running_task_has_not_ended() {
    let change = task_state_change(RUNNING).unwrap();
    assert_eq!(change.replica.0, TASK);
    assert_eq!(
        change.cluster_arn,
        "arn:aws:ecs:us-west-2:111122223333:cluster/agent-hosting"
    );
    assert_eq!(change.deployment_id.as_deref(), Some(DEPLOYMENT));
    assert_eq!(change.last_status, "RUNNING");
    assert_eq!(change.end, None);
}

#[test]
fn an_essential_containers_exit_event_is_the_agents_exit_code() {
    let end = end_of(EXITED).unwrap();
    assert_eq!(end, TaskEnd::Exited { code: 1 });
    assert_eq!(end.exit_reason(), ExitReason::Exited { code: 1 });
}

#[test]
fn an_out_of_memory_error_event_is_an_oom_kill() {
    let end = end_of(OOM_KILLED).unwrap();
    assert_eq!(end, TaskEnd::OomKilled);
    assert_eq!(end.exit_reason(), ExitReason::OomKilled);
}

#[test]
fn a_cannot_pull_container_error_event_is_a_failed_pull_not_a_lost_replica() {
    let reason = "CannotPullContainerError: pull image manifest has been retried 7 time(s): \
                  failed to resolve ref ghcr.io/acme/voice:9.9: ghcr.io/acme/voice:9.9: not found";
    let end = end_of(PULL_FAILED).unwrap();
    assert_eq!(
        end,
        TaskEnd::PullFailed {
            message: reason.to_owned()
        }
    );
    assert_eq!(
        end.exit_reason(),
        ExitReason::PullFailed {
            message: reason.to_owned()
        }
    );
}

#[test]
fn an_event_of_another_kind_is_refused() {
    let mut other: Value = serde_json::from_str(RUNNING).unwrap();
    other["detail-type"] = json!("ECS Container Instance State Change");
    assert!(matches!(
        task_state_change(&other.to_string()),
        Err(EventError::NotTaskStateChange(_))
    ));
    assert!(matches!(
        task_state_change("{}"),
        Err(EventError::Malformed(_))
    ));
}
