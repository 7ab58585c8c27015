//! Secret sets (contract section 10): the credentials an agent's containers receive, named by
//! `secretSet` and `imagePullSecretSet`. A value is write-only: it is read from a request
//! ([`body`]), sealed under a data key bound to its namespace, set and key ([`seal`]), and never
//! held in the clear anywhere after.

pub mod body;
pub mod opening;
pub mod seal;
pub mod sets;
pub mod store;
pub mod views;

use serde::{Deserialize, Serialize};

/// Keys a set holds at most.
pub const MAX_KEYS_PER_SET: usize = 100;
/// What a set's values take at most, together.
pub const MAX_SET_VALUE_BYTES: usize = 64 * 1024;
/// What one value takes at most.
pub const MAX_VALUE_BYTES: usize = 32_768;
/// Sets an account holds at most.
pub const MAX_SETS_PER_ACCOUNT: usize = 200;

/// What a set holds: keys and values for the containers' environment, or the credentials a
/// registry asks for to pull the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SetType {
    Secret,
    ImagePullSecret,
}

/// A secret value as the caller gave it. It is never printed, serialized or compared: `Debug`
/// shows its length only, and the only way out is [`SecretValue::expose`], to be sealed.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: String) -> Self {
        SecretValue(value)
    }

    /// The value's bytes, to seal them.
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretValue({} bytes)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_never_shows_in_debug_output() {
        let value = SecretValue::new("sk-live-0123456789".to_owned());
        let shown = format!("{value:?} {:?}", vec![value.clone()]);
        assert!(!shown.contains("sk-live"), "{shown}");
        assert!(shown.contains("18 bytes"), "{shown}");
    }

    #[test]
    fn set_types_are_written_as_the_contract_spells_them() {
        assert_eq!(serde_json::to_value(SetType::Secret).unwrap(), "secret");
        assert_eq!(
            serde_json::to_value(SetType::ImagePullSecret).unwrap(),
            "imagePullSecret"
        );
    }
}
