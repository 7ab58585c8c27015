//! An agent's configuration: the members of a create or update body (contract sections 3 and 6),
//! their rules, and the resolved configuration a deployment's manifest is built from.
//!
//! One reader serves both endpoints: a body is read into [`ConfigChanges`] (each member absent,
//! `null` or given, every rule checked: [`body`]; the members only the anchor's CLI sends, each
//! accepted with its meaning or refused naming it: [`anchor`]), and a configuration is the
//! changes applied to a base: the defaults on create, the agent's current configuration on
//! update ([`merge`]); a configuration builds its deployment's manifest ([`manifest`]).

mod anchor;
mod body;
mod manifest;
mod merge;

use serde::{Deserialize, Serialize};

use crate::catalog::{NoiseFilter, Profile};
use crate::manifest::Replicas;

pub use crate::manifest::DEFAULT_MAX_SESSION_DURATION;
pub use anchor::{ARM_ARCHITECTURE, WEBSOCKET_AUTH_NONE};
pub use body::{ConfigChanges, MAX_AGENTS, MAX_SESSION_DURATION, MIN_AGENTS, ScalingChanges};

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
    /// Seconds a session may last before the control plane ends it (contract section 11);
    /// absent from configurations stored before sessions, which had the default.
    #[serde(default = "crate::manifest::default_max_session_duration")]
    pub max_session_duration: u32,
}

/// Profiles and noise filters are stored by their table names and read back through the tables:
/// a stored name the tables no longer know is a storage error, never a silent default.
mod by_name {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub mod profile {
        use super::*;
        use crate::catalog::{Profile, profile_named};

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
        use crate::catalog::{NoiseFilter, noise_filter_named};

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
    use serde_json::json;
    use testing::full;

    #[test]
    fn a_configuration_round_trips_through_storage_by_table_names() {
        let stored = serde_json::to_value(full()).unwrap();
        assert_eq!(stored["agentProfile"], "agent-2x");
        assert_eq!(stored["audioFilter"], "tel");
        let back: AgentConfig = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(back, full());
        let mut unknown = stored.clone();
        unknown["agentProfile"] = json!("agent-9x");
        assert!(serde_json::from_value::<AgentConfig>(unknown).is_err());
        let mut before_sessions = stored;
        before_sessions
            .as_object_mut()
            .unwrap()
            .remove("maxSessionDuration");
        let back: AgentConfig = serde_json::from_value(before_sessions).unwrap();
        assert_eq!(back.max_session_duration, DEFAULT_MAX_SESSION_DURATION);
    }
}

/// Bodies and their reading as create reads them, for the tests of each part.
#[cfg(test)]
pub(super) mod testing {
    use super::*;
    use crate::ApiError;
    use serde_json::{Value, json};

    pub(crate) fn valid() -> Value {
        json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:1.0"})
    }

    pub(crate) fn with(member: &str, value: Value) -> Value {
        let mut body = valid();
        body[member] = value;
        body
    }

    /// A create body read as create reads it: the name and the configuration.
    pub(crate) fn create(body: Value) -> Result<(String, AgentConfig), ApiError> {
        ConfigChanges::from_json(body)?.into_new_agent()
    }

    pub(crate) fn config(body: Value) -> AgentConfig {
        create(body).unwrap().1
    }

    /// Asserts the body is rejected with a 400 naming `field`.
    pub(crate) fn rejected(body: Value, field: &str) {
        let error = create(body.clone()).expect_err(&body.to_string());
        assert_eq!(error.status().as_u16(), 400, "{body}");
        assert_eq!(error.code(), "GENERIC_BAD_REQUEST");
        assert_eq!(error.field(), Some(field), "{body}: {error}");
        assert!(!error.to_string().is_empty());
    }

    pub(crate) fn full() -> AgentConfig {
        config(json!({
            "serviceName": "my-agent",
            "image": "ghcr.io/acme/agent:1.0",
            "imagePullSecretSet": "pull",
            "secretSet": "env",
            "autoScaling": {"minAgents": 2, "maxAgents": 8},
            "enableNoise": true,
            "noiseViva": {"audioFilter": "tel"},
            "agentProfile": "agent-2x",
            "enableManagedKeys": true,
            "maxSessionDuration": 900
        }))
    }
}
