//! What every member of a data plane report is held to (contract sections 7 and 11), checked
//! before anything is read. A report past a bound is refused: dropped and counted in the status
//! function's log, never applied and never an error. Without them a name no agent can have (a
//! megabyte of namespace) reached the store as a key it cannot hold, and a number it cannot
//! store (`1e200`) failed the write: each an error Lambda retried into the failure queue.

use serde::Serialize;

use super::{is_dns_label, is_uuid};

/// The member of a report that is past its bound: the first one found, named as the report
/// names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum OutOfBounds {
    Namespace,
    Agent,
    DeploymentId,
    SessionId,
    BotStartSeconds,
    /// `dailyRoom`, `dailyToken`, `wsUrl` or `token`.
    Connection,
    CompletionStatus,
}

impl std::fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            OutOfBounds::Namespace => "namespace",
            OutOfBounds::Agent => "agent",
            OutOfBounds::DeploymentId => "deploymentId",
            OutOfBounds::SessionId => "sessionId",
            OutOfBounds::BotStartSeconds => "botStartSeconds",
            OutOfBounds::Connection => "connection",
            OutOfBounds::CompletionStatus => "completionStatus",
        };
        f.write_str(name)
    }
}

/// The first of the keys a report names that is past its bound: its agent by the contract's
/// names, and the deployment's or session's id (`id_member`, as the report names it) a UUID.
pub fn keys_out_of_bounds(
    namespace: &str,
    agent: &str,
    id: &str,
    id_member: OutOfBounds,
) -> Option<OutOfBounds> {
    check_names(namespace, agent)
        .and_then(|()| check_id(id, id_member))
        .err()
}

/// The agent a report names, as the contract's names are: the namespace a DNS label (section 2),
/// the agent's name serviceName's rule (section 3), which is the same.
fn check_names(namespace: &str, agent: &str) -> Result<(), OutOfBounds> {
    if !is_dns_label(namespace) {
        return Err(OutOfBounds::Namespace);
    }
    if !is_dns_label(agent) {
        return Err(OutOfBounds::Agent);
    }
    Ok(())
}

/// An id the control plane made (a deployment's, a session's): a UUID, or `member` is refused.
fn check_id(id: &str, member: OutOfBounds) -> Result<(), OutOfBounds> {
    if is_uuid(id) { Ok(()) } else { Err(member) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_contract_s_names_and_ids_uuids() {
        assert_eq!(check_names("tiny-ferret-maroon-123", "voice-bot"), Ok(()));
        let long = "a".repeat(64);
        let megabyte = "n".repeat(1 << 20);
        for (namespace, agent, refused) in [
            (megabyte.as_str(), "bot", OutOfBounds::Namespace),
            ("ns", long.as_str(), OutOfBounds::Agent),
            ("Ns", "bot", OutOfBounds::Namespace),
            ("ns", "bot_1", OutOfBounds::Agent),
            ("", "bot", OutOfBounds::Namespace),
        ] {
            assert_eq!(check_names(namespace, agent), Err(refused), "{agent}");
        }
        let id = "019ab7c2-4e10-7a3c-9f21-6d0e5b8c1a2f";
        assert_eq!(check_id(id, OutOfBounds::SessionId), Ok(()));
        for bad in ["s-1", "", &"0".repeat(100_000)] {
            assert_eq!(
                check_id(bad, OutOfBounds::DeploymentId),
                Err(OutOfBounds::DeploymentId)
            );
        }
    }
}
