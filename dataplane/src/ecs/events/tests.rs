use serde_json::{Value, json};

use super::*;

const TASK: &str =
    "arn:aws:ecs:us-west-2:111122223333:task/agent-hosting/a1173316d40a45dea9c4b8a2a6d5e2c1";

/// A Fargate task's state change, shaped as the example of AWS's "Amazon ECS task state change
/// events" page (its fields, names and formats), for a replica of deployment `dep-1`.
fn event(last_status: &str, containers: Value, stop: Option<(&str, &str)>) -> String {
    let mut detail = json!({
        "attachments": [{
            "id": "1789bcae-ddfb-4d10-8ebe-8ac87ddba5b8",
            "type": "eni",
            "status": "ATTACHED",
            "details": [
                {"name": "subnetId", "value": "subnet-abcd1234"},
                {"name": "networkInterfaceId", "value": "eni-abcd1234"},
                {"name": "macAddress", "value": "0a:98:eb:a7:29:ba"},
                {"name": "privateIPv4Address", "value": "10.0.0.139"}
            ]
        }],
        "availabilityZone": "us-west-2c",
        "clusterArn": "arn:aws:ecs:us-west-2:111122223333:cluster/agent-hosting",
        "containers": containers,
        "createdAt": "2026-11-26T07:00:01.112Z",
        "launchType": "FARGATE",
        "cpu": "512",
        "memory": "1024",
        "desiredStatus": last_status,
        "group": "family:ah-dep-1",
        "lastStatus": last_status,
        "overrides": {"containerOverrides": [{"name": "agent"}, {"name": "holder"}]},
        "connectivity": "CONNECTED",
        "connectivityAt": "2026-11-26T07:00:03.523Z",
        "pullStartedAt": "2026-11-26T07:00:11.004Z",
        "startedBy": "dep-1",
        "taskArn": TASK,
        "taskDefinitionArn": "arn:aws:ecs:us-west-2:111122223333:task-definition/ah-dep-1:1",
        "updatedAt": "2026-11-26T07:00:41.152Z",
        "version": 3
    });
    if let Some((code, reason)) = stop {
        detail["stopCode"] = json!(code);
        detail["stoppedReason"] = json!(reason);
    }
    json!({
        "version": "0",
        "id": "3317b2af-7005-947d-b652-f55e762e571a",
        "detail-type": "ECS Task State Change",
        "source": "aws.ecs",
        "account": "111122223333",
        "time": "2026-11-26T07:00:41Z",
        "region": "us-west-2",
        "resources": [TASK],
        "detail": detail
    })
    .to_string()
}

fn container(name: &str, last_status: &str, exit_code: Option<i32>, reason: Option<&str>) -> Value {
    let mut container = json!({
        "containerArn": format!("arn:aws:ecs:us-west-2:111122223333:container/agent-hosting/{name}"),
        "lastStatus": last_status,
        "name": name,
        "image": "ghcr.io/acme/voice:1.0",
        "taskArn": TASK,
        "networkInterfaces": [{"attachmentId": "1789bcae", "privateIpv4Address": "10.0.0.139"}],
        "cpu": "0"
    });
    if let Some(code) = exit_code {
        container["exitCode"] = json!(code);
    }
    if let Some(reason) = reason {
        container["reason"] = json!(reason);
    }
    container
}

#[test]
fn a_running_task_has_not_ended() {
    let running = event(
        "RUNNING",
        json!([
            container("agent", "RUNNING", None, None),
            container("holder", "RUNNING", None, None)
        ]),
        None,
    );
    let change = task_state_change(&running).unwrap();
    assert_eq!(change.replica.0, TASK);
    assert_eq!(change.deployment_id.as_deref(), Some("dep-1"));
    assert_eq!(change.last_status, "RUNNING");
    assert_eq!(change.end, None);
}

#[test]
fn an_essential_containers_exit_event_is_the_agents_exit_code() {
    let exited = event(
        "STOPPED",
        json!([
            container("agent", "STOPPED", Some(1), None),
            container("holder", "STOPPED", Some(0), None)
        ]),
        Some((
            "EssentialContainerExited",
            "Essential container in task exited",
        )),
    );
    assert_eq!(
        task_state_change(&exited).unwrap().end,
        Some(TaskEnd::Exited { code: 1 })
    );
}

#[test]
fn an_out_of_memory_error_event_is_an_oom_kill() {
    let killed = event(
        "STOPPED",
        json!([
            container(
                "agent",
                "STOPPED",
                Some(137),
                Some("OutOfMemoryError: Container killed due to memory usage")
            ),
            container("holder", "STOPPED", Some(0), None)
        ]),
        Some((
            "EssentialContainerExited",
            "Essential container in task exited",
        )),
    );
    assert_eq!(
        task_state_change(&killed).unwrap().end,
        Some(TaskEnd::OomKilled)
    );
}

#[test]
fn a_cannot_pull_container_error_event_is_a_failed_pull() {
    let reason = "CannotPullContainerError: pull image manifest has been retried 5 time(s): \
                  failed to resolve ref ghcr.io/acme/voice:9.9: ghcr.io/acme/voice:9.9: not found";
    let failed = event(
        "STOPPED",
        json!([
            container("agent", "STOPPED", None, Some(reason)),
            container("holder", "STOPPED", None, None)
        ]),
        Some(("TaskFailedToStart", reason)),
    );
    assert_eq!(
        task_state_change(&failed).unwrap().end,
        Some(TaskEnd::PullFailed {
            message: reason.to_owned()
        })
    );
}

#[test]
fn an_event_of_another_kind_is_refused() {
    let mut other: Value = serde_json::from_str(&event("RUNNING", json!([]), None)).unwrap();
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
