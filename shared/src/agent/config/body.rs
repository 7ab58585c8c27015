//! Reading a create or update body: every rule of contract section 3 that one member decides.

use super::anchor;
use crate::ApiError;
use crate::catalog::{self, NODE_TYPES, NoiseFilter, Profile};
use crate::validation::{DNS_LABEL_RULE, JsonObject, Member, check_image_reference, is_dns_label};

/// The values `autoScaling.minAgents` may take.
pub const MIN_AGENTS: std::ops::RangeInclusive<i64> = 0..=50;
/// The values `autoScaling.maxAgents` may take.
pub const MAX_AGENTS: std::ops::RangeInclusive<i64> = 1..=50;
/// The values `maxSessionDuration` may take, in seconds (contract section 11, the anchor's).
pub const MAX_SESSION_DURATION: std::ops::RangeInclusive<i64> = 60..=14_400;

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
    pub max_session_duration: Member<u32>,
    /// `forceRedeploy: true`: an update makes a new deployment even when the configuration is
    /// unchanged (a changed secret value reaches the agent so). A create always deploys.
    pub force_redeploy: bool,
}

fn one_of(values: impl Iterator<Item = &'static str>) -> String {
    values
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(" or ")
}

impl ConfigChanges {
    /// Reads a body (already parsed as JSON) for this service, in the region it runs in.
    pub fn from_json(body: serde_json::Value) -> Result<Self, ApiError> {
        Self::from_json_in(body, &crate::config::region())
    }

    /// Reads a body for a service in `region`: every rule of contract section 3 that one member
    /// decides, and the anchor CLI's members (its name `krispViva` for `noiseViva`, `region`,
    /// `architecture`, `websocketAuth`; `resources`, `git` and `buildId` refused with a sentence
    /// rather than dropped). The first broken rule, in the order of the members below, is
    /// reported with the member's path. Rules between members (`maxAgents >= minAgents`) are
    /// checked when the changes are applied.
    pub fn from_json_in(mut body: serde_json::Value, region: &str) -> Result<Self, ApiError> {
        // Taken out before the reader sees them: any value but `null` is refused, whatever its
        // type, so the caller learns the member is not offered rather than how to spell it.
        let refused = anchor::take_refused(&mut body);
        let mut body = JsonObject::root(body)?;
        let mut changes = ConfigChanges {
            service_name: body
                .take_string("serviceName")?
                .try_map(|name| dns_label("serviceName", name))?,
            image: body.take_string("image")?.try_map(image)?,
            node_type: body.take_string("nodeType")?.try_map(node_type)?,
            image_pull_secret_set: body
                .take_string("imagePullSecretSet")?
                .try_map(|name| dns_label("imagePullSecretSet", name))?,
            secret_set: body
                .take_string("secretSet")?
                .try_map(|name| dns_label("secretSet", name))?,
            auto_scaling: body.take_object("autoScaling")?.try_map(auto_scaling)?,
            enable_noise: body.take_bool("enableNoise")?,
            noise_filter: body
                .take_object("noiseViva")?
                .try_map(|noise| noise_filter("noiseViva", noise))?,
            profile: body.take_string("agentProfile")?.try_map(profile)?,
            enable_managed_keys: body.take_bool("enableManagedKeys")?,
            // Within 60..=14,400, so the cast cannot truncate.
            max_session_duration: body
                .take_integer("maxSessionDuration", MAX_SESSION_DURATION)?
                .map(|seconds| seconds as u32),
            force_redeploy: body.take_bool("forceRedeploy")?.given() == Some(true),
        };
        let krisp_viva = body
            .take_object("krispViva")?
            .try_map(|noise| noise_filter("krispViva", noise))?;
        changes.noise_filter = anchor::either_filter(changes.noise_filter, krisp_viva)?;
        anchor::region(body.take_string("region")?, region)?;
        changes.node_type =
            anchor::architecture(body.take_string("architecture")?, changes.node_type)?;
        anchor::websocket_auth(body.take_string("websocketAuth")?)?;
        refused.check()?;
        body.finish()?;
        Ok(changes)
    }
}

fn image(image: String) -> Result<String, ApiError> {
    check_image_reference(&image)
        .map_err(|rule| ApiError::bad_request("image", format!("image {rule}")))?;
    Ok(image)
}

fn node_type(value: String) -> Result<&'static str, ApiError> {
    NODE_TYPES
        .iter()
        .copied()
        .find(|known| *known == value)
        .ok_or_else(|| {
            ApiError::bad_request(
                "nodeType",
                format!("nodeType must be {}", one_of(NODE_TYPES.iter().copied())),
            )
        })
}

/// `serviceName`, `secretSet` or `imagePullSecretSet`: a name that is a DNS label.
fn dns_label(member: &'static str, name: String) -> Result<String, ApiError> {
    if is_dns_label(&name) {
        Ok(name)
    } else {
        Err(ApiError::bad_request(
            member,
            format!("{member} {DNS_LABEL_RULE}"),
        ))
    }
}

fn auto_scaling(mut scaling: JsonObject) -> Result<ScalingChanges, ApiError> {
    // Both ranges are within 0..=50, so the casts cannot truncate.
    let min_agents = scaling
        .take_integer("minAgents", MIN_AGENTS)?
        .map(|v| v as u32);
    let max_agents = scaling
        .take_integer("maxAgents", MAX_AGENTS)?
        .map(|v| v as u32);
    scaling.finish()?;
    Ok(ScalingChanges {
        min_agents,
        max_agents,
    })
}

/// `noiseViva`, or `krispViva` (`member`, the anchor's name for it): `{}` or
/// `{"audioFilter": null}` is no filter.
fn noise_filter(
    member: &str,
    mut noise: JsonObject,
) -> Result<Option<&'static NoiseFilter>, ApiError> {
    let filter = noise
        .take_string("audioFilter")?
        .given()
        .map(|name| {
            catalog::noise_filter_named(&name).ok_or_else(|| {
                let field = format!("{member}.audioFilter");
                ApiError::bad_request(
                    field.clone(),
                    format!(
                        "{field} must be {}, or null for no filter",
                        one_of(catalog::NOISE_FILTERS.iter().map(|f| f.name))
                    ),
                )
            })
        })
        .transpose()?;
    noise.finish()?;
    Ok(filter)
}

fn profile(name: String) -> Result<&'static Profile, ApiError> {
    catalog::profile_named(&name).ok_or_else(|| {
        ApiError::bad_request(
            "agentProfile",
            format!(
                "agentProfile must be {}",
                one_of(catalog::PROFILES.iter().map(|p| p.name))
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::manifest::Replicas;
    use serde_json::{Value, json};

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
        assert_eq!(spec.max_session_duration, 7_200);
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
            "maxSessionDuration",
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
            "enableManagedKeys": true,
            "maxSessionDuration": 600
        }))
        .unwrap();
        assert_eq!(name, "video-bot-2");
        assert_eq!(spec.max_session_duration, 600);
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
    fn max_session_duration_is_60_to_14400_whole_seconds() {
        for seconds in [60, 14_400] {
            let spec = config(with("maxSessionDuration", json!(seconds)));
            assert_eq!(spec.max_session_duration, seconds);
        }
        for bad in [
            json!(59),
            json!(14_401),
            json!(0),
            json!(-60),
            json!(600.5),
            json!("600"),
            json!(true),
            json!(u64::MAX),
        ] {
            rejected(with("maxSessionDuration", bad), "maxSessionDuration");
        }
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
}
