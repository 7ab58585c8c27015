//! The manifest of a deployment: the resolved configuration as the data plane reads it
//! (agent-hosting-api 2.4, contract section 3). The configuration builds it
//! (`AgentConfig::manifest`); this module is its shape.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::catalog::{NOISE_MODEL_PATH_VARIABLE, NOISE_MODEL_VERSION, NoiseFilter};

pub const API_VERSION: &str = "agent-hosting/v1";
pub const KIND: &str = "AgentService";

/// The engine a stack runs its agents on (contract section 12), named by every manifest it makes
/// (`spec.deploymentMode`). The stack's `DEPLOYMENT_MODE` says which, read once by the wiring of
/// the functions that make manifests ([`DeploymentMode::of_setting`]) and passed in. A
/// stored manifest keeps the mode it was made with (`keda` before the data plane ran agents),
/// so the manifest holds the name, not this enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeploymentMode {
    /// Amazon ECS on Fargate: the deployed stack.
    EcsFargate,
    /// The Docker Engine: a local stack.
    Docker,
    /// No engine: a simulation reports what an engine would (only where none can run).
    Simulated,
}

impl DeploymentMode {
    pub const ALL: [DeploymentMode; 3] = [
        DeploymentMode::EcsFargate,
        DeploymentMode::Docker,
        DeploymentMode::Simulated,
    ];

    /// Its name in `spec.deploymentMode` and in `DEPLOYMENT_MODE`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentMode::EcsFargate => "ecs-fargate",
            DeploymentMode::Docker => "docker",
            DeploymentMode::Simulated => "simulated",
        }
    }

    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == name)
    }

    /// The mode a stack's setting names. Unset, `simulated`: nothing configured an engine (a
    /// handler run in-process), and every stack sets it.
    pub fn of_setting(setting: Option<&str>) -> Result<Self, UnknownDeploymentMode> {
        setting.map_or(Ok(DeploymentMode::Simulated), |name| {
            Self::named(name).ok_or_else(|| UnknownDeploymentMode(name.to_owned()))
        })
    }
}

/// A setting that names no [`DeploymentMode`]: the function stops at init, instead of naming it
/// in manifests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("DEPLOYMENT_MODE must be ecs-fargate, docker or simulated, not {0:?}")]
pub struct UnknownDeploymentMode(pub String);

/// `{minReplicas, maxReplicas}`: the response form of the auto-scaling object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Replicas {
    pub min_replicas: u32,
    pub max_replicas: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    pub spec: ManifestSpec,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    pub name: String,
    pub namespace: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestSpec {
    pub daily_node_type: String,
    /// A [`DeploymentMode`]'s name, or the mode of a manifest stored before them.
    pub deployment_mode: String,
    pub cluster_local: bool,
    pub image: String,
    /// `[imagePullSecretSet]` or `[]`, beside `envFromSecretNames`.
    pub image_pull_secret_names: Vec<String>,
    pub auto_scaling: Replicas,
    pub env_from_secret_names: Vec<String>,
    pub noise_models: Enabled,
    pub noise_viva: NoiseVivaSpec,
    pub integrated_keys_proxy: Enabled,
    pub resources: Resources,
    /// The agent's `maxSessionDuration` (the name the anchor's manifest and CLI use); absent
    /// from manifests stored before sessions, which had the default.
    #[serde(default = "crate::manifest::default_max_session_duration")]
    pub max_session_duration_seconds: u32,
}

/// The anchor's default of `maxSessionDuration`, in seconds (contract section 11).
pub const DEFAULT_MAX_SESSION_DURATION: u32 = 7_200;

pub fn default_max_session_duration() -> u32 {
    DEFAULT_MAX_SESSION_DURATION
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enabled {
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoiseVivaSpec {
    pub audio_filters: bool,
    pub version: String,
    pub model_vars: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub cpu: String,
    pub memory: String,
}

impl NoiseVivaSpec {
    pub fn for_filter(filter: Option<&NoiseFilter>) -> Self {
        NoiseVivaSpec {
            audio_filters: filter.is_some(),
            version: NOISE_MODEL_VERSION.to_owned(),
            model_vars: filter
                .map(|filter| {
                    BTreeMap::from([(
                        NOISE_MODEL_PATH_VARIABLE.to_owned(),
                        filter.model_path.to_owned(),
                    )])
                })
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deployment_mode_is_ecs_fargate_docker_or_simulated_and_simulated_when_unset() {
        let mode = |setting: Option<&str>| DeploymentMode::of_setting(setting).ok();
        assert_eq!(mode(None), Some(DeploymentMode::Simulated));
        assert_eq!(mode(Some("ecs-fargate")), Some(DeploymentMode::EcsFargate));
        assert_eq!(mode(Some("docker")), Some(DeploymentMode::Docker));
        assert_eq!(mode(Some("simulated")), Some(DeploymentMode::Simulated));
        for refused in ["keda", "Docker", "ecs_fargate", " docker"] {
            assert_eq!(
                DeploymentMode::of_setting(Some(refused)),
                Err(UnknownDeploymentMode(refused.to_owned())),
                "{refused}"
            );
        }
    }
}
