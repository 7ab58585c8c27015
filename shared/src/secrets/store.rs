//! The port secret sets are kept behind, and what is kept. A set's record names its keys (never
//! their values) and points at each key's sealed value by a value id. A value is written before
//! its set points at it and removed after the set stops pointing at it, so a set changes in one
//! conditioned write whatever the number of keys a request gives, and a request that fails half
//! way leaves only values that nothing points at (and that are removed before it answers).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;

use super::SetType;
use super::seal::Sealed;
use crate::error::StoreError;

/// One key of a set: where its value is, how large it is, when it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    pub value_id: String,
    pub bytes: usize,
    pub updated_at: String,
}

/// A set as kept, without its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretSetRecord {
    pub namespace: String,
    pub name: String,
    pub set_type: SetType,
    /// The registry of an image pull secret.
    pub host: Option<String>,
    pub keys: BTreeMap<String, KeyEntry>,
    /// The agents whose active deployment names this set: a set in use is not deleted.
    pub used_by: BTreeSet<String>,
    /// Counts the set's writes; every write is conditioned on the version it read.
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl SecretSetRecord {
    /// Each key's value size, as the set limits count them.
    pub fn sizes(&self) -> BTreeMap<String, usize> {
        self.keys
            .iter()
            .map(|(key, entry)| (key.clone(), entry.bytes))
            .collect()
    }
}

/// A sealed value, under the set and key it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredValue {
    pub key: String,
    pub value_id: String,
    pub sealed: Sealed,
}

/// What a conditioned write of a set found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetWrite {
    Written,
    /// The set is not at the version read any more (written, made or deleted since).
    Changed,
    /// A new set, and the account holds its most sets already.
    AccountFull,
}

pub trait SecretStore: Send + Sync {
    fn get_set(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<SecretSetRecord>, StoreError>> + Send;

    /// The account's sets by name after `after`, at most `limit`, and whether more follow.
    fn list_sets(
        &self,
        namespace: &str,
        after: Option<&str>,
        limit: usize,
    ) -> impl Future<Output = Result<(Vec<SecretSetRecord>, bool), StoreError>> + Send;

    /// Stores sealed values of the set `set` (unreachable until a set record points at them).
    fn put_values(
        &self,
        namespace: &str,
        set: &str,
        values: &[StoredValue],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Writes `set` if the stored set is still at `read_version` (`None`: no set of that name,
    /// and the account holds fewer than its most sets).
    fn write_set(
        &self,
        read_version: Option<u64>,
        set: &SecretSetRecord,
    ) -> impl Future<Output = Result<SetWrite, StoreError>> + Send;

    /// Deletes `set` if it is still at its version (so, unused as read).
    fn delete_set(
        &self,
        set: &SecretSetRecord,
    ) -> impl Future<Output = Result<SetWrite, StoreError>> + Send;

    /// Removes values no set points at any more: `(key, value id)` pairs of the set `set`.
    fn delete_values(
        &self,
        namespace: &str,
        set: &str,
        values: &[(String, String)],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The sealed values `set` points at (what a data plane reads).
    fn get_values(
        &self,
        set: &SecretSetRecord,
    ) -> impl Future<Output = Result<Vec<StoredValue>, StoreError>> + Send;
}

/// The service that makes data keys (KMS's GenerateDataKey): a new 256-bit key for each value,
/// bound to its namespace, set and key by the encryption context.
pub trait DataKeys: Send + Sync {
    fn data_key(
        &self,
        binding: &super::seal::Binding<'_>,
    ) -> impl Future<Output = Result<super::seal::DataKey, StoreError>> + Send;
}

/// The service that opens data keys (KMS's Decrypt), under the binding each was made for; any
/// other binding is refused. The data plane's alone: the API functions hold no kms:Decrypt.
pub trait DataKeyOpener: Send + Sync {
    fn open_data_key(
        &self,
        encrypted: &[u8],
        binding: &super::seal::Binding<'_>,
    ) -> impl Future<Output = Result<zeroize::Zeroizing<Vec<u8>>, StoreError>> + Send;
}
