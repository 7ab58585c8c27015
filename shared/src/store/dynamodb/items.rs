//! Every item the adapter writes, and its mapping to and from domain types (serde_dynamo).
//!
//! AgentsTable (pk, sk), one partition per account (`NS#{namespace}`):
//! - agent:       `AGENT#{name}`. Writing it with `attribute_not_exists` makes names unique in an
//!   account; every later write is conditioned on its `version`.
//! - deployment:  `DEPLOYMENT#{serviceId}#{deploymentId}`: the history, one item a deployment,
//!   keyed by the service so that a later agent of the same name never meets them.
//! - idempotency: `IDEMPOTENCY#{sha256 hex of the key}`, the first answer to an
//!   `Idempotency-Key`, expiring (TTL `expiresAt`) 24 hours after it was written.
//!
//! `kind` tells agents from deployments in the table's stream: the stream publisher
//! (shared::stream_events) selects new deployments (`Deployment Requested`) and removed agents
//! (`Agent Deleted`) by it, and reads
//! `namespace`, `agentName`, `serviceId` and `deploymentId` from the top level of the image.
//!
//! AccountsTable (pk, sk):
//! - account:         `ACCOUNT#{accountId}` / `ACCOUNT`
//! - namespace claim: `NAMESPACE#{namespace}` / `NAMESPACE` (namespaces are unique)
//! - key:             `KEY#{sha256 hex}` / `KEY` (what the key check reads: one GetItem)
//! - account's key:   `ACCOUNT#{accountId}` / `KEY#{keyId}` (to list and revoke by key id, with
//!   the key's name and hint)
//! - person:          `PERSON#{sub}` / `PERSON` (what the token check reads: one GetItem)
//! - account's person: `ACCOUNT#{accountId}` / `PERSON#{sub}` (to list an account's people)
//!
//! The account item counts its live keys (`liveKeys`): each key's write adds one under the
//! condition that fewer than the limit are live, its revocation takes one away.

use serde::{Deserialize, Serialize};

use crate::account::KeySummary;
use crate::agent::{
    AgentConfig, AgentRecord, Deployment, DeploymentRecord, DeploymentStatus, Serving,
};
use crate::auth::{KeyHash, KeyKind, KeyRecord, PersonRecord, Principal};
use crate::idempotency::IdempotencyRecord;

pub const AGENT_KIND: &str = "agent";
pub const DEPLOYMENT_KIND: &str = "deployment";

pub fn namespace_pk(namespace: &str) -> String {
    format!("NS#{namespace}")
}

pub fn agent_sk(name: &str) -> String {
    format!("AGENT#{name}")
}

/// The prefix of a service's deployments.
pub fn deployments_prefix(service_id: &str) -> String {
    format!("DEPLOYMENT#{service_id}#")
}

pub fn deployment_sk(service_id: &str, deployment_id: &str) -> String {
    format!("{}{deployment_id}", deployments_prefix(service_id))
}

pub const IDEMPOTENCY_PREFIX: &str = "IDEMPOTENCY#";

pub fn account_pk(account_id: &str) -> String {
    format!("ACCOUNT#{account_id}")
}

/// The sort key of an account's own item.
pub const ACCOUNT_SK: &str = "ACCOUNT";

/// The sort key of the account's handle on its key `key_id` (a prefix with an empty id).
pub fn account_key_sk(key_id: &str) -> String {
    format!("KEY#{key_id}")
}

pub fn namespace_claim_pk(namespace: &str) -> String {
    format!("NAMESPACE#{namespace}")
}

pub fn key_pk(hash: &KeyHash) -> String {
    format!("KEY#{}", hash.as_str())
}

/// The sort key of a key's own item.
pub const KEY_SK: &str = "KEY";

pub fn person_pk(person_id: &str) -> String {
    format!("PERSON#{person_id}")
}

/// The sort key of a person's own item.
pub const PERSON_SK: &str = "PERSON";

/// The sort key of the account's handle on its person `person_id` (a prefix with an empty id).
pub fn account_person_sk(person_id: &str) -> String {
    format!("PERSON#{person_id}")
}

/// An agent, with its active deployment (so that reading an agent is one GetItem).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentItem {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub account_id: String,
    pub namespace: String,
    pub agent_name: String,
    pub service_id: String,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    pub active: DeploymentRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<Serving>,
    /// Sessions own it ([`AgentRecord::active_sessions`]): written by session starts and ends
    /// (ADD), never by a write of the agent; absent until the first session.
    #[serde(default)]
    pub active_sessions: u32,
}

/// The attribute sessions own on an agent's item.
pub const ACTIVE_SESSIONS: &str = "activeSessions";

impl From<&AgentRecord> for AgentItem {
    fn from(agent: &AgentRecord) -> Self {
        AgentItem {
            pk: namespace_pk(&agent.owner.namespace),
            sk: agent_sk(&agent.name),
            kind: AGENT_KIND.to_owned(),
            account_id: agent.owner.account_id.clone(),
            namespace: agent.owner.namespace.clone(),
            agent_name: agent.name.clone(),
            service_id: agent.service_id.clone(),
            version: agent.version,
            created_at: agent.created_at.clone(),
            updated_at: agent.updated_at.clone(),
            active: agent.active.clone(),
            serving: agent.serving.clone(),
            active_sessions: agent.active_sessions,
        }
    }
}

impl From<AgentItem> for AgentRecord {
    fn from(item: AgentItem) -> Self {
        AgentRecord {
            owner: Principal {
                account_id: item.account_id,
                namespace: item.namespace,
            },
            name: item.agent_name,
            service_id: item.service_id,
            version: item.version,
            created_at: item.created_at,
            updated_at: item.updated_at,
            active: item.active,
            serving: item.serving,
            active_sessions: item.active_sessions,
        }
    }
}

/// One deployment of the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentItem {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub namespace: String,
    pub agent_name: String,
    pub service_id: String,
    pub deployment_id: String,
    pub deployment: Deployment,
    pub config: AgentConfig,
    pub status: DeploymentStatus,
}

impl DeploymentItem {
    pub fn new(agent: &AgentRecord, record: &DeploymentRecord) -> Self {
        DeploymentItem {
            pk: namespace_pk(&agent.owner.namespace),
            sk: deployment_sk(&agent.service_id, &record.deployment.id),
            kind: DEPLOYMENT_KIND.to_owned(),
            namespace: agent.owner.namespace.clone(),
            agent_name: agent.name.clone(),
            service_id: agent.service_id.clone(),
            deployment_id: record.deployment.id.clone(),
            deployment: record.deployment.clone(),
            config: record.config.clone(),
            status: record.status.clone(),
        }
    }
}

impl From<DeploymentItem> for DeploymentRecord {
    fn from(item: DeploymentItem) -> Self {
        DeploymentRecord {
            deployment: item.deployment,
            config: item.config,
            status: item.status,
        }
    }
}

/// The first answer to an `Idempotency-Key` of an account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotencyItem {
    pub pk: String,
    pub sk: String,
    pub fingerprint: String,
    pub status: u16,
    pub body: String,
    pub created_at: String,
    /// Unix seconds; the table's TTL attribute.
    pub expires_at: i64,
    /// Records written before agents could be deleted have none.
    #[serde(default)]
    pub agent_name: String,
}

impl IdempotencyItem {
    pub fn new(namespace: &str, record: &IdempotencyRecord) -> Self {
        IdempotencyItem {
            pk: namespace_pk(namespace),
            sk: format!("{IDEMPOTENCY_PREFIX}{}", record.key_digest),
            fingerprint: record.fingerprint.clone(),
            status: record.status,
            body: record.body.clone(),
            created_at: record.created_at.clone(),
            expires_at: record.expires_at,
            agent_name: record.agent.clone(),
        }
    }
}

impl From<IdempotencyItem> for IdempotencyRecord {
    fn from(item: IdempotencyItem) -> Self {
        IdempotencyRecord {
            key_digest: item
                .sk
                .strip_prefix(IDEMPOTENCY_PREFIX)
                .unwrap_or(&item.sk)
                .to_owned(),
            fingerprint: item.fingerprint,
            status: item.status,
            body: item.body,
            created_at: item.created_at,
            expires_at: item.expires_at,
            agent: item.agent_name,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountItem {
    pub pk: String,
    pub sk: String,
    pub account_id: String,
    pub namespace: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceItem {
    pub pk: String,
    pub sk: String,
    pub account_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyItem {
    pub pk: String,
    pub sk: String,
    pub key_id: String,
    /// Absent on keys stored before keys had kinds: private.
    #[serde(default)]
    pub kind: KeyKind,
    pub account_id: String,
    pub namespace: String,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

impl From<KeyItem> for KeyRecord {
    fn from(item: KeyItem) -> Self {
        KeyRecord {
            key_id: item.key_id,
            kind: item.kind,
            account_id: item.account_id,
            namespace: item.namespace,
            created_at: item.created_at,
            revoked_at: item.revoked_at,
        }
    }
}

/// The account's handle on one of its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountKeyItem {
    pub pk: String,
    pub sk: String,
    pub key_id: String,
    #[serde(default)]
    pub kind: KeyKind,
    pub key_hash: String,
    /// Absent on handles kept before keys had names: `""`.
    #[serde(default)]
    pub name: String,
    /// Absent on handles kept before keys had names, which `liveKeys` does not count either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

impl From<AccountKeyItem> for KeySummary {
    fn from(handle: AccountKeyItem) -> Self {
        KeySummary {
            key_id: handle.key_id,
            kind: handle.kind,
            name: handle.name,
            hint: handle
                .hint
                .unwrap_or_else(|| handle.kind.prefix().to_owned()),
            created_at: handle.created_at,
            revoked_at: handle.revoked_at,
        }
    }
}

/// A person, as the token check reads them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersonItem {
    pub pk: String,
    pub sk: String,
    pub person_id: String,
    pub account_id: String,
    pub namespace: String,
    pub email: String,
    pub created_at: String,
}

impl From<PersonItem> for PersonRecord {
    fn from(item: PersonItem) -> Self {
        PersonRecord {
            person_id: item.person_id,
            account_id: item.account_id,
            namespace: item.namespace,
            email: item.email,
            created_at: item.created_at,
        }
    }
}

/// The account's handle on one of its people.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountPersonItem {
    pub pk: String,
    pub sk: String,
    pub person_id: String,
    pub email: String,
    pub created_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{ConfigChanges, DeploymentState};
    use crate::auth::ApiKey;
    use aws_sdk_dynamodb::types::AttributeValue;
    use std::collections::HashMap;

    type Item = HashMap<String, AttributeValue>;

    fn owner() -> Principal {
        Principal {
            account_id: "acme".into(),
            namespace: "tiny-ferret-maroon-123".into(),
        }
    }

    fn agent() -> AgentRecord {
        let (name, config) = ConfigChanges::from_json(serde_json::json!({
            "serviceName": "my-agent",
            "image": "ghcr.io/acme/agent:1.0",
            "secretSet": "env",
            "noiseViva": {"audioFilter": "tel"},
            "autoScaling": {"minAgents": 1, "maxAgents": 4}
        }))
        .unwrap()
        .into_new_agent()
        .unwrap();
        AgentRecord::new(
            &owner(),
            &name,
            config,
            crate::manifest::DeploymentMode::Simulated,
            "2026-11-22T10:00:00.000Z",
        )
    }

    fn s(value: &str) -> AttributeValue {
        AttributeValue::S(value.to_owned())
    }

    #[test]
    fn agent_items_round_trip_with_their_active_and_serving_deployments() {
        let mut agent = agent();
        agent.active.status.state = DeploymentState::Ready;
        agent.active.status.observed_at_nanos = Some(1_795_000_000_000_000_001);
        let rolled = agent.deploy(
            agent.config().clone(),
            crate::manifest::DeploymentMode::Simulated,
            "2026-11-22T11:00:00.000Z",
        );
        let item: Item = serde_dynamo::to_item(AgentItem::from(&rolled)).unwrap();
        assert_eq!(item["pk"], s("NS#tiny-ferret-maroon-123"));
        assert_eq!(item["sk"], s("AGENT#my-agent"));
        assert_eq!(item["kind"], s("agent"));
        assert_eq!(item["agentName"], s("my-agent"));
        assert_eq!(item["version"], AttributeValue::N("2".into()));
        let back: AgentItem = serde_dynamo::from_item(item).unwrap();
        assert_eq!(AgentRecord::from(back), rolled);
    }

    #[test]
    fn deployment_items_carry_what_the_publisher_reads_at_the_top_level() {
        let agent = agent();
        let item: Item = serde_dynamo::to_item(DeploymentItem::new(&agent, &agent.active)).unwrap();
        assert_eq!(
            item["sk"],
            s(&format!(
                "DEPLOYMENT#{}#{}",
                agent.service_id, agent.active.deployment.id
            ))
        );
        for (name, value) in [
            ("kind", "deployment"),
            ("namespace", "tiny-ferret-maroon-123"),
            ("agentName", "my-agent"),
            ("serviceId", agent.service_id.as_str()),
            ("deploymentId", agent.active.deployment.id.as_str()),
        ] {
            assert_eq!(item[name], s(value), "{name}");
        }
        let manifest = item["deployment"].as_m().unwrap()["manifest"]
            .as_m()
            .unwrap();
        assert_eq!(manifest["kind"], s("AgentService"));
        let back: DeploymentItem = serde_dynamo::from_item(item).unwrap();
        assert_eq!(DeploymentRecord::from(back), agent.active);
    }

    #[test]
    fn optional_members_are_omitted_not_stored_as_null() {
        let mut agent = agent();
        agent.active.config.noise_filter = None;
        agent.active.config.secret_set = None;
        let item: Item = serde_dynamo::to_item(AgentItem::from(&agent)).unwrap();
        assert!(!item.contains_key("serving"));
        let config = item["active"].as_m().unwrap()["config"].as_m().unwrap();
        assert!(!config.contains_key("audioFilter"));
        assert!(!config.contains_key("secretSet"));
        let back: AgentItem = serde_dynamo::from_item(item).unwrap();
        assert_eq!(back.active.config.noise_filter, None);
    }

    #[test]
    fn idempotency_items_round_trip_and_old_ones_read_without_an_agent() {
        let record = IdempotencyRecord {
            key_digest: "ab".repeat(32),
            fingerprint: "f".into(),
            status: 201,
            body: "{}".into(),
            created_at: "2026-11-22T10:00:00.000Z".into(),
            expires_at: 1_795_000_000,
            agent: "my-agent".into(),
        };
        let item: Item = serde_dynamo::to_item(IdempotencyItem::new("ns", &record)).unwrap();
        let back: IdempotencyItem = serde_dynamo::from_item(item.clone()).unwrap();
        assert_eq!(IdempotencyRecord::from(back), record);
        let mut old = item;
        old.remove("agentName");
        let back: IdempotencyItem = serde_dynamo::from_item(old).unwrap();
        assert_eq!(back.agent_name, "");
    }

    #[test]
    fn key_items_round_trip_without_the_key() {
        let key = ApiKey::generate_of(KeyKind::Public);
        let hash = key.hash();
        let item = KeyItem {
            pk: key_pk(&hash),
            sk: "KEY".into(),
            key_id: hash.key_id().into(),
            kind: KeyKind::Public,
            account_id: "acme".into(),
            namespace: "ns".into(),
            created_at: "2026-11-22T10:00:00.000Z".into(),
            revoked_at: Some("2026-11-22T11:00:00.000Z".into()),
        };
        let stored: Item = serde_dynamo::to_item(&item).unwrap();
        let text = format!("{stored:?}");
        assert!(
            !text.contains(key.expose()),
            "the key itself is never stored"
        );
        assert!(text.contains(hash.as_str()));
        let back: KeyItem = serde_dynamo::from_item(stored).unwrap();
        assert_eq!(back, item);
        let record = KeyRecord::from(back);
        assert_eq!(
            record.revoked_at.as_deref(),
            Some("2026-11-22T11:00:00.000Z")
        );
        assert_eq!(record.kind, KeyKind::Public);
        assert!(text.contains("public"));
    }

    #[test]
    fn keys_stored_before_keys_had_kinds_are_private() {
        let key = ApiKey::generate();
        let hash = key.hash();
        let mut stored: Item = serde_dynamo::to_item(KeyItem {
            pk: key_pk(&hash),
            sk: "KEY".into(),
            key_id: hash.key_id().into(),
            kind: KeyKind::Private,
            account_id: "acme".into(),
            namespace: "ns".into(),
            created_at: "2026-11-22T10:00:00.000Z".into(),
            revoked_at: None,
        })
        .unwrap();
        stored.remove("kind").unwrap();
        let back: KeyItem = serde_dynamo::from_item(stored).unwrap();
        assert_eq!(KeyRecord::from(back).kind, KeyKind::Private);
    }

    #[test]
    fn key_handles_kept_before_keys_had_names_list_with_an_empty_name_and_the_prefix() {
        let mut stored: Item = serde_dynamo::to_item(AccountKeyItem {
            pk: account_pk("acme"),
            sk: account_key_sk("0123456789ab"),
            key_id: "0123456789ab".into(),
            kind: KeyKind::Public,
            key_hash: "ab".repeat(32),
            name: "web".into(),
            hint: Some("ahp_Ab3d".into()),
            created_at: "2026-11-22T10:00:00.000Z".into(),
            revoked_at: None,
        })
        .unwrap();
        let summary =
            KeySummary::from(serde_dynamo::from_item::<_, AccountKeyItem>(stored.clone()).unwrap());
        assert_eq!(
            (summary.name.as_str(), summary.hint.as_str()),
            ("web", "ahp_Ab3d")
        );
        stored.remove("name");
        stored.remove("hint");
        let old: AccountKeyItem = serde_dynamo::from_item(stored).unwrap();
        assert_eq!(old.hint, None, "an old handle is told by its missing hint");
        let summary = KeySummary::from(old);
        assert_eq!((summary.name.as_str(), summary.hint.as_str()), ("", "ahp_"));
    }
}
