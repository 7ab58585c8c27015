//! What the secret set routes answer: names, types and times, never a value.

use serde::Serialize;

use super::SetType;
use super::store::SecretSetRecord;

/// Every set is ready once its write is answered (the anchor's sets propagate asynchronously).
const READY: &str = "ready";

/// The answer to a PUT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PutAnswer {
    pub status: &'static str,
    pub name: String,
    #[serde(rename = "type")]
    pub set_type: SetType,
    pub region: String,
}

/// A set in the account's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSummary {
    pub name: String,
    #[serde(rename = "type")]
    pub set_type: SetType,
    pub status: &'static str,
    pub region: String,
    pub created_at: String,
    pub updated_at: String,
}

/// `{"sets": [...], "nextCursor"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetList {
    pub sets: Vec<SetSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A key of a set, by name only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub field_name: String,
    pub updated_at: String,
}

/// One set: its keys' names (a secret set) or its registry (an image pull secret); never a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetView {
    #[serde(flatten)]
    pub summary: SetSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Vec<KeyView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl SetSummary {
    pub fn of(set: &SecretSetRecord, region: &str) -> Self {
        SetSummary {
            name: set.name.clone(),
            set_type: set.set_type,
            status: READY,
            region: region.to_owned(),
            created_at: set.created_at.clone(),
            updated_at: set.updated_at.clone(),
        }
    }
}

impl SetView {
    pub fn of(set: &SecretSetRecord, region: &str) -> Self {
        let secrets = (set.set_type == SetType::Secret).then(|| {
            set.keys
                .iter()
                .map(|(key, entry)| KeyView {
                    field_name: key.clone(),
                    updated_at: entry.updated_at.clone(),
                })
                .collect()
        });
        SetView {
            summary: SetSummary::of(set, region),
            secrets,
            host: set.host.clone(),
        }
    }
}
