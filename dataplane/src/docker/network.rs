//! One bridge network per namespace (`ah-<stack>-<namespace>`), made with its first replica:
//! replicas of different accounts share no network, and inter-container traffic is off on it
//! (`enable_icc=false`), so a replica reaches no other replica, its own account's included.
//! The host (the data plane) reaches each at its address on the bridge.
//!
//! Each bridge's interface is named [`BRIDGE_PREFIX`]… ([`bridge_name`]), so that the rules a
//! stack installs (scripts/stack.sh, `stack_firewall`) can drop every replica's traffic to the
//! host itself and to link-local addresses, whatever the namespace: a replica reaches the
//! internet and nothing of the platform.
//!
//! Networks are not removed with their last replica: a removal would race with a replica of the
//! namespace being started, and an idle bridge costs nothing but an address range.
//! [`Networks::prune`] removes a stack's networks that no container uses (the end of a test, a
//! stack's shutdown).

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::NetworkCreateRequest;
use bollard::query_parameters::ListNetworksOptions;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use super::error::{self, Failure};
use crate::engine::EngineError;
use crate::replica::label;

/// The bridge driver's option that turns off traffic between its containers.
pub const ENABLE_ICC: &str = "com.docker.network.bridge.enable_icc";
/// The bridge driver's option that names the bridge's interface on the host.
pub const BRIDGE_NAME: &str = "com.docker.network.bridge.name";
/// What every namespace bridge's interface name begins with (`iptables -i ahb+`).
pub const BRIDGE_PREFIX: &str = "ahb";

/// The interface name of the bridge of the network `network`: the prefix and 12 hex digits of
/// the name's SHA-256, 15 characters (Linux's most).
pub fn bridge_name(network: &str) -> String {
    let digest = Sha256::digest(network.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{BRIDGE_PREFIX}{hex}")
}

/// The name of `namespace`'s network in `stack`.
pub fn network_name(stack: &str, namespace: &str) -> String {
    format!("ah-{stack}-{namespace}")
}

/// Makes the networks. Docker (API 1.41) makes a second network of the same name rather than
/// refusing it unless asked to check, and even then the check races, so this data plane makes
/// its networks one at a time; two stacks never share a name.
#[derive(Default)]
pub struct Networks {
    making: Mutex<()>,
}

impl Networks {
    /// The network of `namespace` in `stack`, made if it does not exist yet.
    pub async fn ensure(
        &self,
        docker: &Docker,
        stack: &str,
        namespace: &str,
    ) -> Result<String, EngineError> {
        let name = network_name(stack, namespace);
        let _one_at_a_time = self.making.lock().await;
        match docker.inspect_network(&name, None).await {
            Ok(_) => return Ok(name),
            Err(err) => match error::failure(err) {
                Failure::NotFound(_) => {}
                Failure::Other(err) => return Err(err),
            },
        }
        let request = NetworkCreateRequest {
            name: name.clone(),
            driver: Some("bridge".to_owned()),
            options: Some(HashMap::from([
                (ENABLE_ICC.to_owned(), "false".to_owned()),
                (BRIDGE_NAME.to_owned(), bridge_name(&name)),
            ])),
            labels: Some(HashMap::from([
                (label::STACK.to_owned(), stack.to_owned()),
                (label::NAMESPACE.to_owned(), namespace.to_owned()),
            ])),
            ..Default::default()
        };
        match docker.create_network(request).await {
            Ok(_) => {
                tracing::info!(network = %name, namespace, "made the namespace's network");
                Ok(name)
            }
            // Made meanwhile by someone else (another process on the same stack): fine.
            Err(err) if error::is_conflict(&err) => Ok(name),
            Err(err) => Err(error::failure(err).into_engine_error()),
        }
    }

    /// Removes the networks of `stack` that no container uses; one still in use is left.
    pub async fn prune(&self, docker: &Docker, stack: &str) -> Result<(), EngineError> {
        let _one_at_a_time = self.making.lock().await;
        let filters = HashMap::from([(
            "label".to_owned(),
            vec![format!("{}={stack}", label::STACK)],
        )]);
        let networks = docker
            .list_networks(Some(ListNetworksOptions {
                filters: Some(filters),
            }))
            .await
            .map_err(|err| error::failure(err).into_engine_error())?;
        for name in networks.into_iter().filter_map(|network| network.name) {
            match docker.remove_network(&name).await {
                Ok(()) => tracing::info!(network = %name, "removed the namespace's network"),
                Err(err) => match error::failure(err) {
                    Failure::NotFound(_) => {}
                    // In use (403, "has active endpoints"): kept for its replicas.
                    Failure::Other(EngineError::Refused(message)) => {
                        tracing::debug!(network = %name, %message, "network kept");
                    }
                    Failure::Other(err) => return Err(err),
                },
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bridge_is_named_with_the_prefix_the_firewall_matches_within_linuxs_fifteen_characters() {
        let name = bridge_name(&network_name("run-9000", "tiny-ferret-maroon-123"));
        assert!(name.starts_with(BRIDGE_PREFIX), "{name}");
        assert_eq!(name.len(), 15, "{name}");
        assert_ne!(name, bridge_name(&network_name("run-9000", "another")));
        assert_ne!(
            name,
            bridge_name(&network_name("run-9100", "tiny-ferret-maroon-123"))
        );
    }
}
