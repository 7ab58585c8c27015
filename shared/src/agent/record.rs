//! What is kept of an agent and of each of its deployments (agent-hosting-api 2.1, contract
//! section 6); the agent object the API answers is made from it in [`super::view`].
//!
//! An agent's configuration is always its active deployment's: every change of configuration is
//! a new deployment that becomes active. During a rollout the agent may still serve from the
//! deployment before it (`serving`), until the new one reports ready.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::config::AgentConfig;
use crate::auth::Principal;
use crate::manifest::{DeploymentMode, Manifest};

/// The deployment object (agent-hosting-api 2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    pub id: String,
    pub manifest: Manifest,
    pub service_id: String,
    pub created_at: String,
    /// When the deployment last changed: created, or its status reported.
    pub updated_at: String,
}

/// A deployment's state as the data plane reports it (contract section 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeploymentState {
    Pending,
    Ready,
    Failed,
}

/// Why a deployment failed, as the data plane reports it; the agent's `errors`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentError {
    pub code: String,
    pub message: String,
}

/// What the data plane last reported of a deployment: pending, with no report yet, at first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStatus {
    pub state: DeploymentState,
    pub ready_replicas: u32,
    pub active_session_count: u32,
    /// The report's `restartCount`, `replicasStarted` and `lastExitCode` (the agent's
    /// `currentRevision.health`); defaults, so a status kept before they were reported reads.
    #[serde(default)]
    pub restart_count: u32,
    #[serde(default)]
    pub replicas_started: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<DeploymentError>,
    /// The report's own time (Unix nanoseconds): a report observed earlier changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at_nanos: Option<i64>,
}

impl DeploymentStatus {
    pub fn requested() -> Self {
        DeploymentStatus {
            state: DeploymentState::Pending,
            ready_replicas: 0,
            active_session_count: 0,
            restart_count: 0,
            replicas_started: 0,
            last_exit_code: None,
            error: None,
            observed_at_nanos: None,
        }
    }

    pub fn is_ready(&self) -> bool {
        self.state == DeploymentState::Ready
    }
}

/// A deployment as kept: the object, the configuration it was resolved from, its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRecord {
    pub deployment: Deployment,
    pub config: AgentConfig,
    pub status: DeploymentStatus,
}

/// The deployment an agent still serves from while a newer one is not ready yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Serving {
    pub deployment_id: String,
    pub status: DeploymentStatus,
}

/// An agent as kept. `version` grows with every write: it is the agent's ETag, and the
/// condition every write of the agent is made on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRecord {
    pub owner: Principal,
    pub name: String,
    /// The service the agent's deployments and log lines belong to; a later agent of the same
    /// name gets a new one.
    pub service_id: String,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    pub active: DeploymentRecord,
    pub serving: Option<Serving>,
    /// Its active sessions (`starting` or `started`): `activeSessionCount`, and what a session
    /// start is capped by (contract section 11). Sessions own it: a write of the agent never
    /// changes it, nor moves the version for it (a store keeps the stored figure).
    pub active_sessions: u32,
}

fn deployment_record(
    name: &str,
    namespace: &str,
    service_id: &str,
    config: AgentConfig,
    mode: DeploymentMode,
    now: &str,
) -> DeploymentRecord {
    DeploymentRecord {
        deployment: Deployment {
            // v7: time-ordered, so an agent's deployments sort by their creation (its history
            // is listed newest first).
            id: Uuid::now_v7().to_string(),
            manifest: config.manifest(mode, name, namespace),
            service_id: service_id.to_owned(),
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
        },
        config,
        status: DeploymentStatus::requested(),
    }
}

impl AgentRecord {
    /// A new agent of `owner` with its first deployment on the engine `mode`, nothing ready
    /// yet.
    pub fn new(
        owner: &Principal,
        name: &str,
        config: AgentConfig,
        mode: DeploymentMode,
        now: &str,
    ) -> Self {
        let service_id = Uuid::new_v4().to_string();
        AgentRecord {
            active: deployment_record(name, &owner.namespace, &service_id, config, mode, now),
            owner: owner.clone(),
            name: name.to_owned(),
            service_id,
            version: 1,
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
            serving: None,
            active_sessions: 0,
        }
    }

    /// The agent after a change of configuration: a new deployment on the engine `mode`
    /// becomes active; the agent keeps serving from the newest deployment that is ready until
    /// the new one is.
    pub fn deploy(&self, config: AgentConfig, mode: DeploymentMode, now: &str) -> Self {
        let active = deployment_record(
            &self.name,
            &self.owner.namespace,
            &self.service_id,
            config,
            mode,
            now,
        );
        let serving = if self.active.status.is_ready() {
            Some(Serving {
                deployment_id: self.active.deployment.id.clone(),
                status: self.active.status.clone(),
            })
        } else {
            self.serving
                .clone()
                .filter(|serving| serving.status.is_ready())
        };
        AgentRecord {
            active,
            serving,
            version: self.version + 1,
            updated_at: now.to_owned(),
            ..self.clone()
        }
    }

    /// The agent as it is, at the next version: a write that changes nothing else.
    pub fn next_version(&self) -> Self {
        AgentRecord {
            version: self.version + 1,
            ..self.clone()
        }
    }

    pub fn config(&self) -> &AgentConfig {
        &self.active.config
    }

    /// The status of the deployment `deployment_id` if the agent runs it (active or serving).
    pub fn status_of(&self, deployment_id: &str) -> Option<&DeploymentStatus> {
        if self.active.deployment.id == deployment_id {
            return Some(&self.active.status);
        }
        self.serving
            .as_ref()
            .filter(|serving| serving.deployment_id == deployment_id)
            .map(|serving| &serving.status)
    }

    /// Whether this, the agent as stored, is still the agent of `service_id` at `read_version`:
    /// the condition of every write of an existing agent (the DynamoDB adapter states it as its
    /// condition expression). An agent deleted and made again under its name is another service.
    pub fn is_still(&self, service_id: &str, read_version: u64) -> bool {
        self.version == read_version && self.service_id == service_id
    }

    /// The ETag of this version (a strong validator: it changes with every write of the agent;
    /// not with `active_sessions`, which its sessions move without a write of the agent). It names
    /// the agent's service as well as the version: an agent deleted and made again under the
    /// same name counts its versions from 1 again, and a tag read before the delete must never
    /// match it.
    pub fn etag(&self) -> String {
        format!("\"{}.{}\"", self.service_id, self.version)
    }

    /// Whether some deployment can take sessions: the active one, or during a rollout the one
    /// before it.
    pub fn ready(&self) -> bool {
        self.active.status.is_ready()
            || self
                .serving
                .as_ref()
                .is_some_and(|serving| serving.status.is_ready())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::agent::ConfigChanges;
    use serde_json::json;

    pub fn owner() -> Principal {
        Principal {
            account_id: "acme".into(),
            namespace: "tiny-ferret-maroon-123".into(),
        }
    }

    pub fn config(body: serde_json::Value) -> AgentConfig {
        ConfigChanges::from_json(body)
            .unwrap()
            .into_new_agent()
            .unwrap()
            .1
    }

    pub fn record() -> AgentRecord {
        AgentRecord::new(
            &owner(),
            "my-agent",
            config(
                json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:1.0",
                          "noiseViva": {"audioFilter": "tel"}}),
            ),
            crate::manifest::DeploymentMode::Simulated,
            "2026-01-01T00:00:00.000Z",
        )
    }

    pub fn ready(mut status: DeploymentStatus, sessions: u32) -> DeploymentStatus {
        status.state = DeploymentState::Ready;
        status.active_session_count = sessions;
        status
    }

    #[test]
    fn a_new_agent_is_not_ready_and_links_its_deployment() {
        let agent = record().view();
        let deployment = agent.deployment.as_ref().unwrap();
        assert_eq!(agent.active_deployment_id, deployment.id);
        assert_ne!(deployment.id, deployment.service_id);
        assert!(Uuid::parse_str(&deployment.id).is_ok());
        assert!(Uuid::parse_str(&deployment.service_id).is_ok());
        assert!(!agent.ready && !agent.active_deployment_ready);
        assert_eq!(agent.active_session_count, 0);
        assert_eq!(agent.created_at, agent.updated_at);
        assert_eq!(
            deployment.manifest.metadata.namespace,
            "tiny-ferret-maroon-123"
        );
        assert_eq!(agent.noise_viva.as_ref().unwrap().audio_filter, "tel");
        assert_eq!(agent.errors, Some(Vec::new()));
        assert_eq!(
            record().created_view().errors,
            None,
            "create answers 2.1's members"
        );
    }

    #[test]
    fn a_deploy_keeps_serving_from_the_ready_deployment_until_the_new_one_is() {
        let mut first = record();
        first.active.status = ready(first.active.status, 3);
        first.active_sessions = 2;
        let second = first.deploy(
            config(json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:2.0"})),
            crate::manifest::DeploymentMode::Simulated,
            "2026-01-02T00:00:00.000Z",
        );
        assert_eq!(second.version, first.version + 1);
        assert_eq!(second.service_id, first.service_id);
        assert_ne!(second.active.deployment.id, first.active.deployment.id);
        assert_eq!(
            second.active.deployment.manifest.spec.image,
            "ghcr.io/acme/agent:2.0"
        );
        let view = second.view();
        assert!(view.ready, "the first deployment still takes sessions");
        assert!(!view.active_deployment_ready);
        assert_eq!(
            view.active_session_count, 2,
            "the sessions' own count, not the data plane's figure"
        );
        assert_eq!(view.created_at, "2026-01-01T00:00:00.000Z");
        assert_eq!(view.updated_at, "2026-01-02T00:00:00.000Z");

        // A third deploy before the second is ready keeps serving from the first.
        let third = second.deploy(
            second.config().clone(),
            crate::manifest::DeploymentMode::Simulated,
            "2026-01-03T00:00:00.000Z",
        );
        assert_eq!(
            third.serving.as_ref().map(|s| s.deployment_id.as_str()),
            Some(first.active.deployment.id.as_str())
        );
        assert_ne!(third.etag(), second.etag());
    }

    #[test]
    fn deployment_ids_are_uuid_v7_so_newer_sort_after_older() {
        let first = record();
        let second = first.deploy(
            first.config().clone(),
            crate::manifest::DeploymentMode::Simulated,
            "2026-01-02T00:00:00.000Z",
        );
        let (a, b) = (&first.active.deployment.id, &second.active.deployment.id);
        assert_eq!(Uuid::parse_str(a).unwrap().get_version_num(), 7);
        assert_eq!(Uuid::parse_str(b).unwrap().get_version_num(), 7);
        assert!(b > a, "{b} after {a}");
        assert_eq!(
            Uuid::parse_str(&first.service_id)
                .unwrap()
                .get_version_num(),
            4,
            "service ids are unchanged"
        );
    }
}
