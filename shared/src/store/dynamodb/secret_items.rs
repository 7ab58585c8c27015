//! The items of secret sets in AgentsTable, in the account's partition (`NS#{namespace}`):
//! - set:     `SECRETSET#{name}`: its type, host, keys (name, value id, size, updatedAt; never a
//!   value) and the agents that use it; every write conditioned on its `version`.
//! - value:   `SECRETVALUE#{set}#{key}#{valueId}`: one sealed value (the data key under the KMS
//!   key, the nonce, the AES-256-GCM ciphertext), reachable only through the set pointing at it.
//! - counter: `SECRETSETS`: how many sets the account holds (at most 200), moved in the same
//!   transaction as a set is made or deleted.
//!
//! `kind` keeps them out of what the stream publisher publishes (agents, deployments, sessions).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::items::namespace_pk;
use crate::secrets::SetType;
use crate::secrets::seal::Sealed;
use crate::secrets::store::{KeyEntry, SecretSetRecord, StoredValue};

pub const SECRET_SET_KIND: &str = "secretSet";
pub const SECRET_VALUE_KIND: &str = "secretValue";
pub const SET_COUNTER_SK: &str = "SECRETSETS";

pub fn secret_set_sk(name: &str) -> String {
    format!("SECRETSET#{name}")
}

pub fn secret_value_sk(set: &str, key: &str, value_id: &str) -> String {
    format!("SECRETVALUE#{set}#{key}#{value_id}")
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyEntryItem {
    pub value_id: String,
    pub bytes: u64,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretSetItem {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub namespace: String,
    pub set_name: String,
    pub set_type: SetType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub keys: BTreeMap<String, KeyEntryItem>,
    /// A string set (agents' writes `ADD` and `DELETE` its members), left out when empty (as
    /// DynamoDB removes an emptied set), so that "unused" is `attribute_not_exists(usedBy)`.
    #[serde(
        default,
        skip_serializing_if = "BTreeSet::is_empty",
        with = "serde_dynamo::string_set"
    )]
    pub used_by: BTreeSet<String>,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&SecretSetRecord> for SecretSetItem {
    fn from(set: &SecretSetRecord) -> Self {
        SecretSetItem {
            pk: namespace_pk(&set.namespace),
            sk: secret_set_sk(&set.name),
            kind: SECRET_SET_KIND.to_owned(),
            namespace: set.namespace.clone(),
            set_name: set.name.clone(),
            set_type: set.set_type,
            host: set.host.clone(),
            keys: set
                .keys
                .iter()
                .map(|(key, entry)| {
                    let item = KeyEntryItem {
                        value_id: entry.value_id.clone(),
                        bytes: entry.bytes as u64,
                        updated_at: entry.updated_at.clone(),
                    };
                    (key.clone(), item)
                })
                .collect(),
            used_by: set.used_by.clone(),
            version: set.version,
            created_at: set.created_at.clone(),
            updated_at: set.updated_at.clone(),
        }
    }
}

impl From<SecretSetItem> for SecretSetRecord {
    fn from(item: SecretSetItem) -> Self {
        SecretSetRecord {
            namespace: item.namespace,
            name: item.set_name,
            set_type: item.set_type,
            host: item.host,
            keys: item
                .keys
                .into_iter()
                .map(|(key, entry)| {
                    let entry = KeyEntry {
                        value_id: entry.value_id,
                        bytes: entry.bytes as usize,
                        updated_at: entry.updated_at,
                    };
                    (key, entry)
                })
                .collect(),
            used_by: item.used_by,
            version: item.version,
            created_at: item.created_at,
            updated_at: item.updated_at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretValueItem {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub namespace: String,
    pub set_name: String,
    pub secret_key: String,
    pub value_id: String,
    #[serde(with = "serde_bytes")]
    pub encrypted_key: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub nonce: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub ciphertext: Vec<u8>,
}

impl SecretValueItem {
    pub fn new(namespace: &str, set: &str, value: &StoredValue) -> Self {
        SecretValueItem {
            pk: namespace_pk(namespace),
            sk: secret_value_sk(set, &value.key, &value.value_id),
            kind: SECRET_VALUE_KIND.to_owned(),
            namespace: namespace.to_owned(),
            set_name: set.to_owned(),
            secret_key: value.key.clone(),
            value_id: value.value_id.clone(),
            encrypted_key: value.sealed.encrypted_key.clone(),
            nonce: value.sealed.nonce.to_vec(),
            ciphertext: value.sealed.ciphertext.clone(),
        }
    }

    /// The stored value; `None` when its nonce is not GCM's 96 bits.
    pub fn into_value(self) -> Option<StoredValue> {
        Some(StoredValue {
            key: self.secret_key,
            value_id: self.value_id,
            sealed: Sealed {
                encrypted_key: self.encrypted_key,
                nonce: self.nonce.try_into().ok()?,
                ciphertext: self.ciphertext,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_and_a_value_round_trip_through_their_items() {
        let set = SecretSetRecord {
            namespace: "ns".into(),
            name: "voice".into(),
            set_type: SetType::Secret,
            host: None,
            keys: BTreeMap::from([(
                "A".to_owned(),
                KeyEntry {
                    value_id: "v1".into(),
                    bytes: 3,
                    updated_at: "2026-11-24T10:00:00.000Z".into(),
                },
            )]),
            used_by: BTreeSet::from(["bot".to_owned()]),
            version: 4,
            created_at: "2026-11-24T09:00:00.000Z".into(),
            updated_at: "2026-11-24T10:00:00.000Z".into(),
        };
        let item: serde_dynamo::Item = serde_dynamo::to_item(SecretSetItem::from(&set)).unwrap();
        let back: SecretSetItem = serde_dynamo::from_item(item).unwrap();
        assert_eq!(SecretSetRecord::from(back), set);

        let value = StoredValue {
            key: "A".into(),
            value_id: "v1".into(),
            sealed: Sealed {
                encrypted_key: vec![1, 2],
                nonce: [3; 12],
                ciphertext: vec![4; 19],
            },
        };
        let item: serde_dynamo::Item =
            serde_dynamo::to_item(SecretValueItem::new("ns", "voice", &value)).unwrap();
        assert!(matches!(
            item["ciphertext"],
            serde_dynamo::AttributeValue::B(_)
        ));
        let back: SecretValueItem = serde_dynamo::from_item(item).unwrap();
        assert_eq!(back.into_value(), Some(value));
    }

    #[test]
    fn an_unused_set_has_no_used_by_attribute() {
        let mut item = SecretSetItem::from(&SecretSetRecord {
            namespace: "ns".into(),
            name: "voice".into(),
            set_type: SetType::Secret,
            host: None,
            keys: BTreeMap::new(),
            used_by: BTreeSet::new(),
            version: 1,
            created_at: String::new(),
            updated_at: String::new(),
        });
        let written: serde_dynamo::Item = serde_dynamo::to_item(item.clone()).unwrap();
        assert!(!written.contains_key("usedBy"));
        item.used_by.insert("bot".into());
        let written: serde_dynamo::Item = serde_dynamo::to_item(item).unwrap();
        assert_eq!(
            written["usedBy"],
            serde_dynamo::AttributeValue::Ss(vec!["bot".into()]),
            "a string set, which ADD and DELETE change"
        );
    }
}
