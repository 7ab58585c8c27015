use serde_json::{Value, json};
use shared::stream_events::{DetailType, Published, event_of};

use super::*;
use crate::events::AgentRef;

const CLUSTER_ARN: &str = "arn:aws:ecs:us-east-1:123456789012:cluster/agent-hosting";

/// The inbox's `Deployment Requested` as the bus delivers it.
fn deployment_requested() -> Value {
    serde_json::from_str(include_str!(
        "../../../../events/data-plane-inbox-deployment-requested.json"
    ))
    .unwrap()
}

/// The stream publisher's example records.
fn records() -> Vec<Value> {
    let records: Value =
        serde_json::from_str(include_str!("../../../../events/stream-publisher.json")).unwrap();
    records["Records"].as_array().unwrap().clone()
}

/// The inbox's four control events as the bus delivers them: the deployment's from the fixture,
/// the others the stream publisher's of its example records.
fn published() -> Vec<Value> {
    let mut events = vec![deployment_requested()];
    events.extend(
        records()
            .iter()
            .filter_map(|record| event_of(record).unwrap())
            .filter(|published| published.detail_type != DetailType::DeploymentRequested)
            .map(delivered),
    );
    events
}

fn delivered(published: Published) -> Value {
    json!({
        "version": "0",
        "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
        "detail-type": published.detail_type.as_str(),
        "source": "agent-hosting",
        "account": "123456789012",
        "time": "2026-11-26T10:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": published.detail,
    })
}

/// events/'s Task State Change (AWS's documented shape), of `cluster_arn`'s cluster (none: the
/// member left out).
fn task_state_change(cluster_arn: Option<&str>) -> Value {
    let mut event: Value = serde_json::from_str(include_str!(
        "../../../../events/ecs-task-state-change-running.json"
    ))
    .unwrap();
    let detail = event["detail"].as_object_mut().unwrap();
    match cluster_arn {
        Some(arn) => detail.insert("clusterArn".into(), json!(arn)),
        None => detail.remove("clusterArn"),
    };
    event
}

fn of(event: &Value, cluster: &str) -> Message {
    Message::of(Some(&event.to_string()), cluster)
}

#[test]
fn the_control_planes_events_are_taken() {
    let events = published();
    let detail_types: Vec<&str> = events
        .iter()
        .map(|event| event["detail-type"].as_str().unwrap())
        .collect();
    assert_eq!(
        detail_types,
        [
            "Deployment Requested",
            "Session Requested",
            "Session Stop Requested",
            "Agent Deleted",
        ]
    );
    for event in &events {
        let Message::Control(taken) = of(event, "agent-hosting") else {
            panic!(
                "{} not taken: {:?}",
                event["detail-type"],
                of(event, "agent-hosting")
            );
        };
        assert_eq!(ControlEvent::from_bus(event), Ok(Some(taken)));
    }
    let Message::Control(ControlEvent::DeploymentRequested { agent, .. }) =
        of(&events[0], "agent-hosting")
    else {
        panic!("the first record is a deployment's");
    };
    assert_eq!(
        agent,
        AgentRef {
            namespace: "dev-local".into(),
            name: "demo-agent".into()
        }
    );
}

#[test]
fn the_fixture_is_the_stream_publishers_event_of_a_deployment() {
    let fixture = deployment_requested();
    let mut record = records().remove(0);
    // The example record's manifest predates some of the manifest's members; the fixture's is
    // today's, and the rest of the event is the publisher's.
    record["dynamodb"]["NewImage"]["deployment"]["M"]["manifest"]["M"] =
        fixture["detail"]["manifest"].clone();
    let published = event_of(&record).unwrap().unwrap();
    assert_eq!(published.detail_type, DetailType::DeploymentRequested);
    assert_eq!(fixture, delivered(published));
}

#[test]
fn a_task_state_change_of_the_cluster_is_a_reconcile_pass() {
    let event = task_state_change(Some(CLUSTER_ARN));
    assert_eq!(of(&event, "agent-hosting"), Message::TaskChanged);
    assert_eq!(of(&event, CLUSTER_ARN), Message::TaskChanged);
}

#[test]
fn a_task_state_change_of_another_cluster_is_ignored() {
    let other = "arn:aws:ecs:us-east-1:123456789012:cluster/agent-hosting-2";
    let event = task_state_change(Some(other));
    assert_eq!(of(&event, "agent-hosting"), Message::Ignored);
    assert_eq!(of(&event, CLUSTER_ARN), Message::Ignored);
}

#[test]
fn an_event_of_another_detail_type_is_ignored() {
    let mut report = published().remove(0);
    report["detail-type"] = json!("Deployment Status");
    report["source"] = json!("agent-hosting.data-plane");
    assert_eq!(of(&report, "agent-hosting"), Message::Ignored);
    let mut other_ecs = task_state_change(Some(CLUSTER_ARN));
    other_ecs["detail-type"] = json!("ECS Container Instance State Change");
    assert_eq!(of(&other_ecs, "agent-hosting"), Message::Ignored);
}

#[test]
fn what_cannot_be_read_is_malformed() {
    let mut no_manifest = published().remove(0);
    no_manifest["detail"]
        .as_object_mut()
        .unwrap()
        .remove("manifest");
    assert_eq!(
        of(&no_manifest, "agent-hosting"),
        Message::Malformed(MessageError::Event(EventError::Missing("manifest")))
    );
    assert_eq!(
        of(&task_state_change(None), "agent-hosting"),
        Message::Malformed(MessageError::NoCluster)
    );
    assert_eq!(
        Message::of(None, "agent-hosting"),
        Message::Malformed(MessageError::NoBody)
    );
    for body in ["", "{", "[]", "\"Deployment Requested\"", "null"] {
        assert!(
            matches!(
                Message::of(Some(body), "agent-hosting"),
                Message::Malformed(MessageError::NotJson(_))
            ),
            "{body:?}"
        );
    }
}

#[test]
fn a_malformed_messages_error_never_carries_its_body() {
    let body = r#"{"detail-type": "Deployment Requested", "detail": {"namespace": "secret-value-1"#;
    let Message::Malformed(error) = Message::of(Some(body), "agent-hosting") else {
        panic!("malformed");
    };
    assert!(!error.to_string().contains("secret-value-1"), "{error}");
}
