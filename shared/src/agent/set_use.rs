//! The secret sets an agent's active configuration names (contract section 10). A set named must
//! exist in the agent's account with the type its member asks for, and a set that an agent's
//! active deployment names is not deleted. So every write that changes an agent's active
//! configuration writes a [`SetUse`] in the same atomic step as the agent: each store applies it
//! (DynamoDB as conditioned actions of the agent's transaction, the memory store under its lock).

use super::config::AgentConfig;
use crate::secrets::SetType;

/// The member of a configuration that names a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetMember {
    SecretSet,
    ImagePullSecretSet,
}

impl SetMember {
    /// The type of set the member names.
    pub fn set_type(self) -> SetType {
        match self {
            SetMember::SecretSet => SetType::Secret,
            SetMember::ImagePullSecretSet => SetType::ImagePullSecret,
        }
    }

    /// The member's name in a body: the `field` of its errors.
    pub fn field(self) -> &'static str {
        match self {
            SetMember::SecretSet => "secretSet",
            SetMember::ImagePullSecretSet => "imagePullSecretSet",
        }
    }
}

/// A set a configuration names, and the member that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedSet<'a> {
    pub member: SetMember,
    pub name: &'a str,
}

impl AgentConfig {
    /// The sets this configuration names (none, one or two; never one set twice: the
    /// configuration's rules refuse that).
    pub fn named_sets(&self) -> Vec<NamedSet<'_>> {
        [
            (SetMember::SecretSet, &self.secret_set),
            (SetMember::ImagePullSecretSet, &self.image_pull_secret_set),
        ]
        .into_iter()
        .filter_map(|(member, name)| name.as_deref().map(|name| NamedSet { member, name }))
        .collect()
    }
}

/// What one write of an agent does to the users of sets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetUse<'a> {
    /// Every set the new configuration names: each must exist with its member's type, and has
    /// the agent among its users after the write (still, when it had it already).
    pub named: Vec<NamedSet<'a>>,
    /// Sets the old configuration named and the new one does not: the agent leaves their users.
    pub dropped: Vec<&'a str>,
}

impl<'a> SetUse<'a> {
    /// From the active configuration `before` the write (`None`: a create) to the one `after`
    /// it (`None`: a delete).
    pub fn between(before: Option<&'a AgentConfig>, after: Option<&'a AgentConfig>) -> Self {
        let named = after.map(AgentConfig::named_sets).unwrap_or_default();
        let dropped = before
            .map(AgentConfig::named_sets)
            .unwrap_or_default()
            .into_iter()
            .map(|set| set.name)
            .filter(|name| !named.iter().any(|set| set.name == *name))
            .collect();
        SetUse { named, dropped }
    }

    pub fn is_empty(&self) -> bool {
        self.named.is_empty() && self.dropped.is_empty()
    }

    /// Without the sets of `gone`: sets dropped that no longer exist, so have no users to leave
    /// (an agent named them before names were checked).
    pub fn without_dropped(&self, gone: &[&str]) -> Self {
        SetUse {
            named: self.named.clone(),
            dropped: self
                .dropped
                .iter()
                .copied()
                .filter(|name| !gone.contains(name))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::config::testing::{config, valid};

    fn with_sets(secret: Option<&str>, pull: Option<&str>) -> AgentConfig {
        AgentConfig {
            secret_set: secret.map(str::to_owned),
            image_pull_secret_set: pull.map(str::to_owned),
            ..config(valid())
        }
    }

    #[test]
    fn a_create_names_every_set_of_its_configuration_and_drops_none() {
        let after = with_sets(Some("env"), Some("pull"));
        let uses = SetUse::between(None, Some(&after));
        assert_eq!(
            uses.named,
            [
                NamedSet {
                    member: SetMember::SecretSet,
                    name: "env"
                },
                NamedSet {
                    member: SetMember::ImagePullSecretSet,
                    name: "pull"
                },
            ]
        );
        assert!(uses.dropped.is_empty());
    }

    #[test]
    fn an_update_names_the_sets_it_keeps_again_and_drops_those_it_no_longer_names() {
        let before = with_sets(Some("env"), Some("pull"));
        let after = with_sets(Some("env-2"), Some("pull"));
        let uses = SetUse::between(Some(&before), Some(&after));
        let named: Vec<&str> = uses.named.iter().map(|set| set.name).collect();
        assert_eq!(named, ["env-2", "pull"], "a kept set is checked again");
        assert_eq!(uses.dropped, ["env"]);
    }

    #[test]
    fn a_delete_drops_every_set_and_names_none() {
        let before = with_sets(Some("env"), None);
        let uses = SetUse::between(Some(&before), None);
        assert!(uses.named.is_empty());
        assert_eq!(uses.dropped, ["env"]);
        assert!(uses.without_dropped(&["env"]).is_empty());
        assert!(SetUse::between(Some(&with_sets(None, None)), None).is_empty());
    }

    #[test]
    fn each_member_names_a_set_of_its_own_type() {
        assert_eq!(SetMember::SecretSet.set_type(), SetType::Secret);
        assert_eq!(
            SetMember::ImagePullSecretSet.set_type(),
            SetType::ImagePullSecret
        );
        assert_eq!(SetMember::ImagePullSecretSet.field(), "imagePullSecretSet");
    }
}
