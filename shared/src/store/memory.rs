//! An in-memory store for fast unit tests of handlers. It keeps the same promises as the
//! DynamoDB adapter (names unique per namespace, nothing half-written); the integration tests
//! check the real adapter against DynamoDB Local.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::{AgentStore, CreateOutcome, KeyStore, StoreError};
use crate::agent::Agent;
use crate::auth::{ApiKey, KeyHash, KeyRecord, Principal};

#[derive(Debug, Default)]
pub struct MemoryStore {
    agents: Mutex<HashMap<(String, String), Agent>>,
    keys: Mutex<HashMap<KeyHash, KeyRecord>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock must not hide the next failure.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl MemoryStore {
    /// Issues a key for `principal` and returns it.
    pub fn issue_key(&self, principal: &Principal) -> ApiKey {
        let key = ApiKey::generate();
        let hash = key.hash();
        lock(&self.keys).insert(
            hash.clone(),
            KeyRecord {
                key_id: hash.key_id().to_owned(),
                account_id: principal.account_id.clone(),
                namespace: principal.namespace.clone(),
                created_at: "2026-01-01T00:00:00.000Z".to_owned(),
                revoked_at: None,
            },
        );
        key
    }

    pub fn revoke(&self, key: &ApiKey) {
        if let Some(record) = lock(&self.keys).get_mut(&key.hash()) {
            record.revoked_at = Some("2026-01-02T00:00:00.000Z".to_owned());
        }
    }

    pub fn agent(&self, namespace: &str, name: &str) -> Option<Agent> {
        lock(&self.agents)
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    pub fn agent_count(&self) -> usize {
        lock(&self.agents).len()
    }
}

impl AgentStore for MemoryStore {
    async fn create_agent(
        &self,
        owner: &Principal,
        agent: &Agent,
    ) -> Result<CreateOutcome, StoreError> {
        let mut agents = lock(&self.agents);
        let key = (owner.namespace.clone(), agent.name.clone());
        if agents.contains_key(&key) {
            return Ok(CreateOutcome::NameTaken);
        }
        agents.insert(key, agent.clone());
        Ok(CreateOutcome::Created)
    }
}

impl KeyStore for MemoryStore {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        Ok(lock(&self.keys).get(hash).cloned())
    }
}
