//! Agents: the create request's rules (contract section 3) and the agent object answered.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ApiError;
use crate::manifest::{
    self, DEFAULT_NODE_TYPE, DEFAULT_PROFILE, Manifest, NODE_TYPES, NoiseFilter, Profile, Replicas,
};
use crate::validation::{DNS_LABEL_RULE, JsonObject, check_image_reference, is_dns_label};

pub const MIN_AGENTS: std::ops::RangeInclusive<i64> = 0..=50;
pub const MAX_AGENTS: std::ops::RangeInclusive<i64> = 1..=50;
pub const DEFAULT_MIN_AGENTS: u32 = 0;
/// The anchor product's default.
pub const DEFAULT_MAX_AGENTS: u32 = 50;

/// A validated create request with every default resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    pub service_name: String,
    pub image: String,
    pub node_type: &'static str,
    pub image_pull_secret_set: Option<String>,
    pub secret_set: Option<String>,
    pub auto_scaling: Replicas,
    pub enable_noise: bool,
    pub noise_filter: Option<&'static NoiseFilter>,
    pub profile: &'static Profile,
    pub enable_managed_keys: bool,
}

fn one_of(values: impl Iterator<Item = &'static str>) -> String {
    values
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(" or ")
}

impl AgentSpec {
    /// Validates a create body (already parsed as JSON). Every rule of contract section 3;
    /// the first broken rule is reported with the member's path.
    pub fn from_json(body: serde_json::Value) -> Result<Self, ApiError> {
        let mut body = JsonObject::root(body)?;

        let service_name = body
            .take_string("serviceName")?
            .ok_or_else(|| ApiError::bad_request("serviceName", "serviceName is required"))?;
        if !is_dns_label(&service_name) {
            return Err(ApiError::bad_request(
                "serviceName",
                format!("serviceName {DNS_LABEL_RULE}"),
            ));
        }

        let image = body
            .take_string("image")?
            .ok_or_else(|| ApiError::bad_request("image", "image is required"))?;
        check_image_reference(&image)
            .map_err(|rule| ApiError::bad_request("image", format!("image {rule}")))?;

        let node_type = match body.take_string("nodeType")? {
            None => DEFAULT_NODE_TYPE,
            Some(value) => NODE_TYPES
                .iter()
                .copied()
                .find(|known| *known == value)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "nodeType",
                        format!("nodeType must be {}", one_of(NODE_TYPES.iter().copied())),
                    )
                })?,
        };

        let mut secret_name = |member: &str| -> Result<Option<String>, ApiError> {
            match body.take_string(member)? {
                Some(name) if !is_dns_label(&name) => Err(ApiError::bad_request(
                    member,
                    format!("{member} {DNS_LABEL_RULE}"),
                )),
                other => Ok(other),
            }
        };
        let image_pull_secret_set = secret_name("imagePullSecretSet")?;
        let secret_set = secret_name("secretSet")?;

        let auto_scaling = match body.take_object("autoScaling")? {
            None => Replicas {
                min_replicas: DEFAULT_MIN_AGENTS,
                max_replicas: DEFAULT_MAX_AGENTS,
            },
            Some(mut scaling) => {
                let min = scaling.take_integer("minAgents", MIN_AGENTS)?;
                let max = scaling.take_integer("maxAgents", MAX_AGENTS)?;
                let path = scaling.path_of("maxAgents");
                scaling.finish()?;
                // Both ranges are within 0..=50, so these casts cannot truncate.
                let min = min.map_or(DEFAULT_MIN_AGENTS, |v| v as u32);
                let max = max.map_or(DEFAULT_MAX_AGENTS, |v| v as u32);
                if max < min {
                    return Err(ApiError::bad_request(
                        path,
                        format!(
                            "autoScaling.maxAgents ({max}) must be at least autoScaling.minAgents ({min})"
                        ),
                    ));
                }
                Replicas {
                    min_replicas: min,
                    max_replicas: max,
                }
            }
        };

        let enable_noise = body.take_bool("enableNoise")?.unwrap_or(false);

        let noise_filter = match body.take_object("noiseViva")? {
            None => None,
            Some(mut noise) => {
                let filter = match noise.take_string("audioFilter")? {
                    None => None,
                    Some(name) => Some(manifest::noise_filter_named(&name).ok_or_else(|| {
                        ApiError::bad_request(
                            "noiseViva.audioFilter",
                            format!(
                                "noiseViva.audioFilter must be {}, or null for no filter",
                                one_of(manifest::NOISE_FILTERS.iter().map(|f| f.name))
                            ),
                        )
                    })?),
                };
                noise.finish()?;
                filter
            }
        };

        let profile = match body.take_string("agentProfile")? {
            None => DEFAULT_PROFILE,
            Some(name) => manifest::profile_named(&name).ok_or_else(|| {
                ApiError::bad_request(
                    "agentProfile",
                    format!(
                        "agentProfile must be {}",
                        one_of(manifest::PROFILES.iter().map(|p| p.name))
                    ),
                )
            })?,
        };

        let enable_managed_keys = body.take_bool("enableManagedKeys")?.unwrap_or(false);

        body.finish()?;

        Ok(AgentSpec {
            service_name,
            image,
            node_type,
            image_pull_secret_set,
            secret_set,
            auto_scaling,
            enable_noise,
            noise_filter,
            profile,
            enable_managed_keys,
        })
    }
}

/// `noiseViva` of the agent object: the filter selected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoiseVivaStatus {
    pub audio_filter: String,
}

/// The deployment object (agent-hosting-api 2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    pub id: String,
    pub manifest: Manifest,
    pub service_id: String,
    pub created_at: String,
    pub updated_at: String,
}

/// The agent object (agent-hosting-api 2.1): the body of a successful create.
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
}

impl Agent {
    /// A new agent and its first deployment, not ready yet, in `namespace`.
    pub fn new(spec: &AgentSpec, namespace: &str, now: &str) -> Self {
        let deployment = Deployment {
            id: Uuid::new_v4().to_string(),
            manifest: Manifest::build(spec, namespace),
            service_id: Uuid::new_v4().to_string(),
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
        };
        Agent {
            name: spec.service_name.clone(),
            ready: false,
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
            active_deployment_id: deployment.id.clone(),
            active_deployment_ready: false,
            auto_scaling: spec.auto_scaling,
            active_session_count: 0,
            deployment: Some(deployment),
            agent_profile: Some(spec.profile.name.to_owned()),
            noise_viva: spec.noise_filter.map(|filter| NoiseVivaStatus {
                audio_filter: filter.name.to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn valid() -> Value {
        json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:1.0"})
    }

    fn with(member: &str, value: Value) -> Value {
        let mut body = valid();
        body[member] = value;
        body
    }

    /// Asserts the body is rejected with a 400 naming `field`.
    fn rejected(body: Value, field: &str) {
        let error = AgentSpec::from_json(body.clone()).expect_err(&body.to_string());
        assert_eq!(error.status().as_u16(), 400, "{body}");
        assert_eq!(error.code(), "GENERIC_BAD_REQUEST");
        assert_eq!(error.field(), Some(field), "{body}: {error}");
        assert!(!error.to_string().is_empty());
    }

    #[test]
    fn minimal_body_gets_every_default() {
        let spec = AgentSpec::from_json(valid()).unwrap();
        assert_eq!(spec.node_type, "arm");
        assert_eq!(spec.image_pull_secret_set, None);
        assert_eq!(spec.secret_set, None);
        assert_eq!(
            spec.auto_scaling,
            Replicas {
                min_replicas: 0,
                max_replicas: 50
            }
        );
        assert!(!spec.enable_noise);
        assert_eq!(spec.noise_filter, None);
        assert_eq!(spec.profile.name, "agent-1x");
        assert!(!spec.enable_managed_keys);
    }

    #[test]
    fn null_members_mean_the_default() {
        let mut body = valid();
        for member in [
            "nodeType",
            "imagePullSecretSet",
            "secretSet",
            "autoScaling",
            "enableNoise",
            "noiseViva",
            "agentProfile",
            "enableManagedKeys",
        ] {
            body[member] = Value::Null;
        }
        assert_eq!(
            AgentSpec::from_json(body).unwrap(),
            AgentSpec::from_json(valid()).unwrap()
        );
    }

    #[test]
    fn every_member_is_read() {
        let spec = AgentSpec::from_json(json!({
            "serviceName": "video-bot-2",
            "image": "registry.example.com:5000/team/agent@sha256:".to_owned() + &"0".repeat(64),
            "nodeType": "arm",
            "imagePullSecretSet": "pull-secrets",
            "secretSet": "env-secrets",
            "autoScaling": {"minAgents": 2, "maxAgents": 2},
            "enableNoise": true,
            "noiseViva": {"audioFilter": "pro"},
            "agentProfile": "agent-2x",
            "enableManagedKeys": true
        }))
        .unwrap();
        assert_eq!(spec.service_name, "video-bot-2");
        assert_eq!(spec.image_pull_secret_set.as_deref(), Some("pull-secrets"));
        assert_eq!(spec.secret_set.as_deref(), Some("env-secrets"));
        assert_eq!(spec.auto_scaling.min_replicas, 2);
        assert_eq!(spec.auto_scaling.max_replicas, 2);
        assert!(spec.enable_noise);
        assert_eq!(spec.noise_filter.unwrap().name, "pro");
        assert_eq!(spec.profile.name, "agent-2x");
        assert!(spec.enable_managed_keys);
    }

    #[test]
    fn noise_viva_off_forms_all_mean_no_filter() {
        for off in [Value::Null, json!({}), json!({"audioFilter": null})] {
            let spec = AgentSpec::from_json(with("noiseViva", off.clone())).unwrap();
            assert_eq!(spec.noise_filter, None, "{off}");
        }
        let tel = AgentSpec::from_json(with("noiseViva", json!({"audioFilter": "tel"}))).unwrap();
        assert_eq!(tel.noise_filter.unwrap().name, "tel");
    }

    #[test]
    fn autoscaling_defaults_each_bound_independently() {
        let only_min = AgentSpec::from_json(with("autoScaling", json!({"minAgents": 7}))).unwrap();
        assert_eq!(
            (
                only_min.auto_scaling.min_replicas,
                only_min.auto_scaling.max_replicas
            ),
            (7, 50)
        );
        let only_max = AgentSpec::from_json(with("autoScaling", json!({"maxAgents": 1}))).unwrap();
        assert_eq!(
            (
                only_max.auto_scaling.min_replicas,
                only_max.auto_scaling.max_replicas
            ),
            (0, 1)
        );
        let edges = AgentSpec::from_json(with(
            "autoScaling",
            json!({"minAgents": 50, "maxAgents": 50}),
        ))
        .unwrap();
        assert_eq!(edges.auto_scaling.max_replicas, 50);
    }

    #[test]
    fn service_name_rules() {
        rejected(json!({"image": "agent"}), "serviceName");
        rejected(with("serviceName", json!("")), "serviceName");
        rejected(with("serviceName", json!("My-Agent")), "serviceName");
        rejected(with("serviceName", json!("-agent")), "serviceName");
        rejected(with("serviceName", json!("agent-")), "serviceName");
        rejected(with("serviceName", json!("my_agent")), "serviceName");
        rejected(with("serviceName", json!("a".repeat(64))), "serviceName");
        rejected(with("serviceName", json!(12)), "serviceName");
        rejected(with("serviceName", Value::Null), "serviceName");
        assert!(AgentSpec::from_json(with("serviceName", json!("a".repeat(63)))).is_ok());
    }

    #[test]
    fn image_rules() {
        rejected(json!({"serviceName": "a"}), "image");
        rejected(with("image", json!("")), "image");
        rejected(with("image", json!("ghcr.io/Acme/agent")), "image");
        rejected(
            with("image", json!("ghcr.io/acme/agent@sha256:abc")),
            "image",
        );
        rejected(
            with("image", json!(format!("ghcr.io/{}", "a".repeat(510)))),
            "image",
        );
        rejected(with("image", json!(["agent"])), "image");
    }

    #[test]
    fn node_type_profile_and_filter_accept_only_their_table() {
        rejected(with("nodeType", json!("x86")), "nodeType");
        rejected(with("nodeType", json!("ARM")), "nodeType");
        rejected(with("agentProfile", json!("agent-3x")), "agentProfile");
        rejected(with("agentProfile", json!(1)), "agentProfile");
        rejected(
            with("noiseViva", json!({"audioFilter": "studio"})),
            "noiseViva.audioFilter",
        );
        rejected(
            with("noiseViva", json!({"audioFilter": true})),
            "noiseViva.audioFilter",
        );
        rejected(
            with("noiseViva", json!({"filter": "tel"})),
            "noiseViva.filter",
        );
        rejected(with("noiseViva", json!("tel")), "noiseViva");
    }

    #[test]
    fn secret_set_names_follow_the_name_rule() {
        rejected(with("secretSet", json!("Secrets")), "secretSet");
        rejected(with("secretSet", json!("")), "secretSet");
        rejected(
            with("imagePullSecretSet", json!("pull secrets")),
            "imagePullSecretSet",
        );
        rejected(
            with("imagePullSecretSet", json!(false)),
            "imagePullSecretSet",
        );
    }

    #[test]
    fn autoscaling_bounds() {
        rejected(
            with("autoScaling", json!({"minAgents": -1})),
            "autoScaling.minAgents",
        );
        rejected(
            with("autoScaling", json!({"minAgents": 51})),
            "autoScaling.minAgents",
        );
        rejected(
            with("autoScaling", json!({"maxAgents": 0})),
            "autoScaling.maxAgents",
        );
        rejected(
            with("autoScaling", json!({"maxAgents": 51})),
            "autoScaling.maxAgents",
        );
        rejected(
            with("autoScaling", json!({"minAgents": 5, "maxAgents": 4})),
            "autoScaling.maxAgents",
        );
        rejected(
            with("autoScaling", json!({"minAgents": 1.5})),
            "autoScaling.minAgents",
        );
        rejected(
            with("autoScaling", json!({"maxAgents": "3"})),
            "autoScaling.maxAgents",
        );
        rejected(
            with("autoScaling", json!({"minReplicas": 1})),
            "autoScaling.minReplicas",
        );
        rejected(with("autoScaling", json!([1, 2])), "autoScaling");
        rejected(
            with("autoScaling", json!({"maxAgents": u64::MAX})),
            "autoScaling.maxAgents",
        );
    }

    #[test]
    fn booleans_are_strict() {
        rejected(with("enableNoise", json!("true")), "enableNoise");
        rejected(with("enableNoise", json!(1)), "enableNoise");
        rejected(with("enableManagedKeys", json!("yes")), "enableManagedKeys");
    }

    #[test]
    fn unknown_members_are_named() {
        rejected(with("enableNoize", json!(true)), "enableNoize");
        rejected(with("name", json!("x")), "name");
    }

    #[test]
    fn new_agent_is_not_ready_and_links_its_deployment() {
        let spec = AgentSpec::from_json(with("noiseViva", json!({"audioFilter": "tel"}))).unwrap();
        let agent = Agent::new(&spec, "tiny-ferret-maroon-123", "2026-01-01T00:00:00.000Z");
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
    }
}
