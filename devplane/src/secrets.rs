//! What a deployment's containers would receive of its secret sets: a cluster's controller reads
//! each set its manifest names (`envFromSecretNames`, `imagePullSecretNames`) and decrypts it, as
//! docs/secrets.md tells a data plane to, with `shared::secrets::opening`. The simulation runs
//! no container, so it logs the key names it got and drops the values; a set it cannot open is
//! logged, and the deployment is still reported (locally, moto keeps its KMS key in memory: a
//! set sealed in an earlier `make run` no longer opens until it is PUT again).

use serde_json::Value;
use shared::secrets::opening::{OpenedSet, open_set};
use shared::store::dynamodb::DynamoStore;
use shared::store::kms::KmsKeyOpener;

/// The stores a data plane reads sets from: the agents table, and KMS with kms:Decrypt.
pub struct SetReader {
    pub store: DynamoStore,
    pub keys: KmsKeyOpener,
}

/// The sets a `Deployment Requested` event's manifest names, in the order a pod spec lists them.
pub fn named_sets(event: &Value) -> Vec<String> {
    let manifest = shared::stream_events::untyped(&event["detail"]["manifest"]);
    ["envFromSecretNames", "imagePullSecretNames"]
        .iter()
        .flat_map(|list| {
            manifest["spec"][list]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect()
}

/// One line saying what a set gave: its key names (or registry), never a value.
pub fn describe(set: &OpenedSet) -> String {
    let keys: Vec<&str> = set.values.iter().map(|value| value.key.as_str()).collect();
    match &set.host {
        Some(host) => format!("image pull secret {} for {host}", set.name),
        None => format!("secret set {}: keys {}", set.name, keys.join(", ")),
    }
}

impl SetReader {
    /// Reads and opens every set the event names, and says what each gave.
    pub async fn receive(&self, event: &Value) -> Vec<String> {
        let detail = &event["detail"];
        let namespace = detail["namespace"].as_str().unwrap_or_default();
        let deployment = format!(
            "{namespace}/{} deployment {}",
            detail["agentName"].as_str().unwrap_or_default(),
            detail["deploymentId"].as_str().unwrap_or_default()
        );
        let mut lines = Vec::new();
        for name in named_sets(event) {
            lines.push(
                match open_set(&self.store, &self.keys, namespace, &name).await {
                    Ok(set) => format!("{deployment} receives {} (values dropped)", describe(&set)),
                    Err(error) => format!("{deployment} cannot receive set {name}: {error}"),
                },
            );
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sets_of_a_manifest_are_read_from_its_typed_json() {
        let event = json!({"detail": {"manifest": {"M": {"spec": {"M": {
            "envFromSecretNames": {"L": [{"S": "env"}]},
            "imagePullSecretNames": {"L": [{"S": "pull"}]}
        }}}}}});
        assert_eq!(named_sets(&event), ["env", "pull"]);
        let none = json!({"detail": {"manifest": {"M": {"spec": {"M": {
            "envFromSecretNames": {"L": []}, "imagePullSecretNames": {"L": []}
        }}}}}});
        assert!(named_sets(&none).is_empty());
    }
}
