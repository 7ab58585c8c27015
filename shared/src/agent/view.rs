//! The agent object the API answers (agent-hosting-api 2.1, contract section 6), made from what
//! is kept of the agent: create's members; a read's and an update's `errors` and the members the
//! anchor's CLI reads (docs/api.md, "Reading an agent"); GET's `body` envelope.

use serde::{Deserialize, Serialize};

use super::record::{AgentRecord, Deployment, DeploymentError, DeploymentState};
use super::revision::{PreviousRevision, Revision};
use crate::manifest::{Replicas, Resources};

/// The agent object (agent-hosting-api 2.1); read and updated, plus `errors` (contract
/// section 6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub name: String,
    pub ready: bool,
    pub created_at: String,
    pub updated_at: String,
    pub active_deployment_id: String,
    pub active_deployment_ready: bool,
    pub auto_scaling: Replicas,
    pub active_session_count: u32,
    pub deployment: Option<Deployment>,
    pub agent_profile: Option<String>,
    pub noise_viva: Option<NoiseVivaStatus>,
    /// What the data plane reported wrong with the active deployment (empty when nothing);
    /// absent from create's answer, which has exactly the members of 2.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<DeploymentError>>,
    /// What the anchor's CLI reads beside 2.1's members (docs/api.md, "Reading an agent");
    /// absent from create's answer too.
    #[serde(flatten)]
    pub detail: Option<AgentDetail>,
}

/// The members a read and an update answer beyond 2.1 and `errors`: those the anchor's CLI
/// reads while a deploy settles and in `agent status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDetail {
    /// `ready`, by the anchor's name: some deployment can take sessions.
    pub available: bool,
    /// The deployment the data plane has settled (reported ready or failed): the active one
    /// once it has, before that the one still serving (`null` when none). The CLI waits while
    /// this differs from `activeDeploymentId`, so a rollout is not done until it settles.
    pub reconciled_deployment_id: Option<String>,
    pub current_revision: Revision,
    /// The deployment still serving during a rollout, `null` otherwise.
    pub previous_revision: Option<PreviousRevision>,
    /// `noiseViva`, by the anchor's name.
    pub krisp_viva: Option<NoiseVivaStatus>,
    /// The region of this service, the only one an agent can be in.
    pub region: String,
    /// The profile's resources, as the manifest has them.
    pub resources: Resources,
}

/// GET /v1/agents/{name}'s answer: the agent object, and the same object again under `body`
/// (the anchor's envelope for this read: its CLI reads `body`, and takes an answer without it
/// for "no such agent").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentRead {
    #[serde(flatten)]
    pub agent: Agent,
    pub body: Agent,
    /// The agent's ETag, a header of the answer.
    #[serde(skip)]
    pub etag: String,
}

/// `noiseViva` of the agent object: the filter selected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoiseVivaStatus {
    pub audio_filter: String,
}

impl AgentRecord {
    /// The object create answers: the members of agent-hosting-api 2.1.
    pub fn created_view(&self) -> Agent {
        Agent {
            errors: None,
            detail: None,
            ..self.view()
        }
    }

    /// GET /v1/agents/{name}'s answer: [`view`](Self::view), and again under `body`.
    pub fn read_view(&self) -> AgentRead {
        let agent = self.view();
        AgentRead {
            body: agent.clone(),
            agent,
            etag: self.etag(),
        }
    }

    /// The deployment the data plane has settled: the active one once reported ready or
    /// failed, before that the one still serving.
    pub fn reconciled_deployment_id(&self) -> Option<&str> {
        if self.active.status.state == DeploymentState::Pending {
            self.serving
                .as_ref()
                .map(|serving| serving.deployment_id.as_str())
        } else {
            Some(&self.active.deployment.id)
        }
    }

    /// The object a read or an update answers: 2.1's members, `errors`, and what the anchor's
    /// CLI reads ([`AgentDetail`]).
    pub fn view(&self) -> Agent {
        let config = self.config();
        let status = &self.active.status;
        let noise_viva = config.noise_filter.map(|filter| NoiseVivaStatus {
            audio_filter: filter.name.to_owned(),
        });
        let detail = AgentDetail {
            available: self.ready(),
            reconciled_deployment_id: self.reconciled_deployment_id().map(str::to_owned),
            current_revision: Revision::of(
                &self.active.deployment.id,
                &self.active.deployment.updated_at,
                status,
            ),
            previous_revision: self
                .serving
                .as_ref()
                .map(|serving| PreviousRevision::of(&serving.deployment_id, &serving.status)),
            krisp_viva: noise_viva.clone(),
            region: crate::config::region(),
            resources: self.active.deployment.manifest.spec.resources.clone(),
        };
        Agent {
            name: self.name.clone(),
            ready: self.ready(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            active_deployment_id: self.active.deployment.id.clone(),
            active_deployment_ready: status.is_ready(),
            auto_scaling: config.auto_scaling,
            active_session_count: self.active_sessions,
            deployment: Some(self.active.deployment.clone()),
            agent_profile: Some(config.profile.name.to_owned()),
            noise_viva,
            errors: Some(match (&status.state, &status.error) {
                (DeploymentState::Failed, Some(error)) => vec![error.clone()],
                _ => Vec::new(),
            }),
            detail: Some(detail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::DeploymentStatus;
    use crate::agent::record::tests::{config, ready, record};
    use crate::agent::revision::Phase;
    use serde_json::{Value, json};

    fn failed(mut status: DeploymentStatus) -> DeploymentStatus {
        status.state = DeploymentState::Failed;
        status.error = Some(DeploymentError {
            code: "CRASH_LOOP".into(),
            message: "the container exited with code 3".into(),
        });
        status
    }

    fn members(agent: &Agent) -> Vec<String> {
        let value = serde_json::to_value(agent).unwrap();
        value.as_object().unwrap().keys().cloned().collect()
    }

    #[test]
    fn create_answers_exactly_the_members_of_2_1_and_a_read_adds_errors_and_the_anchors() {
        let agent = record();
        assert_eq!(
            members(&agent.created_view()).len(),
            11,
            "{:?}",
            members(&agent.created_view())
        );
        let mut read = members(&agent.view());
        read.retain(|member| !members(&agent.created_view()).contains(member));
        read.sort();
        assert_eq!(
            read,
            [
                "available",
                "currentRevision",
                "errors",
                "krispViva",
                "previousRevision",
                "reconciledDeploymentId",
                "region",
                "resources"
            ]
        );
    }

    #[test]
    fn a_read_names_the_filter_both_ways_the_region_and_the_profiles_resources() {
        let view = serde_json::to_value(record().view()).unwrap();
        assert_eq!(view["krispViva"], json!({"audioFilter": "tel"}));
        assert_eq!(view["krispViva"], view["noiseViva"]);
        assert_eq!(view["region"], crate::config::region());
        assert_eq!(view["resources"], json!({"cpu": "500m", "memory": "1Gi"}));
        assert_eq!(
            view["resources"],
            view["deployment"]["manifest"]["spec"]["resources"]
        );
        let mut off = record();
        off.active.config.noise_filter = None;
        let view = serde_json::to_value(off.view()).unwrap();
        assert_eq!(view["krispViva"], Value::Null);
        assert_eq!(view["noiseViva"], Value::Null);
    }

    #[test]
    fn get_answers_the_object_and_the_same_object_under_body() {
        let agent = record();
        let read = serde_json::to_value(agent.read_view()).unwrap();
        let mut top = read.clone();
        let body = top.as_object_mut().unwrap().remove("body").unwrap();
        assert_eq!(body, top);
        assert_eq!(body, serde_json::to_value(agent.view()).unwrap());
    }

    #[test]
    fn a_new_agent_is_reconciled_once_its_deployment_settles() {
        let mut agent = record();
        let view = agent.view();
        let detail = view.detail.as_ref().unwrap();
        assert_eq!(detail.reconciled_deployment_id, None, "nothing settled yet");
        assert!(!detail.available);
        assert_eq!(detail.previous_revision, None);
        assert_eq!(
            detail.current_revision.deployment_id,
            view.active_deployment_id
        );
        assert_eq!(detail.current_revision.phase, Phase::Pending);
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["reconciledDeploymentId"], Value::Null);
        assert_eq!(json["previousRevision"], Value::Null);

        agent.active.status = ready(agent.active.status, 0);
        let detail = agent.view().detail.unwrap();
        assert_eq!(
            detail.reconciled_deployment_id.as_deref(),
            Some(agent.active.deployment.id.as_str())
        );
        assert!(detail.available);
        assert_eq!(detail.current_revision.phase, Phase::Ready);
        assert!(detail.current_revision.health.ready);

        let mut crashed = record();
        crashed.active.status = failed(crashed.active.status);
        let detail = crashed.view().detail.unwrap();
        assert_eq!(
            detail.reconciled_deployment_id.as_deref(),
            Some(crashed.active.deployment.id.as_str()),
            "failed is settled too"
        );
        assert_eq!(
            detail.current_revision.health.reason.as_deref(),
            Some("CRASH_LOOP")
        );
        assert!(!detail.available);
    }

    #[test]
    fn during_a_rollout_the_serving_deployment_is_reconciled_and_the_previous_revision() {
        let mut first = record();
        first.active.status = ready(first.active.status, 0);
        first.active.status.ready_replicas = 2;
        let mut second = first.deploy(
            config(json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:2.0"})),
            crate::manifest::DeploymentMode::Simulated,
            "2026-01-02T00:00:00.000Z",
        );
        let view = second.view();
        let detail = view.detail.as_ref().unwrap();
        let first_id = first.active.deployment.id.as_str();
        assert_eq!(
            detail.reconciled_deployment_id.as_deref(),
            Some(first_id),
            "the CLI keeps waiting: the new deployment has not settled"
        );
        assert_ne!(view.active_deployment_id, first_id);
        assert!(detail.available && view.ready && !view.active_deployment_ready);
        assert_eq!(
            detail.previous_revision,
            Some(PreviousRevision {
                deployment_id: first_id.to_owned(),
                phase: Phase::Ready,
                ready_replicas: 2,
            })
        );
        assert_eq!(detail.current_revision.phase, Phase::Pending);
        assert_eq!(
            detail.current_revision.phase_started_at,
            "2026-01-02T00:00:00.000Z"
        );

        second.active.status = ready(second.active.status, 0);
        let detail = second.view().detail.unwrap();
        assert_eq!(
            detail.reconciled_deployment_id.as_deref(),
            Some(second.active.deployment.id.as_str()),
            "settled: the CLI's poll ends"
        );
    }
}
