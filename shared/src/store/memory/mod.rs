//! An in-memory store for fast unit tests of handlers (feature `test-support`, or this crate's
//! own tests). It keeps the same promises as the DynamoDB adapter, each conditional write atomic
//! under one lock; the integration tests check the real adapter against DynamoDB Local.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use crate::account::{
    Account, AccountStore, AddedKey, AddedPerson, KeyLabel, KeySummary, MAX_LIVE_KEYS, NewAccount,
};
use crate::agent::{
    AgentPage, AgentRecord, AgentRef, AgentStore, Change, CreateOutcome, DeploymentPage,
    DeploymentRecord, SetUse, WriteOutcome,
};
use crate::auth::{ApiKey, KeyHash, KeyKind, KeyRecord, KeyStore, PersonRecord, Principal};
use crate::error::StoreError;
use crate::idempotency::IdempotencyRecord;
use crate::logs::{ChunkRequest, ChunksRead, LogChunk, LogStore, Order};

mod secrets;
mod sessions;

/// A service's chunks by key.
type ServiceLog = BTreeMap<String, LogChunk>;

/// Agents, their history and idempotency records: what one DynamoDB transaction spans.
#[derive(Debug, Default)]
struct Agents {
    /// (namespace, name) → agent.
    agents: HashMap<(String, String), AgentRecord>,
    /// (namespace, service id, deployment id) → deployment.
    deployments: HashMap<(String, String, String), DeploymentRecord>,
    /// (namespace, key digest) → record.
    idempotency: HashMap<(String, String), IdempotencyRecord>,
    /// (namespace, service id, session id) → session.
    sessions: BTreeMap<sessions::MemoryKey, crate::session::SessionRecord>,
}

impl Agents {
    /// Whether the key of `record` has a live record; which, if so.
    fn key_used(&self, namespace: &str, record: &IdempotencyRecord) -> Option<IdempotencyRecord> {
        self.idempotency
            .get(&(namespace.to_owned(), record.key_digest.clone()))
            .filter(|found| found.holds_off(record))
            .cloned()
    }

    fn keep(&mut self, namespace: &str, record: Option<&IdempotencyRecord>) {
        if let Some(record) = record {
            self.idempotency.insert(
                (namespace.to_owned(), record.key_digest.clone()),
                record.clone(),
            );
        }
    }

    /// Whether the agent is still stored at the version `agent` was read at.
    fn is_at(&self, agent: &AgentRecord) -> bool {
        self.agents
            .get(&(agent.owner.namespace.clone(), agent.name.clone()))
            .is_some_and(|current| current.is_still(&agent.service_id, agent.version))
    }

    fn keep_deployment(&mut self, agent: &AgentRecord, record: &DeploymentRecord) {
        self.deployments.insert(
            (
                agent.owner.namespace.clone(),
                agent.service_id.clone(),
                record.deployment.id.clone(),
            ),
            record.clone(),
        );
    }
}

/// Accounts, the namespaces ever claimed, each account's handles on its keys, and people.
#[derive(Debug, Default)]
struct Accounts {
    accounts: BTreeMap<String, Account>,
    claimed: HashSet<String>,
    /// (account id, key id) → the key's hash and label.
    handles: BTreeMap<(String, String), (KeyHash, KeyLabel)>,
    /// Person id → person.
    people: BTreeMap<String, PersonRecord>,
}

/// Secret sets and their sealed values (secrets.rs). Locked after `Agents` when both are: an
/// agent's write changes the users of the sets it names.
#[derive(Debug, Default)]
struct Secrets {
    /// (namespace, name) → set.
    sets: BTreeMap<(String, String), crate::secrets::store::SecretSetRecord>,
    /// (namespace, set, key, value id) → sealed value.
    values: BTreeMap<(String, String, String, String), crate::secrets::seal::Sealed>,
}

#[derive(Debug, Default)]
pub struct MemoryStore {
    agents: Mutex<Agents>,
    accounts: Mutex<Accounts>,
    keys: Mutex<HashMap<KeyHash, KeyRecord>>,
    logs: Mutex<HashMap<String, ServiceLog>>,
    secrets: Mutex<Secrets>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock must not hide the next failure.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl MemoryStore {
    /// Issues a private key for `principal` and returns it.
    pub fn issue_key(&self, principal: &Principal) -> ApiKey {
        self.issue_key_of(principal, KeyKind::Private)
    }

    /// Issues a key of `kind` for `principal` and returns it.
    pub fn issue_key_of(&self, principal: &Principal, kind: KeyKind) -> ApiKey {
        let key = ApiKey::generate_of(kind);
        let hash = key.hash();
        lock(&self.keys).insert(
            hash.clone(),
            KeyRecord {
                key_id: hash.key_id().to_owned(),
                kind,
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

    pub fn agent(&self, namespace: &str, name: &str) -> Option<AgentRecord> {
        lock(&self.agents)
            .agents
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    pub fn agent_count(&self) -> usize {
        lock(&self.agents).agents.len()
    }

    pub fn deployment_count(&self) -> usize {
        lock(&self.agents).deployments.len()
    }

    pub fn idempotency_record_count(&self) -> usize {
        lock(&self.agents).idempotency.len()
    }
}

impl AgentStore for MemoryStore {
    async fn create_agent(
        &self,
        agent: &AgentRecord,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<CreateOutcome, StoreError> {
        let mut state = lock(&self.agents);
        let namespace = &agent.owner.namespace;
        if let Some(found) = idempotency.and_then(|record| state.key_used(namespace, record)) {
            return Ok(CreateOutcome::KeyUsed(found));
        }
        let mut secrets = lock(&self.secrets);
        let uses = SetUse::between(None, Some(agent.config()));
        if let Some(member) = secrets.missing(namespace, &uses) {
            return Ok(CreateOutcome::NoSuchSet(member));
        }
        let key = (namespace.clone(), agent.name.clone());
        if state.agents.contains_key(&key) {
            return Ok(CreateOutcome::NameTaken);
        }
        secrets.apply(namespace, &agent.name, &uses);
        state.agents.insert(key, agent.clone());
        state.keep_deployment(agent, &agent.active);
        state.keep(namespace, idempotency);
        Ok(CreateOutcome::Created)
    }

    async fn get_agent(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<AgentRecord>, StoreError> {
        Ok(self.agent(namespace, name))
    }

    async fn get_deployment(
        &self,
        namespace: &str,
        service_id: &str,
        deployment_id: &str,
    ) -> Result<Option<DeploymentRecord>, StoreError> {
        let key = (
            namespace.to_owned(),
            service_id.to_owned(),
            deployment_id.to_owned(),
        );
        Ok(lock(&self.agents).deployments.get(&key).cloned())
    }

    async fn list_deployments(
        &self,
        namespace: &str,
        service_id: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<DeploymentPage, StoreError> {
        let state = lock(&self.agents);
        let mut deployments: Vec<DeploymentRecord> = state
            .deployments
            .iter()
            .filter(|((ns, service, id), _)| {
                ns == namespace
                    && service == service_id
                    && before.is_none_or(|before| id.as_str() < before)
            })
            .map(|(_, record)| record.clone())
            .collect();
        deployments.sort_by(|a, b| b.deployment.id.cmp(&a.deployment.id));
        let (deployments, more) = crate::paging::split_page(deployments, limit);
        Ok(DeploymentPage { deployments, more })
    }

    async fn list_agents(
        &self,
        namespace: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<AgentPage, StoreError> {
        let state = lock(&self.agents);
        let mut agents: Vec<AgentRecord> = state
            .agents
            .iter()
            .filter(|((ns, name), _)| {
                ns == namespace && after.is_none_or(|after| name.as_str() > after)
            })
            .map(|(_, agent)| agent.clone())
            .collect();
        agents.sort_by(|a, b| a.name.cmp(&b.name));
        let (agents, more) = crate::paging::split_page(agents, limit);
        Ok(AgentPage { agents, more })
    }

    async fn every_agent(&self) -> Result<Vec<AgentRef>, StoreError> {
        Ok(lock(&self.agents)
            .agents
            .keys()
            .map(|(namespace, name)| AgentRef {
                namespace: namespace.clone(),
                name: name.clone(),
            })
            .collect())
    }

    async fn write_agent(
        &self,
        read_version: u64,
        next: &AgentRecord,
        change: Change<'_>,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<WriteOutcome, StoreError> {
        let mut state = lock(&self.agents);
        let namespace = &next.owner.namespace;
        let key = (namespace.clone(), next.name.clone());
        let Some(active_sessions) = state
            .agents
            .get(&key)
            .filter(|current| current.is_still(&next.service_id, read_version))
            .map(|current| current.active_sessions)
        else {
            return Ok(WriteOutcome::Conflict);
        };
        if let Some(found) = idempotency.and_then(|record| state.key_used(namespace, record)) {
            return Ok(WriteOutcome::KeyUsed(found));
        }
        let mut secrets = lock(&self.secrets);
        let uses = match change {
            Change::NewDeployment { replaced } => {
                SetUse::between(Some(replaced), Some(next.config()))
            }
            Change::Status { .. } | Change::AnswerRecorded => SetUse::default(),
        };
        if let Some(member) = secrets.missing(namespace, &uses) {
            return Ok(WriteOutcome::NoSuchSet(member));
        }
        secrets.apply(namespace, &next.name, &uses);
        match change {
            Change::NewDeployment { .. } => state.keep_deployment(next, &next.active),
            Change::Status {
                deployment_id,
                status,
            } => {
                let history = (
                    namespace.clone(),
                    next.service_id.clone(),
                    deployment_id.to_owned(),
                );
                match state.deployments.get_mut(&history) {
                    Some(record) => record.status = status.clone(),
                    None => return Err(StoreError::Unexpected("deployment missing".into())),
                }
            }
            Change::AnswerRecorded => {}
        }
        // Sessions own the count: the stored one stays, whatever `next` was read with.
        state.agents.insert(
            key,
            AgentRecord {
                active_sessions,
                ..next.clone()
            },
        );
        state.keep(namespace, idempotency);
        Ok(WriteOutcome::Written)
    }

    async fn delete_agent(&self, agent: &AgentRecord) -> Result<WriteOutcome, StoreError> {
        let mut state = lock(&self.agents);
        if !state.is_at(agent) {
            return Ok(WriteOutcome::Conflict);
        }
        let namespace = &agent.owner.namespace;
        let uses = SetUse::between(Some(agent.config()), None);
        lock(&self.secrets).apply(namespace, &agent.name, &uses);
        state
            .deployments
            .retain(|(ns, service, _), _| !(ns == namespace && *service == agent.service_id));
        state
            .idempotency
            .retain(|(ns, _), record| !(ns == namespace && record.agent == agent.name));
        state
            .agents
            .remove(&(namespace.clone(), agent.name.clone()));
        Ok(WriteOutcome::Written)
    }
}

impl AccountStore for MemoryStore {
    async fn get_account(&self, account_id: &str) -> Result<Option<Account>, StoreError> {
        Ok(lock(&self.accounts).accounts.get(account_id).cloned())
    }

    async fn list_accounts(&self) -> Result<Vec<Account>, StoreError> {
        Ok(lock(&self.accounts).accounts.values().cloned().collect())
    }

    async fn create_account(&self, account: &Account) -> Result<NewAccount, StoreError> {
        let mut state = lock(&self.accounts);
        if state.accounts.contains_key(&account.account_id) {
            return Ok(NewAccount::AccountExists);
        }
        if !state.claimed.insert(account.namespace.clone()) {
            return Ok(NewAccount::NamespaceTaken);
        }
        state
            .accounts
            .insert(account.account_id.clone(), account.clone());
        Ok(NewAccount::Created)
    }

    async fn add_key(
        &self,
        hash: &KeyHash,
        record: &KeyRecord,
        label: &KeyLabel,
    ) -> Result<AddedKey, StoreError> {
        let mut state = lock(&self.accounts);
        let mut keys = lock(&self.keys);
        if keys.contains_key(hash) {
            return Err(StoreError::Unexpected(
                "a freshly generated key collided with a stored one".into(),
            ));
        }
        if !state.accounts.contains_key(&record.account_id) {
            return Ok(AddedKey::NoAccount);
        }
        // DynamoDB keeps a counter; here the live handles are counted (the same number).
        let live = state
            .handles
            .iter()
            .filter(|((account, _), (hash, _))| {
                account == &record.account_id
                    && keys.get(hash).is_some_and(|key| key.revoked_at.is_none())
            })
            .count();
        if live >= MAX_LIVE_KEYS as usize {
            return Ok(AddedKey::AtLimit);
        }
        keys.insert(hash.clone(), record.clone());
        state.handles.insert(
            (record.account_id.clone(), record.key_id.clone()),
            (hash.clone(), label.clone()),
        );
        Ok(AddedKey::Added)
    }

    async fn list_keys(&self, account_id: &str) -> Result<Vec<KeySummary>, StoreError> {
        let state = lock(&self.accounts);
        let keys = lock(&self.keys);
        Ok(state
            .handles
            .iter()
            .filter(|((account, _), _)| account == account_id)
            .filter_map(|(_, (hash, label))| Some((keys.get(hash)?, label)))
            .map(|(record, label)| KeySummary {
                key_id: record.key_id.clone(),
                kind: record.kind,
                name: label.name.clone(),
                hint: label.hint.clone(),
                created_at: record.created_at.clone(),
                revoked_at: record.revoked_at.clone(),
            })
            .collect())
    }

    async fn revoke_key(
        &self,
        account_id: &str,
        key_id: &str,
        at: &str,
    ) -> Result<Option<String>, StoreError> {
        let state = lock(&self.accounts);
        let Some((hash, _)) = state
            .handles
            .get(&(account_id.to_owned(), key_id.to_owned()))
        else {
            return Ok(None);
        };
        let mut keys = lock(&self.keys);
        Ok(keys.get_mut(hash).map(|record| {
            record
                .revoked_at
                .get_or_insert_with(|| at.to_owned())
                .clone()
        }))
    }

    async fn add_person(&self, person: &PersonRecord) -> Result<AddedPerson, StoreError> {
        let mut state = lock(&self.accounts);
        if let Some(kept) = state.people.get(&person.person_id) {
            return Ok(AddedPerson::Exists(kept.clone()));
        }
        state
            .people
            .insert(person.person_id.clone(), person.clone());
        Ok(AddedPerson::Added)
    }

    async fn list_people(&self, account_id: &str) -> Result<Vec<PersonRecord>, StoreError> {
        Ok(lock(&self.accounts)
            .people
            .values()
            .filter(|person| person.account_id == account_id)
            .cloned()
            .collect())
    }

    async fn remove_person(&self, person_id: &str) -> Result<bool, StoreError> {
        Ok(lock(&self.accounts).people.remove(person_id).is_some())
    }

    async fn has_agents(&self, namespace: &str) -> Result<bool, StoreError> {
        Ok(lock(&self.agents)
            .agents
            .keys()
            .any(|(ns, _)| ns == namespace))
    }

    async fn remove_account(&self, account_id: &str) -> Result<(), StoreError> {
        let mut state = lock(&self.accounts);
        let mut keys = lock(&self.keys);
        state.handles.retain(|(account, _), (hash, _)| {
            let keep = account != account_id;
            if !keep {
                keys.remove(hash);
            }
            keep
        });
        state.accounts.remove(account_id);
        Ok(())
    }
}

impl KeyStore for MemoryStore {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        Ok(lock(&self.keys).get(hash).cloned())
    }

    async fn find_person(&self, person_id: &str) -> Result<Option<PersonRecord>, StoreError> {
        Ok(lock(&self.accounts).people.get(person_id).cloned())
    }
}

impl LogStore for MemoryStore {
    async fn put_chunks(&self, chunks: &[LogChunk]) -> Result<(), StoreError> {
        let mut logs = lock(&self.logs);
        for chunk in chunks {
            logs.entry(chunk.service_id.clone())
                .or_default()
                .insert(chunk.last_position.clone(), chunk.clone());
        }
        Ok(())
    }

    /// What one DynamoDB Query of the partition serving the filter returns: its chunks with keys
    /// in the range (both ends inclusive, as `BETWEEN`), in order, after `after_key`, at most
    /// `max_chunks` of them read before the rest of the filter is matched (as `Limit` is applied
    /// before a filter expression); and where the next continues, if more follow.
    async fn read_chunks(&self, request: &ChunkRequest<'_>) -> Result<ChunksRead, StoreError> {
        let filter = request.filter;
        let partition = filter.partition();
        let logs = lock(&self.logs);
        let Some(service) = logs.get(&filter.service_id) else {
            return Ok(ChunksRead::default());
        };
        if request.from_key > request.to_key {
            return Ok(ChunksRead::default());
        }
        let range = (
            Bound::Included(request.from_key.to_owned()),
            Bound::Included(request.to_key.to_owned()),
        );
        let in_range = service.range(range).filter(|(key, _)| {
            request.after_key.is_none_or(|after| match filter.order {
                Order::Asc => key.as_str() > after,
                Order::Desc => key.as_str() < after,
            })
        });
        let ordered: Box<dyn Iterator<Item = _>> = match filter.order {
            Order::Asc => Box::new(in_range),
            Order::Desc => Box::new(in_range.rev()),
        };
        let mut in_partition = ordered.filter(|(_, chunk)| partition.holds(chunk));
        let evaluated: Vec<&LogChunk> = in_partition
            .by_ref()
            .take(request.max_chunks.max(1))
            .map(|(_, chunk)| chunk)
            .collect();
        let more = in_partition.next().is_some();
        let resume_after = more
            .then(|| evaluated.last().map(|chunk| chunk.last_position.clone()))
            .flatten();
        Ok(ChunksRead {
            chunks: evaluated
                .into_iter()
                .filter(|chunk| partition.matches(chunk))
                .cloned()
                .collect(),
            resume_after,
        })
    }
}
