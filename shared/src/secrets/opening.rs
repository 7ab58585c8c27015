//! The data plane's side of a set (contract section 10): what a deployment's containers receive.
//! The set's item, the sealed values it points at, each value's data key opened by KMS under the
//! value's binding, each value opened with it. Only a holder of kms:Decrypt on the stack's key
//! can (the data plane's role: docs/secrets.md); the development data plane does it for each
//! deployment, and the tests check it on moto's KMS.

use zeroize::Zeroizing;

use super::SetType;
use super::seal::{self, Binding};
use super::store::{DataKeyOpener, SecretStore};
use crate::error::StoreError;

/// One key of a set and its value, in the clear: zeroized on drop, never printed.
pub struct OpenedValue {
    pub key: String,
    value: Zeroizing<Vec<u8>>,
}

impl OpenedValue {
    pub fn value(&self) -> &[u8] {
        &self.value
    }
}

impl std::fmt::Debug for OpenedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} bytes)", self.key, self.value.len())
    }
}

/// A set as a deployment receives it.
#[derive(Debug)]
pub struct OpenedSet {
    pub name: String,
    pub set_type: SetType,
    /// The registry of an image pull secret.
    pub host: Option<String>,
    /// By key name; an image pull secret's one value is `credentials`, the base64 of
    /// `user:token`.
    pub values: Vec<OpenedValue>,
}

/// Why a set did not open.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("no such set in the namespace")]
    NoSuchSet,
    #[error("the sealed value of {key} is missing")]
    MissingValue { key: String },
    /// KMS refused the data key: another binding, or a key the KMS does not hold (locally, a
    /// set sealed under the key of an earlier run of moto, which keeps keys in memory).
    #[error("KMS did not open the data key of {key}")]
    DataKey {
        key: String,
        #[source]
        source: StoreError,
    },
    #[error("the value of {key} does not open under its binding")]
    Sealed { key: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The set `name` of `namespace`, every value opened.
pub async fn open_set<S: SecretStore, K: DataKeyOpener>(
    store: &S,
    keys: &K,
    namespace: &str,
    name: &str,
) -> Result<OpenedSet, OpenError> {
    let set = store
        .get_set(namespace, name)
        .await?
        .ok_or(OpenError::NoSuchSet)?;
    let sealed = store.get_values(&set).await?;
    let mut values = Vec::with_capacity(set.keys.len());
    for key in set.keys.keys() {
        let stored = sealed
            .iter()
            .find(|value| value.key == *key)
            .ok_or_else(|| OpenError::MissingValue { key: key.clone() })?;
        let binding = Binding {
            namespace,
            set: name,
            key,
        };
        let data_key = keys
            .open_data_key(&stored.sealed.encrypted_key, &binding)
            .await
            .map_err(|source| OpenError::DataKey {
                key: key.clone(),
                source,
            })?;
        let value = seal::open(&data_key, &binding, &stored.sealed)
            .map_err(|_| OpenError::Sealed { key: key.clone() })?;
        values.push(OpenedValue {
            key: key.clone(),
            value,
        });
    }
    Ok(OpenedSet {
        name: set.name,
        set_type: set.set_type,
        host: set.host,
        values,
    })
}
