//! An in-memory store for fast unit tests of handlers. It keeps the same promises as the
//! DynamoDB adapter (names unique per namespace, nothing half-written); the integration tests
//! check the real adapter against DynamoDB Local.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use super::{AgentStore, CreateOutcome, KeyStore, LogStore, StoreError};
use crate::agent::Agent;
use crate::auth::{ApiKey, KeyHash, KeyRecord, Principal};
use crate::idempotency::IdempotencyRecord;
use crate::logs::{LogFilter, LogLine, Order, Scan, ScanLimits, StoredLine, matches_query};

/// One agent's lines: position → (line, expires at).
type AgentLog = BTreeMap<String, (LogLine, i64)>;

#[derive(Debug, Default)]
pub struct MemoryStore {
    agents: Mutex<HashMap<(String, String), Agent>>,
    /// (namespace, key digest) → record; guarded by the agents' lock, as one transaction.
    idempotency: Mutex<HashMap<(String, String), IdempotencyRecord>>,
    keys: Mutex<HashMap<KeyHash, KeyRecord>>,
    logs: Mutex<HashMap<(String, String), AgentLog>>,
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

    pub fn idempotency_record_count(&self) -> usize {
        lock(&self.idempotency).len()
    }
}

impl AgentStore for MemoryStore {
    async fn create_agent(
        &self,
        owner: &Principal,
        agent: &Agent,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<CreateOutcome, StoreError> {
        let mut agents = lock(&self.agents);
        let mut records = lock(&self.idempotency);
        if let Some(record) = idempotency {
            let key = (owner.namespace.clone(), record.key_digest.clone());
            let live = |found: &&IdempotencyRecord| found.is_live(record.written_at());
            if let Some(found) = records.get(&key).filter(live) {
                return Ok(CreateOutcome::KeyUsed(found.clone()));
            }
        }
        let key = (owner.namespace.clone(), agent.name.clone());
        if agents.contains_key(&key) {
            return Ok(CreateOutcome::NameTaken);
        }
        agents.insert(key, agent.clone());
        if let Some(record) = idempotency {
            records.insert(
                (owner.namespace.clone(), record.key_digest.clone()),
                record.clone(),
            );
        }
        Ok(CreateOutcome::Created)
    }
}

impl KeyStore for MemoryStore {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        Ok(lock(&self.keys).get(hash).cloned())
    }
}

impl LogStore for MemoryStore {
    async fn agent_exists(&self, namespace: &str, agent: &str) -> Result<bool, StoreError> {
        Ok(self.agent(namespace, agent).is_some())
    }

    async fn put_lines(&self, lines: &[LogLine], retention_days: u32) -> Result<(), StoreError> {
        let mut logs = lock(&self.logs);
        for line in lines {
            let expires = line.expires_at(retention_days);
            logs.entry((line.namespace.clone(), line.agent.clone()))
                .or_default()
                .insert(line.position(), (line.clone(), expires));
        }
        Ok(())
    }

    async fn scan(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        limits: &ScanLimits,
    ) -> Result<Scan, StoreError> {
        let logs = lock(&self.logs);
        let mut lines: Vec<&(LogLine, i64)> = logs
            .get(&(filter.namespace.clone(), filter.agent.clone()))
            .map(|lines| lines.values().collect())
            .unwrap_or_default();
        if filter.order == Order::Desc {
            lines.reverse();
        }
        let mut scan = Scan::default();
        for (line, expires) in lines {
            let position = line.position();
            // Both ends inclusive, as DynamoDB's BETWEEN.
            let in_range = position >= filter.from_position && position <= filter.to_position;
            let after_cursor = after.is_none_or(|after| match filter.order {
                Order::Asc => position.as_str() > after,
                Order::Desc => position.as_str() < after,
            });
            let selected = filter
                .deployment_id
                .as_ref()
                .is_none_or(|d| *d == line.deployment_id)
                && filter
                    .session_id
                    .as_ref()
                    .is_none_or(|s| Some(s) == line.session_id.as_ref());
            if !(in_range && after_cursor && selected && *expires > filter.now) {
                continue;
            }
            if scan.items_read == limits.read_budget {
                return Ok(scan);
            }
            scan.items_read += 1;
            scan.last_read = Some(position.clone());
            if filter
                .query
                .as_deref()
                .is_some_and(|q| !matches_query(&line.text, q))
            {
                continue;
            }
            if limits.keep.contains(&scan.matches) {
                scan.kept.push(StoredLine {
                    position,
                    text: line.text.clone(),
                    deployment_id: line.deployment_id.clone(),
                    session_id: line.session_id.clone(),
                });
            }
            scan.matches += 1;
            if scan.matches >= limits.stop_after_matches {
                return Ok(scan);
            }
        }
        scan.exhausted = true;
        Ok(scan)
    }

    async fn count(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        max_reads: usize,
    ) -> Result<(usize, bool, usize), StoreError> {
        let limits = ScanLimits {
            keep: 0..0,
            stop_after_matches: usize::MAX,
            read_budget: max_reads,
        };
        let unfiltered = LogFilter {
            query: None,
            ..filter.clone()
        };
        let scan = self.scan(&unfiltered, after, &limits).await?;
        Ok((scan.matches, scan.exhausted, scan.items_read))
    }
}
