//! The agent object's revisions (docs/api.md, "Reading an agent"): its active deployment as
//! `currentRevision`, with its health from the data plane's reports, and during a rollout the
//! deployment still serving as `previousRevision`; the anchor's CLI prints both (`agent status`)
//! and reads them while a deploy settles.

use serde::{Deserialize, Serialize};

use super::record::{DeploymentState, DeploymentStatus};

/// A deployment's phase, as the anchor names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    Pending,
    Ready,
    Failed,
}

impl From<DeploymentState> for Phase {
    fn from(state: DeploymentState) -> Self {
        match state {
            DeploymentState::Pending => Phase::Pending,
            DeploymentState::Ready => Phase::Ready,
            DeploymentState::Failed => Phase::Failed,
        }
    }
}

/// `currentRevision`: the active deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    /// Spelt as the anchor spells it.
    #[serde(rename = "deploymentID")]
    pub deployment_id: String,
    pub phase: Phase,
    pub ready_replicas: u32,
    /// When the deployment last changed: created, or its status reported.
    pub phase_started_at: String,
    pub health: Health,
}

/// `currentRevision.health`: what the data plane last reported of the deployment's replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub state: DeploymentState,
    /// The CLI shows no health when this is true and nothing restarted.
    pub ready: bool,
    pub restart_count: u32,
    pub replicas_started: u32,
    /// The error's code, when the deployment failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_exit_code: Option<i32>,
    /// The error's message (the CLI prints its last line), when the deployment failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `previousRevision`: the deployment the agent still serves from during a rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviousRevision {
    #[serde(rename = "deploymentID")]
    pub deployment_id: String,
    pub phase: Phase,
    pub ready_replicas: u32,
}

impl Revision {
    /// The revision of deployment `deployment_id`, last changed at `updated_at`, whose status is
    /// `status`.
    pub fn of(deployment_id: &str, updated_at: &str, status: &DeploymentStatus) -> Self {
        let failed = (status.state == DeploymentState::Failed)
            .then_some(status.error.as_ref())
            .flatten();
        Revision {
            deployment_id: deployment_id.to_owned(),
            phase: status.state.into(),
            ready_replicas: status.ready_replicas,
            phase_started_at: updated_at.to_owned(),
            health: Health {
                state: status.state,
                ready: status.is_ready(),
                restart_count: status.restart_count,
                replicas_started: status.replicas_started,
                reason: failed.map(|error| error.code.clone()),
                last_exit_code: status.last_exit_code,
                message: failed.map(|error| error.message.clone()),
            },
        }
    }
}

impl PreviousRevision {
    /// The revision of the serving deployment `deployment_id`, whose status is `status`: `Ready`
    /// unless the data plane reported otherwise since the rollout began.
    pub fn of(deployment_id: &str, status: &DeploymentStatus) -> Self {
        PreviousRevision {
            deployment_id: deployment_id.to_owned(),
            phase: status.state.into(),
            ready_replicas: status.ready_replicas,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::DeploymentError;
    use serde_json::json;

    #[test]
    fn a_crash_looping_deployment_shows_its_reason_exit_code_and_restarts() {
        let status = DeploymentStatus {
            state: DeploymentState::Failed,
            ready_replicas: 0,
            restart_count: 2,
            replicas_started: 3,
            last_exit_code: Some(3),
            error: Some(DeploymentError {
                code: "CRASH_LOOP".into(),
                message: "the container exited with code 3; last lines:\nboom".into(),
            }),
            ..DeploymentStatus::requested()
        };
        let revision = Revision::of("d-1", "2026-01-01T00:00:00.000Z", &status);
        assert_eq!(
            serde_json::to_value(&revision).unwrap(),
            json!({
                "deploymentID": "d-1",
                "phase": "Failed",
                "readyReplicas": 0,
                "phaseStartedAt": "2026-01-01T00:00:00.000Z",
                "health": {
                    "state": "failed",
                    "ready": false,
                    "restartCount": 2,
                    "replicasStarted": 3,
                    "reason": "CRASH_LOOP",
                    "lastExitCode": 3,
                    "message": "the container exited with code 3; last lines:\nboom"
                }
            })
        );
    }

    #[test]
    fn a_healthy_deployment_has_no_reason_nor_message() {
        let status = DeploymentStatus {
            state: DeploymentState::Ready,
            ready_replicas: 2,
            replicas_started: 2,
            ..DeploymentStatus::requested()
        };
        let revision = Revision::of("d-2", "2026-01-02T00:00:00.000Z", &status);
        assert_eq!(revision.phase, Phase::Ready);
        assert_eq!(
            serde_json::to_value(&revision.health).unwrap(),
            json!({"state": "ready", "ready": true, "restartCount": 0, "replicasStarted": 2})
        );
        // A pending deployment is Pending, not ready, nothing to explain.
        let pending = Revision::of("d-3", "t", &DeploymentStatus::requested());
        assert_eq!(pending.phase, Phase::Pending);
        assert_eq!(pending.health.state, DeploymentState::Pending);
        assert!(!pending.health.ready);
        assert_eq!(pending.health.reason, None);
    }

    #[test]
    fn a_previous_revision_names_its_deployment_phase_and_replicas() {
        let status = DeploymentStatus {
            state: DeploymentState::Ready,
            ready_replicas: 4,
            ..DeploymentStatus::requested()
        };
        assert_eq!(
            serde_json::to_value(PreviousRevision::of("d-0", &status)).unwrap(),
            json!({"deploymentID": "d-0", "phase": "Ready", "readyReplicas": 4})
        );
    }
}
