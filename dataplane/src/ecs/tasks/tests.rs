use aws_sdk_ecs::types::{Attachment, Container, KeyValuePair, Tag};

use super::*;
use crate::replica::MAX_PULL_MESSAGE_BYTES;

const ARN: &str =
    "arn:aws:ecs:us-east-1:123456789012:task/agent-hosting/1dc5c17a422548bc8ab2e5e2b9d6e5d7";

fn task(last_status: &str) -> aws_sdk_ecs::types::builders::TaskBuilder {
    let tags = [
        ("agent-hosting.stack", "stack"),
        ("agent-hosting.namespace", "acme"),
        ("agent-hosting.agent", "voice"),
        ("agent-hosting.serviceId", "svc-1"),
        ("agent-hosting.deploymentId", "dep-1"),
    ];
    tags.iter().fold(
        Task::builder().task_arn(ARN).last_status(last_status),
        |task, (key, value)| task.tags(Tag::builder().key(*key).value(*value).build()),
    )
}

fn agent(exit_code: Option<i32>, reason: Option<&str>) -> Container {
    Container::builder()
        .name("agent")
        .last_status("STOPPED")
        .set_exit_code(exit_code)
        .set_reason(reason.map(str::to_owned))
        .build()
}

fn holder() -> Container {
    Container::builder()
        .name("holder")
        .last_status("STOPPED")
        .exit_code(0)
        .build()
}

#[test]
fn a_task_is_running_until_ecs_says_stopped() {
    for status in [
        "PROVISIONING",
        "PENDING",
        "RUNNING",
        "DEACTIVATING",
        "DEPROVISIONING",
    ] {
        assert_eq!(
            status_of(task(status).build()),
            ReplicaStatus::Running,
            "{status}"
        );
    }
}

fn status_of(task: Task) -> ReplicaStatus {
    status(&task)
}

// Shaped like AWS's "Amazon ECS stopped task error messages" and its Task State Change example.
#[test]
fn cannot_pull_container_error_is_a_failed_pull_with_the_registrys_message() {
    let message = "CannotPullContainerError: pull image manifest has been retried 5 time(s): \
                   failed to resolve ref ghcr.io/acme/voice:9.9: not found";
    let stopped = task("STOPPED")
        .stop_code(TaskStopCode::TaskFailedToStart)
        .stopped_reason(message)
        .containers(agent(None, Some(message)))
        .build();
    assert_eq!(
        classify(&stopped),
        TaskEnd::PullFailed {
            message: message.to_owned()
        }
    );
    // Listed after `run` returned: a pull failure, not a lost replica.
    assert_eq!(
        status(&stopped),
        ReplicaStatus::Exited(ExitReason::PullFailed {
            message: message.to_owned()
        })
    );
}

#[test]
fn a_pull_failures_message_is_bounded_to_its_end() {
    let message = format!(
        "CannotPullContainerError: {}: not found",
        "x".repeat(4 * MAX_PULL_MESSAGE_BYTES)
    );
    let stopped = task("STOPPED")
        .stop_code(TaskStopCode::TaskFailedToStart)
        .stopped_reason(&message)
        .build();
    let ReplicaStatus::Exited(ExitReason::PullFailed { message }) = status(&stopped) else {
        panic!("not a pull failure: {:?}", status(&stopped));
    };
    assert_eq!(message.len(), MAX_PULL_MESSAGE_BYTES);
    assert!(message.ends_with("x: not found"), "{message}");
}

#[test]
fn out_of_memory_error_is_an_oom_kill() {
    let stopped = task("STOPPED")
        .stop_code(TaskStopCode::EssentialContainerExited)
        .stopped_reason("Essential container in task exited")
        .containers(agent(
            Some(137),
            Some("OutOfMemoryError: Container killed due to memory usage"),
        ))
        .containers(holder())
        .build();
    assert_eq!(classify(&stopped), TaskEnd::OomKilled);
    assert_eq!(
        status(&stopped),
        ReplicaStatus::Exited(ExitReason::OomKilled)
    );
}

#[test]
fn an_essential_containers_exit_is_the_agents_exit_code() {
    let stopped = task("STOPPED")
        .stop_code(TaskStopCode::EssentialContainerExited)
        .stopped_reason("Essential container in task exited")
        .containers(agent(Some(3), None))
        .containers(holder())
        .build();
    assert_eq!(
        status(&stopped),
        ReplicaStatus::Exited(ExitReason::Exited { code: 3 })
    );
}

#[test]
fn a_task_stopped_without_its_agents_exit_code_is_lost() {
    let stopped = task("STOPPED")
        .stop_code(TaskStopCode::TerminationNotice)
        .stopped_reason("Task stopped due to a termination notice")
        .containers(agent(None, None))
        .build();
    assert!(
        matches!(classify(&stopped), TaskEnd::Lost { reason } if reason.contains("TerminationNotice"))
    );
    assert_eq!(status(&stopped), ReplicaStatus::Exited(ExitReason::Lost));
}

#[test]
fn a_tasks_identity_is_its_arn_and_all_five_labels() {
    let (id, labels) = identity(&task("RUNNING").build()).unwrap();
    assert_eq!(id.0, ARN);
    assert_eq!(
        (labels.namespace.as_str(), labels.deployment_id.as_str()),
        ("acme", "dep-1")
    );
    // AWS deletes a task's tags at StopTask: such a task is nobody's replica any more.
    let untagged = Task::builder().task_arn(ARN).last_status("STOPPED").build();
    assert_eq!(identity(&untagged), None);
    assert_eq!(task_id(ARN), "1dc5c17a422548bc8ab2e5e2b9d6e5d7");
}

#[test]
fn a_tasks_address_is_its_enis_private_ip() {
    let eni = Attachment::builder()
        .r#type("ElasticNetworkInterface")
        .status("ATTACHED")
        .details(
            KeyValuePair::builder()
                .name("subnetId")
                .value("subnet-1")
                .build(),
        )
        .details(
            KeyValuePair::builder()
                .name("privateIPv4Address")
                .value("10.0.1.17")
                .build(),
        )
        .build();
    let token = Tag::builder()
        .key("agent-hosting.holderToken")
        .value("the-token")
        .build();
    let running = task("RUNNING").attachments(eni.clone()).tags(token).build();
    assert_eq!(
        agent_address(&running),
        Some("10.0.1.17:8080".parse().unwrap())
    );
    let endpoint = super::holder(&running).expect("its holder");
    assert_eq!(endpoint.address, "10.0.1.17:18080".parse().unwrap());
    assert_eq!(endpoint.token.as_str(), "the-token");
    let untagged = task("RUNNING").attachments(eni).build();
    assert_eq!(
        super::holder(&untagged),
        None,
        "a holder without its token is asked nothing"
    );
    assert_eq!(agent_address(&task("PROVISIONING").build()), None);
}

#[test]
fn a_task_the_data_plane_stopped_is_gone() {
    let stopped = task("STOPPED").stopped_reason(STOP_REASON).build();
    assert!(stopped_by_us(&stopped));
    assert!(!stopped_by_us(
        &task("STOPPED")
            .stopped_reason("Essential container in task exited")
            .build()
    ));
}
