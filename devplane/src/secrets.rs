//! What a deployment's containers would receive of its secret sets: a cluster's controller reads
//! each set its manifest names (`envFromSecretNames`, `imagePullSecretNames`) and decrypts it, as
//! docs/secrets.md tells a data plane to, with `shared::secrets::opening`. The simulation runs
//! no container, so it logs the key names it got and drops the values; a set it cannot open is
//! logged, and the deployment is still reported (locally, moto keeps its KMS key in memory: a
//! set sealed in an earlier `make run` no longer opens until it is PUT again).

use std::sync::Arc;

use serde_json::Value;
use shared::secrets::opening::{OpenedSet, open_set};
use shared::store::dynamodb::DynamoStore;
use shared::store::kms::KmsKeyOpener;
use shared::stream_events::DetailType;

use crate::stream::BoxError;

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

/// The secret sets reader, when a KMS is given: the agents table's client and KMS's.
pub fn set_reader(
    endpoint: &str,
    agents_table: &str,
    kms_endpoint: Option<&str>,
) -> Result<Option<SetReader>, BoxError> {
    let Some(kms_endpoint) = kms_endpoint else {
        println!("dev data plane: no KMS_ENDPOINT, secret sets are not read");
        return Ok(None);
    };
    secret_stores(endpoint, agents_table, Some(kms_endpoint)).map(Some)
}

/// Where secret sets are read from: the agents table, and KMS (AWS's own when no endpoint).
pub fn secret_stores(
    endpoint: &str,
    agents_table: &str,
    kms_endpoint: Option<&str>,
) -> Result<SetReader, BoxError> {
    let dynamodb = shared::aws::dynamodb_client(Some(endpoint))?;
    let tables = shared::config::TableNames {
        agents: agents_table.to_owned(),
        accounts: String::new(),
        logs: String::new(),
    };
    Ok(SetReader {
        store: DynamoStore::new(dynamodb, tables),
        keys: KmsKeyOpener::new(shared::aws::kms_client(kms_endpoint)?),
    })
}

/// Reads the sets each requested deployment names, beside its reports (which do not wait).
pub fn receive_sets(sets: &Arc<SetReader>, events: &[Value]) {
    for event in events {
        if DetailType::of(event) != Some(DetailType::DeploymentRequested) {
            continue;
        }
        let (sets, event) = (sets.clone(), event.clone());
        tokio::spawn(async move {
            for line in sets.receive(&event).await {
                println!("dev data plane: {line}");
            }
        });
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
