//! The manifest a configuration resolves to (contract section 3: the profile and noise filter
//! tables give its resources and model), and the configuration read back from a manifest.

use crate::catalog::{NOISE_FILTERS, PROFILES};
use crate::manifest::{
    API_VERSION, DeploymentMode, Enabled, KIND, Manifest, ManifestSpec, Metadata, NoiseVivaSpec,
    Resources,
};

use super::AgentConfig;

impl AgentConfig {
    /// The manifest of a deployment of agent `name` in `namespace` on the engine `mode` (the
    /// stack's, which its wiring reads once), resolved from this whole configuration.
    pub fn manifest(&self, mode: DeploymentMode, name: &str, namespace: &str) -> Manifest {
        self.manifest_in_mode(mode.as_str(), name, namespace)
    }

    fn manifest_in_mode(&self, mode: &str, name: &str, namespace: &str) -> Manifest {
        Manifest {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            metadata: Metadata {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
            },
            spec: ManifestSpec {
                daily_node_type: self.node_type.to_owned(),
                deployment_mode: mode.to_owned(),
                cluster_local: true,
                image: self.image.clone(),
                image_pull_secret_names: self.image_pull_secret_set.iter().cloned().collect(),
                auto_scaling: self.auto_scaling,
                env_from_secret_names: self.secret_set.iter().cloned().collect(),
                noise_models: Enabled {
                    enabled: self.enable_noise,
                },
                noise_viva: NoiseVivaSpec::for_filter(self.noise_filter),
                integrated_keys_proxy: Enabled {
                    enabled: self.enable_managed_keys,
                },
                resources: Resources {
                    cpu: self.profile.cpu.to_owned(),
                    memory: self.profile.memory.to_owned(),
                },
                max_session_duration_seconds: self.max_session_duration,
            },
        }
    }

    /// The configuration [`AgentConfig::manifest`] made `manifest` from, for agents of a version that
    /// kept only the manifest (upgrading, see the operator's `migrate-first-slice`): each
    /// profile and noise filter the tables know is tried (`profile_hint`, the name that version
    /// kept, first), and the one that builds exactly this manifest again (in the mode it names)
    /// is the answer; `None` when none does.
    pub fn from_manifest(manifest: &Manifest, profile_hint: Option<&str>) -> Option<Self> {
        let spec = &manifest.spec;
        let profiles = PROFILES
            .iter()
            .filter(|profile| Some(profile.name) == profile_hint)
            .chain(
                PROFILES
                    .iter()
                    .filter(|profile| Some(profile.name) != profile_hint),
            );
        let filters = std::iter::once(None).chain(NOISE_FILTERS.iter().map(Some));
        let candidates = profiles.flat_map(|profile| {
            filters.clone().map(move |noise_filter| AgentConfig {
                image: spec.image.clone(),
                node_type: spec.daily_node_type.clone(),
                image_pull_secret_set: spec.image_pull_secret_names.first().cloned(),
                secret_set: spec.env_from_secret_names.first().cloned(),
                auto_scaling: spec.auto_scaling,
                enable_noise: spec.noise_models.enabled,
                noise_filter,
                profile,
                enable_managed_keys: spec.integrated_keys_proxy.enabled,
                max_session_duration: spec.max_session_duration_seconds,
            })
        });
        let (name, namespace) = (&manifest.metadata.name, &manifest.metadata.namespace);
        let mode = &spec.deployment_mode;
        candidates
            .into_iter()
            .find(|config| config.manifest_in_mode(mode, name, namespace) == *manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::config::testing::full;
    use crate::catalog::{
        DEFAULT_PROFILE, NoiseFilter, Profile, noise_filter_named, profile_named,
    };
    use crate::manifest::Replicas;
    use serde_json::json;

    fn config(profile: &'static Profile, filter: Option<&'static NoiseFilter>) -> AgentConfig {
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
            max_session_duration: 900,
        }
    }

    #[test]
    fn profiles_table_resolves_to_the_contract_resources() {
        for (name, cpu, memory) in [("agent-1x", "500m", "1Gi"), ("agent-2x", "1", "2Gi")] {
            let profile = profile_named(name).unwrap();
            let manifest =
                config(profile, None).manifest(DeploymentMode::Simulated, "my-agent", "ns-1");
            assert_eq!(manifest.spec.resources.cpu, cpu);
            assert_eq!(manifest.spec.resources.memory, memory);
        }
    }

    #[test]
    fn noise_filter_table_resolves_to_the_contract_models() {
        let off = config(DEFAULT_PROFILE, None)
            .manifest(DeploymentMode::Simulated, "my-agent", "ns")
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
            let on = config(DEFAULT_PROFILE, filter)
                .manifest(DeploymentMode::Simulated, "my-agent", "ns")
                .spec
                .noise_viva;
            assert_eq!(
                serde_json::to_value(on).unwrap(),
                json!({"audioFilters": true, "version": "20251010",
                       "modelVars": {"NOISE_VIVA_MODEL_PATH": path}})
            );
        }
    }

    #[test]
    fn manifest_serializes_with_the_contract_member_names() {
        let manifest = config(DEFAULT_PROFILE, noise_filter_named("tel")).manifest(
            DeploymentMode::Docker,
            "my-agent",
            "ns-9",
        );
        assert_eq!(
            serde_json::to_value(&manifest).unwrap(),
            json!({
                "apiVersion": "agent-hosting/v1",
                "kind": "AgentService",
                "metadata": {"name": "my-agent", "namespace": "ns-9"},
                "spec": {
                    "dailyNodeType": "arm",
                    "deploymentMode": "docker",
                    "clusterLocal": true,
                    "image": "ghcr.io/acme/agent:1.0",
                    "imagePullSecretNames": ["pull"],
                    "autoScaling": {"minReplicas": 1, "maxReplicas": 3},
                    "envFromSecretNames": ["env"],
                    "noiseModels": {"enabled": true},
                    "noiseViva": {"audioFilters": true, "version": "20251010",
                                  "modelVars": {"NOISE_VIVA_MODEL_PATH": "audio_filters/noise-viva-tel-v2.kef"}},
                    "integratedKeysProxy": {"enabled": true},
                    "resources": {"cpu": "500m", "memory": "1Gi"},
                    "maxSessionDurationSeconds": 900
                }
            })
        );
    }

    #[test]
    fn a_manifest_gives_back_the_configuration_it_was_built_from() {
        for profile in crate::catalog::PROFILES {
            for filter in
                std::iter::once(None).chain(crate::catalog::NOISE_FILTERS.iter().map(Some))
            {
                let config = AgentConfig {
                    profile,
                    noise_filter: filter,
                    ..full()
                };
                let manifest = config.manifest(DeploymentMode::Simulated, "my-agent", "ns-1");
                assert_eq!(
                    AgentConfig::from_manifest(&manifest, None),
                    Some(config.clone())
                );
                assert_eq!(
                    AgentConfig::from_manifest(&manifest, Some("agent-9x")),
                    Some(config)
                );
            }
        }
        // Resources no profile has: no configuration builds it.
        let mut manifest = full().manifest(DeploymentMode::Simulated, "my-agent", "ns-1");
        manifest.spec.resources.cpu = "3".into();
        assert_eq!(AgentConfig::from_manifest(&manifest, None), None);
    }

    #[test]
    fn the_manifest_names_the_engine_this_stack_runs_agents_on() {
        for (mode, name) in [
            (DeploymentMode::EcsFargate, "ecs-fargate"),
            (DeploymentMode::Docker, "docker"),
            (DeploymentMode::Simulated, "simulated"),
        ] {
            let manifest = full().manifest(mode, "my-agent", "ns-1");
            assert_eq!(manifest.spec.deployment_mode, name);
        }
    }

    #[test]
    fn a_stored_manifest_gives_back_its_configuration_whatever_mode_it_was_made_in() {
        for mode in ["keda", "ecs-fargate", "docker", "simulated"] {
            let mut manifest = full().manifest(DeploymentMode::Simulated, "my-agent", "ns-1");
            manifest.spec.deployment_mode = mode.into();
            assert_eq!(
                AgentConfig::from_manifest(&manifest, None),
                Some(full()),
                "{mode}"
            );
        }
    }
}
