//! What an agent's configuration is chosen from: node types, resource profiles and noise filters
//! (agent-hosting-api 2.6, contract section 3). Data: a new profile or filter is one row.

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
/// The variable a filter's model path is handed to the agent in.
pub const NOISE_MODEL_PATH_VARIABLE: &str = "NOISE_VIVA_MODEL_PATH";

pub fn profile_named(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|profile| profile.name == name)
}

pub fn noise_filter_named(name: &str) -> Option<&'static NoiseFilter> {
    NOISE_FILTERS.iter().find(|filter| filter.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_looked_up_by_name() {
        assert_eq!(DEFAULT_PROFILE.name, "agent-1x");
        assert_eq!(profile_named("agent-2x").map(|p| p.cpu), Some("1"));
        assert_eq!(profile_named("agent-3x"), None);
        assert_eq!(
            noise_filter_named("pro").map(|f| f.model_path),
            Some("audio_filters/noise-viva-pro-v1.kef")
        );
        assert_eq!(noise_filter_named("studio"), None);
    }
}
