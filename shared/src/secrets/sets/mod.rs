//! What each secret set operation does, over any [`SecretStore`] and [`DataKeys`] (contract
//! section 10). Values are sealed before anything is stored; every write of a set is
//! conditioned on the version read, and a lost race reads the set again.

use futures_util::future::try_join_all;
use time::OffsetDateTime;

use super::body::SetChange;
use super::seal::{self, Binding};
use super::store::{DataKeys, KeyEntry, SecretSetRecord, SecretStore, SetWrite, StoredValue};
use super::views::{PutAnswer, SetList, SetSummary, SetView};
use super::{MAX_SETS_PER_ACCOUNT, SetType};
use crate::ApiError;
use crate::cursor::{CursorFormat, CursorKey};
use crate::paging::ListQuery;
use crate::races::Races;
use crate::timestamp::rfc3339_millis;
use crate::validation::{MAX_NAME_LENGTH, is_dns_label};

/// The key an image pull secret's credentials are kept under (not a `secretKey`: sets of that
/// type have none).
pub const CREDENTIALS_KEY: &str = "credentials";

/// The list's cursors: the name of a page's last set, bound to the account.
pub const CURSOR_FORMAT: CursorFormat = CursorFormat {
    scope: "secret-sets-cursor-v1",
    max_position_length: MAX_NAME_LENGTH,
    is_position: is_dns_label,
};

fn no_set() -> ApiError {
    ApiError::NotFound("No secret set of that name in this account".to_owned())
}

/// The set name of a path, when a set can have it; otherwise no such set exists (404).
pub fn existing_name(name: Option<String>) -> Result<String, ApiError> {
    name.filter(|name| is_dns_label(name)).ok_or_else(no_set)
}

/// The set name a PUT makes or changes: `setName` as `serviceName` (400 naming it).
pub fn new_name(name: Option<String>) -> Result<String, ApiError> {
    name.filter(|name| is_dns_label(name)).ok_or_else(|| {
        ApiError::bad_request(
            "setName",
            format!("setName {}", crate::validation::DNS_LABEL_RULE),
        )
    })
}

/// PUT /v1/secrets/{setName}: each value sealed under a data key of its own, stored, then the
/// set pointed at the new values in one conditioned write; the values it replaced are removed
/// after, and the new ones again if the write is refused.
pub async fn put<S: SecretStore, K: DataKeys>(
    store: &S,
    keys: &K,
    namespace: &str,
    name: &str,
    region: &str,
    change: SetChange,
) -> Result<PutAnswer, ApiError> {
    let values = sealed_values(keys, namespace, name, &change).await?;
    store.put_values(namespace, name, &values).await?;
    let ours: Vec<(String, String)> = values
        .iter()
        .map(|value| (value.key.clone(), value.value_id.clone()))
        .collect();
    match point_at(store, namespace, name, &change, &values).await {
        Ok(replaced) => {
            remove_unreachable(store, namespace, name, &replaced).await;
            tracing::info!(keys = values.len(), "secret set written");
            Ok(PutAnswer {
                status: "OK",
                name: name.to_owned(),
                set_type: change.set_type(),
                region: region.to_owned(),
            })
        }
        Err(error) => {
            remove_unreachable(store, namespace, name, &ours).await;
            Err(error)
        }
    }
}

/// Removes values no set points at any more. The write that left them is done (or refused)
/// either way, so a failure here is logged, not answered: what stays is reachable from no set,
/// and its data key opens only under its old binding.
async fn remove_unreachable<S: SecretStore>(
    store: &S,
    namespace: &str,
    set: &str,
    values: &[(String, String)],
) {
    if let Err(error) = store.delete_values(namespace, set, values).await {
        tracing::warn!(error = %error, left = values.len(), "unreachable sealed values left");
    }
}

/// Data keys a PUT asks KMS for at once: a set of 100 keys takes 10 rounds, not 100, and one
/// request stays far inside KMS's shared request quota (thousands a second an account).
const DATA_KEYS_AT_ONCE: usize = 10;

async fn sealed_values<K: DataKeys>(
    keys: &K,
    namespace: &str,
    set: &str,
    change: &SetChange,
) -> Result<Vec<StoredValue>, ApiError> {
    let given: Vec<(&str, &super::SecretValue)> = match change {
        SetChange::Keys { secrets, .. } => secrets
            .iter()
            .map(|secret| (secret.key.as_str(), &secret.value))
            .collect(),
        SetChange::ImagePull { credentials, .. } => vec![(CREDENTIALS_KEY, credentials)],
    };
    let bindings: Vec<(Binding<'_>, &super::SecretValue)> = given
        .into_iter()
        .map(|(key, value)| {
            let binding = Binding {
                namespace,
                set,
                key,
            };
            (binding, value)
        })
        .collect();
    // Rounds of try_join_all rather than a buffered stream: a stream's closure returning a
    // future breaks the handler future's Send proof (rustc's higher-ranked lifetime inference).
    let mut values = Vec::with_capacity(bindings.len());
    for round in bindings.chunks(DATA_KEYS_AT_ONCE) {
        let sealing = round
            .iter()
            .map(|(binding, value)| sealed_value(keys, binding, value));
        values.extend(try_join_all(sealing).await?);
    }
    Ok(values)
}

/// One value sealed under a data key of its own.
async fn sealed_value<K: DataKeys>(
    keys: &K,
    binding: &Binding<'_>,
    value: &super::SecretValue,
) -> Result<StoredValue, ApiError> {
    let data_key = keys.data_key(binding).await?;
    let sealed = seal::seal(data_key, binding, value).map_err(ApiError::internal)?;
    Ok(StoredValue {
        key: binding.key.to_owned(),
        value_id: uuid::Uuid::new_v4().simple().to_string(),
        sealed,
    })
}

/// The set's one conditioned write; answers the values it no longer points at.
async fn point_at<S: SecretStore>(
    store: &S,
    namespace: &str,
    name: &str,
    change: &SetChange,
    values: &[StoredValue],
) -> Result<Vec<(String, String)>, ApiError> {
    let mut races = Races::new();
    loop {
        let current = store.get_set(namespace, name).await?;
        let sizes = current.as_ref().map(SecretSetRecord::sizes);
        change.check_limits(current.as_ref().map(|set| set.set_type).zip(sizes.as_ref()))?;
        let now = rfc3339_millis(OffsetDateTime::now_utc());
        let (next, replaced) = changed(current.as_ref(), namespace, name, change, values, &now);
        match store
            .write_set(current.map(|set| set.version), &next)
            .await?
        {
            SetWrite::Written => return Ok(replaced),
            SetWrite::Changed => races.lost().await?,
            SetWrite::AccountFull => {
                return Err(ApiError::bad_request(
                    "setName",
                    format!(
                        "An account holds at most {MAX_SETS_PER_ACCOUNT} secret sets; delete one first"
                    ),
                ));
            }
        }
    }
}

/// The set after `change`, and the values it no longer points at.
fn changed(
    current: Option<&SecretSetRecord>,
    namespace: &str,
    name: &str,
    change: &SetChange,
    values: &[StoredValue],
    now: &str,
) -> (SecretSetRecord, Vec<(String, String)>) {
    let mut next = current.cloned().unwrap_or_else(|| SecretSetRecord {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        set_type: change.set_type(),
        host: None,
        keys: Default::default(),
        used_by: Default::default(),
        version: 0,
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
    });
    let mut replaced = Vec::new();
    if let SetChange::ImagePull { host, .. } = change {
        next.host = Some(host.clone());
        replaced.extend(
            std::mem::take(&mut next.keys)
                .into_iter()
                .map(|(key, e)| (key, e.value_id)),
        );
    }
    for value in values {
        let entry = KeyEntry {
            value_id: value.value_id.clone(),
            bytes: value.sealed.value_len(),
            updated_at: now.to_owned(),
        };
        if let Some(old) = next.keys.insert(value.key.clone(), entry) {
            replaced.push((value.key.clone(), old.value_id));
        }
    }
    next.version += 1;
    next.updated_at = now.to_owned();
    (next, replaced)
}

/// GET /v1/secrets/{setName}.
pub async fn get<S: SecretStore>(
    store: &S,
    namespace: &str,
    name: &str,
    region: &str,
) -> Result<SetView, ApiError> {
    let set = store.get_set(namespace, name).await?.ok_or_else(no_set)?;
    Ok(SetView::of(&set, region))
}

/// GET /v1/secrets: the account's sets by name, a page at a time.
pub async fn list<S: SecretStore>(
    store: &S,
    namespace: &str,
    query: &ListQuery,
    cursor_key: &CursorKey,
    region: &str,
) -> Result<SetList, ApiError> {
    let (sets, more) = store
        .list_sets(namespace, query.after.as_deref(), query.limit)
        .await?;
    let next_cursor = sets
        .last()
        .filter(|_| more)
        .map(|last| cursor_key.encode(&CURSOR_FORMAT, namespace, &last.name));
    Ok(SetList {
        sets: sets.iter().map(|set| SetSummary::of(set, region)).collect(),
        next_cursor,
    })
}

/// DELETE /v1/secrets/{setName}/{secretKey}.
pub async fn delete_key<S: SecretStore>(
    store: &S,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<(), ApiError> {
    let mut races = Races::new();
    loop {
        let current = store.get_set(namespace, name).await?.ok_or_else(no_set)?;
        if current.set_type == SetType::ImagePullSecret {
            return Err(ApiError::bad_request(
                "secretKey",
                "An image pull secret has no keys; put new credentials, or delete the set",
            ));
        }
        let mut next = current.clone();
        let Some(entry) = next.keys.remove(key) else {
            return Err(ApiError::NotFound(
                "No key of that name in this secret set".to_owned(),
            ));
        };
        next.version += 1;
        next.updated_at = rfc3339_millis(OffsetDateTime::now_utc());
        match store.write_set(Some(current.version), &next).await? {
            SetWrite::Written => {
                let gone = [(key.to_owned(), entry.value_id)];
                remove_unreachable(store, namespace, name, &gone).await;
                return Ok(());
            }
            SetWrite::Changed | SetWrite::AccountFull => races.lost().await?,
        }
    }
}

/// DELETE /v1/secrets/{setName}: refused while an agent's active deployment names the set.
pub async fn delete<S: SecretStore>(
    store: &S,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    let mut races = Races::new();
    loop {
        let current = store.get_set(namespace, name).await?.ok_or_else(no_set)?;
        if !current.used_by.is_empty() {
            let agents: Vec<&str> = current.used_by.iter().map(String::as_str).collect();
            return Err(ApiError::Conflict(format!(
                "Secret set '{name}' is used by the active deployment of {}; deploy them without it first",
                agents.join(", ")
            )));
        }
        match store.delete_set(&current).await? {
            SetWrite::Written => {
                let gone: Vec<(String, String)> = current
                    .keys
                    .into_iter()
                    .map(|(key, entry)| (key, entry.value_id))
                    .collect();
                remove_unreachable(store, namespace, name, &gone).await;
                return Ok(());
            }
            SetWrite::Changed | SetWrite::AccountFull => races.lost().await?,
        }
    }
}

#[cfg(test)]
mod tests;
