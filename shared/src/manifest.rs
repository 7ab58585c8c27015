//! The resolved configuration of a deployment, and the two tables it is resolved from.
//!
//! The tables below are data: a new profile or noise filter is one more row, nothing else.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::agent::AgentConfig;

pub const API_VERSION: &str = "agent-hosting/v1";
pub const KIND: &str = "AgentService";
/// Scale-to-zero, event-driven autoscaling (the anchor product's mode).
pub const DEPLOYMENT_MODE: &str = "keda";
/// Node types a caller may ask for.
pub const NODE_TYPES: &[&str] = &["arm"];
pub const DEFAULT_NODE_TYPE: &str = "arm";

/// A resource profile (agent-hosting-api 2.6, contract 3).
#[derive(Debug, PartialEq, Eq)]
pub struct Profile {
    pub name: &'static str,
    pub cpu: &'static str,
    pub memory: &'static str,
}

pub const PROFILES: &[Profile] = &[
    Profile {
        name: "agent-1x",
        cpu: "500m",
        memory: "1Gi",
    },
    Profile {
        name: "agent-2x",
        cpu: "1",
        memory: "2Gi",
    },
];
pub const DEFAULT_PROFILE: &Profile = &PROFILES[0];

/// A noise filter model (contract 3). "Off" is the absence of a filter.
#[derive(Debug, PartialEq, Eq)]
pub struct NoiseFilter {
    pub name: &'static str,
    pub model_path: &'static str,
}

pub const NOISE_FILTERS: &[NoiseFilter] = &[
    NoiseFilter {
        name: "tel",
        model_path: "audio_filters/noise-viva-tel-v2.kef",
    },
    NoiseFilter {
        name: "pro",
        model_path: "audio_filters/noise-viva-pro-v1.kef",
    },
];
/// Model version reported whether or not a filter is on.
pub const NOISE_MODEL_VERSION: &str = "20251010";
pub const NOISE_MODEL_PATH_VARIABLE: &str = "NOISE_VIVA_MODEL_PATH";

pub fn profile_named(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|profile| profile.name == name)
}

pub fn noise_filter_named(name: &str) -> Option<&'static NoiseFilter> {
    NOISE_FILTERS.iter().find(|filter| filter.name == name)
}

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

impl Manifest {
    /// The manifest of a deployment of agent `name` in `namespace`, resolved from its whole
    /// configuration.
    pub fn build(name: &str, namespace: &str, spec: &AgentConfig) -> Self {
        Manifest {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            metadata: Metadata {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
            },
            spec: ManifestSpec {
                daily_node_type: spec.node_type.to_owned(),
                deployment_mode: DEPLOYMENT_MODE.to_owned(),
                cluster_local: true,
                image: spec.image.clone(),
                image_pull_secret_names: spec.image_pull_secret_set.iter().cloned().collect(),
                auto_scaling: spec.auto_scaling,
                env_from_secret_names: spec.secret_set.iter().cloned().collect(),
                noise_models: Enabled {
                    enabled: spec.enable_noise,
                },
                noise_viva: NoiseVivaSpec::for_filter(spec.noise_filter),
                integrated_keys_proxy: Enabled {
                    enabled: spec.enable_managed_keys,
                },
                resources: Resources {
                    cpu: spec.profile.cpu.to_owned(),
                    memory: spec.profile.memory.to_owned(),
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(profile: &'static Profile, filter: Option<&'static NoiseFilter>) -> AgentConfig {
        AgentConfig {
            image: "ghcr.io/acme/agent:1.0".into(),
            node_type: "arm".into(),
            image_pull_secret_set: Some("pull".into()),
            secret_set: Some("env".into()),
            auto_scaling: Replicas {
                min_replicas: 1,
                max_replicas: 3,
            },
            enable_noise: true,
            noise_filter: filter,
            profile,
            enable_managed_keys: true,
        }
    }

    #[test]
    fn profiles_table_resolves_to_the_contract_resources() {
        for (name, cpu, memory) in [("agent-1x", "500m", "1Gi"), ("agent-2x", "1", "2Gi")] {
            let profile = profile_named(name).unwrap();
            let manifest = Manifest::build("my-agent", "ns-1", &spec(profile, None));
            assert_eq!(manifest.spec.resources.cpu, cpu);
            assert_eq!(manifest.spec.resources.memory, memory);
        }
        assert_eq!(DEFAULT_PROFILE.name, "agent-1x");
        assert_eq!(profile_named("agent-3x"), None);
    }

    #[test]
    fn noise_filter_table_resolves_to_the_contract_models() {
        let off = Manifest::build("my-agent", "ns", &spec(DEFAULT_PROFILE, None))
            .spec
            .noise_viva;
        assert_eq!(
            serde_json::to_value(off).unwrap(),
            json!({"audioFilters": false, "version": "20251010", "modelVars": {}})
        );
        for (name, path) in [
            ("tel", "audio_filters/noise-viva-tel-v2.kef"),
            ("pro", "audio_filters/noise-viva-pro-v1.kef"),
        ] {
            let filter = noise_filter_named(name);
            let on = Manifest::build("my-agent", "ns", &spec(DEFAULT_PROFILE, filter))
                .spec
                .noise_viva;
            assert_eq!(
                serde_json::to_value(on).unwrap(),
                json!({"audioFilters": true, "version": "20251010",
                       "modelVars": {"NOISE_VIVA_MODEL_PATH": path}})
            );
        }
        assert_eq!(noise_filter_named("studio"), None);
    }

    #[test]
    fn manifest_serializes_with_the_contract_member_names() {
        let manifest = Manifest::build(
            "my-agent",
            "ns-9",
            &spec(DEFAULT_PROFILE, noise_filter_named("tel")),
        );
        assert_eq!(
            serde_json::to_value(&manifest).unwrap(),
            json!({
                "apiVersion": "agent-hosting/v1",
                "kind": "AgentService",
                "metadata": {"name": "my-agent", "namespace": "ns-9"},
                "spec": {
                    "dailyNodeType": "arm",
                    "deploymentMode": "keda",
                    "clusterLocal": true,
                    "image": "ghcr.io/acme/agent:1.0",
                    "imagePullSecretNames": ["pull"],
                    "autoScaling": {"minReplicas": 1, "maxReplicas": 3},
                    "envFromSecretNames": ["env"],
                    "noiseModels": {"enabled": true},
                    "noiseViva": {"audioFilters": true, "version": "20251010",
                                  "modelVars": {"NOISE_VIVA_MODEL_PATH": "audio_filters/noise-viva-tel-v2.kef"}},
                    "integratedKeysProxy": {"enabled": true},
                    "resources": {"cpu": "500m", "memory": "1Gi"}
                }
            })
        );
    }
}
