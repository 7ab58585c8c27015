//! The promises of the agent, account (keys, their limit, people), secret set and session ports (and of agents naming sets), as
//! checks any store runs: the in-memory store and the DynamoDB adapter on DynamoDB Local both
//! (tests/tests/store_contract.rs), so the fake cannot drift from the real store. (The log port has
//! its own on both stores: tests/tests/log_order.rs.) Each check panics with what broke.

mod accounts;
mod agents;
mod deployments;
mod keys;
mod named_sets;
mod people;
mod secrets;
mod session_reads;
mod sessions;

pub use accounts::accounts;
pub use agents::{agents, every_agent};
pub use deployments::deployment_history;
pub use keys::key_limit;
pub use named_sets::agents_naming_sets;
pub use people::people;
pub use secrets::secret_sets;
pub use session_reads::session_reads;
pub use sessions::sessions;

use crate::agent::{AgentRecord, ConfigChanges};
use crate::auth::Principal;
use crate::idempotency::{IdempotencyRecord, RETENTION_SECONDS};
use crate::secrets::SetType;
use crate::secrets::store::SecretSetRecord;

pub(super) fn owner(namespace: &str) -> Principal {
    Principal {
        account_id: format!("{namespace}-account"),
        namespace: namespace.to_owned(),
    }
}

pub(super) fn agent(namespace: &str, name: &str, image: &str) -> AgentRecord {
    agent_of(
        namespace,
        serde_json::json!({"serviceName": name, "image": image}),
    )
}

/// The new agent a create's `body` makes in `namespace`.
pub(super) fn agent_of(namespace: &str, body: serde_json::Value) -> AgentRecord {
    let (name, config) = ConfigChanges::from_json(body)
        .and_then(ConfigChanges::into_new_agent)
        .expect("a valid agent");
    AgentRecord::new(
        &owner(namespace),
        &name,
        config,
        crate::manifest::DeploymentMode::Simulated,
        "2026-11-24T10:00:00.000Z",
    )
}

pub(super) fn record(key: &str, agent: &str, written_at: i64) -> IdempotencyRecord {
    IdempotencyRecord {
        key_digest: format!("{key:0>64}"),
        fingerprint: format!("body of {key}"),
        status: 201,
        body: format!("{{\"name\":\"{agent}\"}}"),
        created_at: "2026-11-24T10:00:00.000Z".to_owned(),
        expires_at: written_at + RETENTION_SECONDS,
        agent: agent.to_owned(),
    }
}

pub(super) const NOW: i64 = 1_795_000_000;

pub(super) fn secret_set(namespace: &str, name: &str, version: u64) -> SecretSetRecord {
    SecretSetRecord {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        set_type: SetType::Secret,
        host: None,
        keys: Default::default(),
        used_by: Default::default(),
        version,
        created_at: "2026-11-24T10:00:00.000Z".to_owned(),
        updated_at: "2026-11-24T10:00:00.000Z".to_owned(),
    }
}
