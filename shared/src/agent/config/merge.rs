//! A configuration is changes applied to a base: the defaults on create, the agent's current
//! configuration on update (a member given replaces, one left out keeps, `null` restores the
//! default), with the rules between members checked on the result.

use super::{
    AgentConfig, ConfigChanges, DEFAULT_MAX_AGENTS, DEFAULT_MAX_SESSION_DURATION,
    DEFAULT_MIN_AGENTS, ScalingChanges,
};
use crate::ApiError;
use crate::catalog::{DEFAULT_NODE_TYPE, DEFAULT_PROFILE};
use crate::manifest::Replicas;
use crate::validation::Member;

impl ConfigChanges {
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
        let config = AgentConfig {
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
            max_session_duration: self.max_session_duration.apply(
                base.map_or(DEFAULT_MAX_SESSION_DURATION, |base| {
                    base.max_session_duration
                }),
                DEFAULT_MAX_SESSION_DURATION,
            ),
        };
        check_set_names(&config)?;
        Ok(config)
    }
}

/// A set holds either keys or a registry's credentials, so the two members never name one set.
fn check_set_names(config: &AgentConfig) -> Result<(), ApiError> {
    match (&config.secret_set, &config.image_pull_secret_set) {
        (Some(secret), Some(pull)) if secret == pull => Err(ApiError::bad_request(
            "imagePullSecretSet",
            format!(
                "imagePullSecretSet cannot name the set secretSet names ('{pull}'): a set holds either keys or registry credentials"
            ),
        )),
        _ => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use serde_json::{Value, json};

    /// The configuration of `base` after the update `changes` of agent `my-agent`.
    fn updated(base: &AgentConfig, changes: Value) -> Result<AgentConfig, ApiError> {
        ConfigChanges::from_json(changes)?.apply_to("my-agent", base)
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
        let shorter = updated(&base, json!({"maxSessionDuration": 60})).unwrap();
        assert_eq!(
            AgentConfig {
                max_session_duration: base.max_session_duration,
                ..shorter
            },
            base,
            "a new maxSessionDuration is a new configuration, the rest kept"
        );
        assert_eq!(shorter.max_session_duration, 60);
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
                   "enableManagedKeys": null, "nodeType": null, "maxSessionDuration": null}),
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
}
