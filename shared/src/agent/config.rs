//! An agent's configuration: the members of a create or update body (contract sections 3 and 6),
//! their rules, and the resolved configuration a deployment's manifest is built from.
//!
//! One reader serves both endpoints: a body is read into [`ConfigChanges`] (each member absent,
//! `null` or given, every rule checked), and a configuration is the changes applied to a base:
//! the defaults on create, the agent's current configuration on update.

use serde::{Deserialize, Serialize};

use crate::ApiError;
use crate::manifest::{
    self, DEFAULT_NODE_TYPE, DEFAULT_PROFILE, NODE_TYPES, NoiseFilter, Profile, Replicas,
};
use crate::validation::{DNS_LABEL_RULE, JsonObject, Member, check_image_reference, is_dns_label};

pub const MIN_AGENTS: std::ops::RangeInclusive<i64> = 0..=50;
pub const MAX_AGENTS: std::ops::RangeInclusive<i64> = 1..=50;
pub const DEFAULT_MIN_AGENTS: u32 = 0;
/// The anchor product's default.
pub const DEFAULT_MAX_AGENTS: u32 = 50;

/// The resolved configuration of an agent: every member with its value, defaults included.
/// Stored with the agent and with each deployment; profile and filter by their table names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfig {
    pub image: String,
    pub node_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secret_set: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_set: Option<String>,
    pub auto_scaling: Replicas,
    pub enable_noise: bool,
    #[serde(
        rename = "audioFilter",
        default,
        skip_serializing_if = "Option::is_none",
        with = "by_name::noise_filter"
    )]
    pub noise_filter: Option<&'static NoiseFilter>,
    #[serde(rename = "agentProfile", with = "by_name::profile")]
    pub profile: &'static Profile,
    pub enable_managed_keys: bool,
}

/// The auto-scaling members of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalingChanges {
    pub min_agents: Member<u32>,
    pub max_agents: Member<u32>,
}

/// A create or update body, read and checked member by member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigChanges {
    pub service_name: Member<String>,
    pub image: Member<String>,
    pub node_type: Member<&'static str>,
    pub image_pull_secret_set: Member<String>,
    pub secret_set: Member<String>,
    pub auto_scaling: Member<ScalingChanges>,
    pub enable_noise: Member<bool>,
    /// `Given(None)`: `{}` or `{"audioFilter": null}`, no filter.
    pub noise_filter: Member<Option<&'static NoiseFilter>>,
    pub profile: Member<&'static Profile>,
    pub enable_managed_keys: Member<bool>,
}

fn one_of(values: impl Iterator<Item = &'static str>) -> String {
    values
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(" or ")
}

impl ConfigChanges {
    /// Reads a body (already parsed as JSON): every rule of contract section 3 that one member
    /// decides; the first broken rule is reported with the member's path. Rules between members
    /// (`maxAgents >= minAgents`) are checked when the changes are applied.
    pub fn from_json(body: serde_json::Value) -> Result<Self, ApiError> {
        let mut body = JsonObject::root(body)?;

        let service_name = body.take_string("serviceName")?;
        if let Member::Given(name) = &service_name
            && !is_dns_label(name)
        {
            return Err(ApiError::bad_request(
                "serviceName",
                format!("serviceName {DNS_LABEL_RULE}"),
            ));
        }

        let image = body.take_string("image")?;
        if let Member::Given(image) = &image {
            check_image_reference(image)
                .map_err(|rule| ApiError::bad_request("image", format!("image {rule}")))?;
        }

        let node_type = match body.take_string("nodeType")? {
            Member::Given(value) => Member::Given(
                NODE_TYPES
                    .iter()
                    .copied()
                    .find(|known| *known == value)
                    .ok_or_else(|| {
                        ApiError::bad_request(
                            "nodeType",
                            format!("nodeType must be {}", one_of(NODE_TYPES.iter().copied())),
                        )
                    })?,
            ),
            Member::Absent => Member::Absent,
            Member::Null => Member::Null,
        };

        let mut secret_name = |member: &str| -> Result<Member<String>, ApiError> {
            match body.take_string(member)? {
                Member::Given(name) if !is_dns_label(&name) => Err(ApiError::bad_request(
                    member,
                    format!("{member} {DNS_LABEL_RULE}"),
                )),
                other => Ok(other),
            }
        };
        let image_pull_secret_set = secret_name("imagePullSecretSet")?;
        let secret_set = secret_name("secretSet")?;

        let auto_scaling = match body.take_object("autoScaling")? {
            Member::Given(mut scaling) => {
                // Both ranges are within 0..=50, so the casts cannot truncate.
                let min_agents = scaling
                    .take_integer("minAgents", MIN_AGENTS)?
                    .map(|v| v as u32);
                let max_agents = scaling
                    .take_integer("maxAgents", MAX_AGENTS)?
                    .map(|v| v as u32);
                scaling.finish()?;
                Member::Given(ScalingChanges {
                    min_agents,
                    max_agents,
                })
            }
            Member::Absent => Member::Absent,
            Member::Null => Member::Null,
        };

        let enable_noise = body.take_bool("enableNoise")?;

        let noise_filter = match body.take_object("noiseViva")? {
            Member::Given(mut noise) => {
                let filter = match noise.take_string("audioFilter")?.given() {
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
                Member::Given(filter)
            }
            Member::Absent => Member::Absent,
            Member::Null => Member::Null,
        };

        let profile = match body.take_string("agentProfile")? {
            Member::Given(name) => {
                Member::Given(manifest::profile_named(&name).ok_or_else(|| {
                    ApiError::bad_request(
                        "agentProfile",
                        format!(
                            "agentProfile must be {}",
                            one_of(manifest::PROFILES.iter().map(|p| p.name))
                        ),
                    )
                })?)
            }
            Member::Absent => Member::Absent,
            Member::Null => Member::Null,
        };

        let enable_managed_keys = body.take_bool("enableManagedKeys")?;

        body.finish()?;

        Ok(ConfigChanges {
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

    /// The name and configuration of a new agent: `serviceName` and `image` are required, every
    /// other member absent or `null` takes its default.
    pub fn into_new_agent(self) -> Result<(String, AgentConfig), ApiError> {
        let name = self
            .service_name
            .clone()
            .given()
            .ok_or_else(|| ApiError::bad_request("serviceName", "serviceName is required"))?;
        let config = self.applied_to(None)?;
        Ok((name, config))
    }

    /// The configuration of agent `name` after this update: a member given replaces the current
    /// value, one left out keeps it, `null` restores the default. `serviceName`, if given, must
    /// be the agent's name.
    pub fn apply_to(self, name: &str, current: &AgentConfig) -> Result<AgentConfig, ApiError> {
        if let Member::Given(given) = &self.service_name
            && given != name
        {
            return Err(ApiError::bad_request(
                "serviceName",
                format!(
                    "serviceName must be the agent's name ('{name}') or left out: an agent cannot be renamed"
                ),
            ));
        }
        self.applied_to(Some(current))
    }

    /// These changes applied to `base` (the defaults when `None`), with the rules between
    /// members checked on the result.
    fn applied_to(self, base: Option<&AgentConfig>) -> Result<AgentConfig, ApiError> {
        let image = match (self.image, base) {
            (Member::Given(image), _) => image,
            (Member::Absent, Some(base)) => base.image.clone(),
            (Member::Null, Some(_)) => {
                return Err(ApiError::bad_request(
                    "image",
                    "image cannot be null: it has no default",
                ));
            }
            (_, None) => return Err(ApiError::bad_request("image", "image is required")),
        };
        let defaults = Replicas {
            min_replicas: DEFAULT_MIN_AGENTS,
            max_replicas: DEFAULT_MAX_AGENTS,
        };
        let auto_scaling = match self.auto_scaling {
            Member::Absent => base.map_or(defaults, |base| base.auto_scaling),
            Member::Null => defaults,
            Member::Given(scaling) => {
                let current = base.map_or(defaults, |base| base.auto_scaling);
                let replicas = Replicas {
                    min_replicas: scaling
                        .min_agents
                        .apply(current.min_replicas, DEFAULT_MIN_AGENTS),
                    max_replicas: scaling
                        .max_agents
                        .apply(current.max_replicas, DEFAULT_MAX_AGENTS),
                };
                check_scaling(&scaling, replicas)?;
                replicas
            }
        };
        Ok(AgentConfig {
            image,
            node_type: self.node_type.map(str::to_owned).apply(
                base.map_or_else(
                    || DEFAULT_NODE_TYPE.to_owned(),
                    |base| base.node_type.clone(),
                ),
                DEFAULT_NODE_TYPE.to_owned(),
            ),
            image_pull_secret_set: self.image_pull_secret_set.map(Some).apply(
                base.and_then(|base| base.image_pull_secret_set.clone()),
                None,
            ),
            secret_set: self
                .secret_set
                .map(Some)
                .apply(base.and_then(|base| base.secret_set.clone()), None),
            auto_scaling,
            enable_noise: self
                .enable_noise
                .apply(base.is_some_and(|base| base.enable_noise), false),
            noise_filter: self
                .noise_filter
                .apply(base.and_then(|base| base.noise_filter), None),
            profile: self.profile.apply(
                base.map_or(DEFAULT_PROFILE, |base| base.profile),
                DEFAULT_PROFILE,
            ),
            enable_managed_keys: self
                .enable_managed_keys
                .apply(base.is_some_and(|base| base.enable_managed_keys), false),
        })
    }
}

/// `maxAgents >= minAgents` on the resolved replicas, blamed on the member the body gave (the
/// maximum when it gave both, as create always has).
fn check_scaling(scaling: &ScalingChanges, replicas: Replicas) -> Result<(), ApiError> {
    let (min, max) = (replicas.min_replicas, replicas.max_replicas);
    if max >= min {
        return Ok(());
    }
    if scaling.max_agents != Member::Absent || scaling.min_agents == Member::Absent {
        Err(ApiError::bad_request(
            "autoScaling.maxAgents",
            format!("autoScaling.maxAgents ({max}) must be at least autoScaling.minAgents ({min})"),
        ))
    } else {
        Err(ApiError::bad_request(
            "autoScaling.minAgents",
            format!("autoScaling.minAgents ({min}) must be at most autoScaling.maxAgents ({max})"),
        ))
    }
}

/// Profiles and noise filters are stored by their table names and read back through the tables:
/// a stored name the tables no longer know is a storage error, never a silent default.
mod by_name {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub mod profile {
        use super::*;
        use crate::manifest::{Profile, profile_named};

        pub fn serialize<S: Serializer>(
            profile: &&'static Profile,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            s.serialize_str(profile.name)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'static Profile, D::Error> {
            let name = String::deserialize(d)?;
            profile_named(&name).ok_or_else(|| D::Error::custom(format!("unknown profile {name}")))
        }
    }

    pub mod noise_filter {
        use super::*;
        use crate::manifest::{NoiseFilter, noise_filter_named};

        pub fn serialize<S: Serializer>(
            filter: &Option<&'static NoiseFilter>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match filter {
                Some(filter) => s.serialize_str(filter.name),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<&'static NoiseFilter>, D::Error> {
            match Option::<String>::deserialize(d)? {
                None => Ok(None),
                Some(name) => noise_filter_named(&name)
                    .map(Some)
                    .ok_or_else(|| D::Error::custom(format!("unknown noise filter {name}"))),
            }
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

    /// A create body read as create reads it: the name and the configuration.
    fn create(body: Value) -> Result<(String, AgentConfig), ApiError> {
        ConfigChanges::from_json(body)?.into_new_agent()
    }

    fn config(body: Value) -> AgentConfig {
        create(body).unwrap().1
    }

    /// Asserts the body is rejected with a 400 naming `field`.
    fn rejected(body: Value, field: &str) {
        let error = create(body.clone()).expect_err(&body.to_string());
        assert_eq!(error.status().as_u16(), 400, "{body}");
        assert_eq!(error.code(), "GENERIC_BAD_REQUEST");
        assert_eq!(error.field(), Some(field), "{body}: {error}");
        assert!(!error.to_string().is_empty());
    }

    #[test]
    fn minimal_body_gets_every_default() {
        let (name, spec) = create(valid()).unwrap();
        assert_eq!(name, "my-agent");
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
        assert_eq!(create(body).unwrap(), create(valid()).unwrap());
    }

    #[test]
    fn every_member_is_read() {
        let (name, spec) = create(json!({
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
        assert_eq!(name, "video-bot-2");
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
            let spec = config(with("noiseViva", off.clone()));
            assert_eq!(spec.noise_filter, None, "{off}");
        }
        let tel = config(with("noiseViva", json!({"audioFilter": "tel"})));
        assert_eq!(tel.noise_filter.unwrap().name, "tel");
    }

    #[test]
    fn autoscaling_defaults_each_bound_independently() {
        let only_min = config(with("autoScaling", json!({"minAgents": 7})));
        assert_eq!(
            (
                only_min.auto_scaling.min_replicas,
                only_min.auto_scaling.max_replicas
            ),
            (7, 50)
        );
        let only_max = config(with("autoScaling", json!({"maxAgents": 1})));
        assert_eq!(
            (
                only_max.auto_scaling.min_replicas,
                only_max.auto_scaling.max_replicas
            ),
            (0, 1)
        );
        let edges = config(with(
            "autoScaling",
            json!({"minAgents": 50, "maxAgents": 50}),
        ));
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
        assert!(create(with("serviceName", json!("a".repeat(63)))).is_ok());
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

    /// The configuration of `base` after the update `changes` of agent `my-agent`.
    fn updated(base: &AgentConfig, changes: Value) -> Result<AgentConfig, ApiError> {
        ConfigChanges::from_json(changes)?.apply_to("my-agent", base)
    }

    fn full() -> AgentConfig {
        config(json!({
            "serviceName": "my-agent",
            "image": "ghcr.io/acme/agent:1.0",
            "imagePullSecretSet": "pull",
            "secretSet": "env",
            "autoScaling": {"minAgents": 2, "maxAgents": 8},
            "enableNoise": true,
            "noiseViva": {"audioFilter": "tel"},
            "agentProfile": "agent-2x",
            "enableManagedKeys": true
        }))
    }

    #[test]
    fn an_update_replaces_what_it_gives_and_keeps_what_it_leaves_out() {
        let base = full();
        assert_eq!(
            updated(&base, json!({})).unwrap(),
            base,
            "an empty update changes nothing"
        );
        let image = updated(&base, json!({"image": "ghcr.io/acme/agent:2.0"})).unwrap();
        assert_eq!(image.image, "ghcr.io/acme/agent:2.0");
        assert_eq!(
            AgentConfig {
                image: base.image.clone(),
                ..image
            },
            base
        );
        let filter = updated(&base, json!({"noiseViva": {"audioFilter": "pro"}})).unwrap();
        assert_eq!(filter.noise_filter.unwrap().name, "pro");
        assert_eq!(filter.profile.name, "agent-2x");
        // The name may be repeated, never changed.
        assert_eq!(
            updated(&base, json!({"serviceName": "my-agent"})).unwrap(),
            base
        );
        let renamed = updated(&base, json!({"serviceName": "other"})).unwrap_err();
        assert_eq!(renamed.field(), Some("serviceName"));
    }

    #[test]
    fn null_in_an_update_restores_the_default() {
        let base = full();
        let reset = updated(
            &base,
            json!({"imagePullSecretSet": null, "secretSet": null, "autoScaling": null,
                   "enableNoise": null, "noiseViva": null, "agentProfile": null,
                   "enableManagedKeys": null, "nodeType": null}),
        )
        .unwrap();
        assert_eq!(
            reset,
            config(json!({"serviceName": "my-agent", "image": base.image}))
        );
        // The image has no default to restore.
        assert_eq!(
            updated(&base, json!({"image": null})).unwrap_err().field(),
            Some("image")
        );
    }

    #[test]
    fn auto_scaling_members_merge_one_by_one() {
        let base = full();
        let max = updated(&base, json!({"autoScaling": {"maxAgents": 20}})).unwrap();
        assert_eq!(
            (max.auto_scaling.min_replicas, max.auto_scaling.max_replicas),
            (2, 20)
        );
        let min = updated(&base, json!({"autoScaling": {"minAgents": null}})).unwrap();
        assert_eq!(
            (min.auto_scaling.min_replicas, min.auto_scaling.max_replicas),
            (0, 8)
        );
        // The rule between them holds on the result, blamed on the member given.
        let below = updated(&base, json!({"autoScaling": {"maxAgents": 1}})).unwrap_err();
        assert_eq!(below.field(), Some("autoScaling.maxAgents"));
        let above = updated(&base, json!({"autoScaling": {"minAgents": 9}})).unwrap_err();
        assert_eq!(above.field(), Some("autoScaling.minAgents"));
    }

    #[test]
    fn an_update_follows_every_rule_of_create() {
        let base = full();
        for (body, field) in [
            (json!({"image": "ghcr.io/Acme/agent"}), "image"),
            (json!({"nodeType": "x86"}), "nodeType"),
            (json!({"agentProfile": "agent-3x"}), "agentProfile"),
            (
                json!({"autoScaling": {"maxAgents": 51}}),
                "autoScaling.maxAgents",
            ),
            (json!({"secretSet": "Secrets"}), "secretSet"),
            (json!({"enableNoize": true}), "enableNoize"),
        ] {
            assert_eq!(
                updated(&base, body.clone()).unwrap_err().field(),
                Some(field),
                "{body}"
            );
        }
    }

    #[test]
    fn a_configuration_round_trips_through_storage_by_table_names() {
        let stored = serde_json::to_value(full()).unwrap();
        assert_eq!(stored["agentProfile"], "agent-2x");
        assert_eq!(stored["audioFilter"], "tel");
        let back: AgentConfig = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(back, full());
        let mut unknown = stored;
        unknown["agentProfile"] = json!("agent-9x");
        assert!(serde_json::from_value::<AgentConfig>(unknown).is_err());
    }
}
