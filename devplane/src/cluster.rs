//! A simulated data plane, for `make run` and the sam local stack (contract section 7: "a
//! simulation, labelled as one"). It runs no containers. It takes the control plane's events and
//! answers with the `Deployment Status` reports a cluster would send:
//!
//! - `Deployment Requested`: `ready` after a short delay, with `max(minReplicas, 1)` replicas;
//! - a deployment whose image tag is `fail` or ends in `-fail` (`ghcr.io/acme/agent:2.0-fail`):
//!   `pending` at once, then `failed` with `ImagePullBackOff`, which the agent's `errors` shows;
//! - `Agent Deleted`: nothing to report (the cluster would tear the agent down).

use std::time::Duration;

use serde_json::Value;
use shared::agent::{DeploymentError, DeploymentState, StatusReport};
use shared::stream_events::DetailType;
use time::OffsetDateTime;

use crate::outbox::{Message, Scheduled};

/// The tag that makes the simulation fail a deployment (the README's walkthrough uses it).
pub const FAILING_TAG_SUFFIX: &str = "-fail";

/// Whether an image reference's tag asks the simulation to fail.
pub fn fails(image: &str) -> bool {
    let name = image.split('@').next().unwrap_or(image);
    let last = name.rsplit('/').next().unwrap_or(name);
    last.split_once(':')
        .is_some_and(|(_, tag)| tag == "fail" || tag.ends_with(FAILING_TAG_SUFFIX))
}

/// What the simulated cluster reports for an event of the control plane.
pub fn respond(event: &Value, ready_after: Duration) -> Vec<Scheduled> {
    if DetailType::of(event) != Some(DetailType::DeploymentRequested) {
        return Vec::new();
    }
    let detail = &event["detail"];
    let text = |name: &str| detail[name].as_str().unwrap_or_default().to_owned();
    // The event carries the manifest as the table's stream has it: DynamoDB's typed JSON.
    let manifest = shared::stream_events::untyped(&detail["manifest"]);
    let image = manifest["spec"]["image"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let replicas = manifest["spec"]["autoScaling"]["minReplicas"]
        .as_u64()
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
        .max(1);
    let report = |state: DeploymentState, ready_replicas: u32, error: Option<DeploymentError>| {
        Message::Deployment(StatusReport {
            namespace: text("namespace"),
            agent: text("agentName"),
            deployment_id: text("deploymentId"),
            state,
            ready_replicas,
            active_session_count: 0,
            // The simulation starts each replica once and never restarts one.
            restart_count: 0,
            replicas_started: replicas,
            last_exit_code: None,
            error,
            // Set when sent: a report's time orders it.
            observed_at: OffsetDateTime::UNIX_EPOCH,
        })
    };
    if fails(&image) {
        let error = DeploymentError {
            code: "ImagePullBackOff".into(),
            message: format!("Back-off pulling image \"{image}\" (simulated)"),
        };
        vec![
            Scheduled {
                after: Duration::ZERO,
                message: report(DeploymentState::Pending, 0, None),
            },
            Scheduled {
                after: ready_after,
                message: report(DeploymentState::Failed, 0, Some(error)),
            },
        ]
    } else {
        vec![Scheduled {
            after: ready_after,
            message: report(DeploymentState::Ready, replicas, None),
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report_of(scheduled: &Scheduled) -> &StatusReport {
        match &scheduled.message {
            Message::Deployment(report) => report,
            other => panic!("not a deployment's report: {other:?}"),
        }
    }

    fn requested(image: &str, min_replicas: &str) -> Value {
        json!({
            "detail-type": "Deployment Requested",
            "detail": {
                "namespace": "dev-local", "agentName": "demo-agent", "serviceId": "s",
                "deploymentId": "d-1",
                "manifest": {"spec": {"M": {
                    "image": {"S": image},
                    "autoScaling": {"M": {"minReplicas": {"N": min_replicas}, "maxReplicas": {"N": "5"}}}
                }}}
            }
        })
    }

    #[test]
    fn a_requested_deployment_is_reported_ready_after_the_delay() {
        let scheduled = respond(
            &requested("ghcr.io/acme/agent:1.0", "2"),
            Duration::from_secs(2),
        );
        assert_eq!(scheduled.len(), 1);
        assert_eq!(scheduled[0].after, Duration::from_secs(2));
        let report = report_of(&scheduled[0]);
        assert_eq!(
            (report.state, report.ready_replicas),
            (DeploymentState::Ready, 2)
        );
        assert_eq!(
            (
                report.namespace.as_str(),
                report.agent.as_str(),
                report.deployment_id.as_str()
            ),
            ("dev-local", "demo-agent", "d-1")
        );
        let scaled_to_zero = respond(&requested("a:1", "0"), Duration::ZERO);
        assert_eq!(report_of(&scaled_to_zero[0]).ready_replicas, 1);
    }

    #[test]
    fn a_failing_tag_is_pending_then_failed_with_an_error() {
        for image in [
            "ghcr.io/acme/agent:2.0-fail",
            "agent:fail",
            "localhost:5000/a:fail@sha256:00",
        ] {
            assert!(fails(image), "{image}");
        }
        for image in [
            "ghcr.io/acme/fail:1.0",
            "localhost:5000/agent",
            "agent:failover",
        ] {
            assert!(!fails(image), "{image}");
        }
        let scheduled = respond(
            &requested("ghcr.io/acme/agent:2.0-fail", "0"),
            Duration::from_secs(1),
        );
        let states: Vec<DeploymentState> = scheduled.iter().map(|s| report_of(s).state).collect();
        assert_eq!(states, [DeploymentState::Pending, DeploymentState::Failed]);
        assert_eq!(
            report_of(&scheduled[1]).error.as_ref().unwrap().code,
            "ImagePullBackOff"
        );
    }

    #[test]
    fn other_events_get_no_report() {
        assert!(
            respond(
                &json!({"detail-type": "Agent Deleted", "detail": {}}),
                Duration::ZERO
            )
            .is_empty()
        );
    }
}
