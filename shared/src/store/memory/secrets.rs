//! Secret sets in memory: each conditioned write atomic under one lock, as DynamoDB's are.

use super::{MemoryStore, Secrets, lock};
use crate::agent::{SetMember, SetUse};
use crate::error::StoreError;
use crate::secrets::MAX_SETS_PER_ACCOUNT;
use crate::secrets::store::{SecretSetRecord, SecretStore, SetWrite, StoredValue};

fn value_key(
    namespace: &str,
    set: &str,
    key: &str,
    value_id: &str,
) -> (String, String, String, String) {
    (
        namespace.to_owned(),
        set.to_owned(),
        key.to_owned(),
        value_id.to_owned(),
    )
}

impl Secrets {
    /// The first member of `uses` whose set is not in the namespace with the member's type.
    pub(super) fn missing(&self, namespace: &str, uses: &SetUse<'_>) -> Option<SetMember> {
        let key = |name: &str| (namespace.to_owned(), name.to_owned());
        uses.named
            .iter()
            .find(|set| {
                self.sets
                    .get(&key(set.name))
                    .is_none_or(|found| found.set_type != set.member.set_type())
            })
            .map(|set| set.member)
    }

    /// Agent `agent` among the users of the sets named, and not of those dropped (a dropped set
    /// that no longer exists has no users to leave).
    pub(super) fn apply(&mut self, namespace: &str, agent: &str, uses: &SetUse<'_>) {
        let named = uses.named.iter().map(|set| (set.name, true));
        let dropped = uses.dropped.iter().map(|name| (*name, false));
        for (name, uses_it) in named.chain(dropped) {
            if let Some(set) = self.sets.get_mut(&(namespace.to_owned(), name.to_owned())) {
                if uses_it {
                    set.used_by.insert(agent.to_owned());
                } else {
                    set.used_by.remove(agent);
                }
            }
        }
    }
}

impl SecretStore for MemoryStore {
    async fn get_set(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<SecretSetRecord>, StoreError> {
        Ok(lock(&self.secrets)
            .sets
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned())
    }

    async fn list_sets(
        &self,
        namespace: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<SecretSetRecord>, bool), StoreError> {
        let secrets = lock(&self.secrets);
        let sets: Vec<SecretSetRecord> = secrets
            .sets
            .iter()
            .filter(|((ns, name), _)| {
                ns == namespace && after.is_none_or(|after| name.as_str() > after)
            })
            .map(|(_, set)| set.clone())
            .take(limit + 1)
            .collect();
        Ok(crate::paging::split_page(sets, limit))
    }

    async fn put_values(
        &self,
        namespace: &str,
        set: &str,
        values: &[StoredValue],
    ) -> Result<(), StoreError> {
        let mut secrets = lock(&self.secrets);
        for value in values {
            secrets.values.insert(
                value_key(namespace, set, &value.key, &value.value_id),
                value.sealed.clone(),
            );
        }
        Ok(())
    }

    async fn write_set(
        &self,
        read_version: Option<u64>,
        set: &SecretSetRecord,
    ) -> Result<SetWrite, StoreError> {
        let mut secrets = lock(&self.secrets);
        let id = (set.namespace.clone(), set.name.clone());
        match (read_version, secrets.sets.get(&id)) {
            (None, None) => {
                let held = secrets
                    .sets
                    .keys()
                    .filter(|(ns, _)| *ns == set.namespace)
                    .count();
                if held >= MAX_SETS_PER_ACCOUNT {
                    return Ok(SetWrite::AccountFull);
                }
            }
            (Some(read), Some(current)) if current.version == read => {}
            _ => return Ok(SetWrite::Changed),
        }
        // Agents' writes own `used_by`, and do not move the version.
        let used_by = secrets
            .sets
            .get(&id)
            .map(|current| current.used_by.clone())
            .unwrap_or_default();
        secrets.sets.insert(
            id,
            SecretSetRecord {
                used_by,
                ..set.clone()
            },
        );
        Ok(SetWrite::Written)
    }

    async fn delete_set(&self, set: &SecretSetRecord) -> Result<SetWrite, StoreError> {
        let mut secrets = lock(&self.secrets);
        let id = (set.namespace.clone(), set.name.clone());
        match secrets.sets.get(&id) {
            Some(current) if current.version == set.version && current.used_by.is_empty() => {
                secrets.sets.remove(&id);
                Ok(SetWrite::Written)
            }
            _ => Ok(SetWrite::Changed),
        }
    }

    async fn delete_values(
        &self,
        namespace: &str,
        set: &str,
        values: &[(String, String)],
    ) -> Result<(), StoreError> {
        let mut secrets = lock(&self.secrets);
        for (key, value_id) in values {
            secrets
                .values
                .remove(&value_key(namespace, set, key, value_id));
        }
        Ok(())
    }

    async fn get_values(&self, set: &SecretSetRecord) -> Result<Vec<StoredValue>, StoreError> {
        let secrets = lock(&self.secrets);
        Ok(set
            .keys
            .iter()
            .filter_map(|(key, entry)| {
                let sealed = secrets.values.get(&value_key(
                    &set.namespace,
                    &set.name,
                    key,
                    &entry.value_id,
                ))?;
                Some(StoredValue {
                    key: key.clone(),
                    value_id: entry.value_id.clone(),
                    sealed: sealed.clone(),
                })
            })
            .collect())
    }
}

impl MemoryStore {
    /// Every sealed value kept, whether a set points at it or not (tests: nothing is left behind).
    pub fn sealed_value_count(&self) -> usize {
        lock(&self.secrets).values.len()
    }
}
