//! What each secret set operation does, over any [`SecretStore`] and [`DataKeys`] (contract
//! section 10). Values are sealed before anything is stored; every write of a set is
//! conditioned on the version read, and a lost race reads the set again.

use serde::Serialize;
use time::OffsetDateTime;

use super::body::SetChange;
use super::seal::{self, Binding};
use super::store::{DataKeys, KeyEntry, SecretSetRecord, SecretStore, SetWrite, StoredValue};
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
    fn of(set: &SecretSetRecord, region: &str) -> Self {
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
    fn of(set: &SecretSetRecord, region: &str) -> Self {
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
            store.delete_values(namespace, name, &replaced).await?;
            tracing::info!(keys = values.len(), "secret set written");
            Ok(PutAnswer {
                status: "OK",
                name: name.to_owned(),
                set_type: change.set_type(),
                region: region.to_owned(),
            })
        }
        Err(error) => {
            if let Err(cleanup) = store.delete_values(namespace, name, &ours).await {
                tracing::warn!(error = %cleanup, "values of a refused write left unreachable");
            }
            Err(error)
        }
    }
}

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
    let mut values = Vec::with_capacity(given.len());
    for (key, value) in given {
        let binding = Binding {
            namespace,
            set,
            key,
        };
        let data_key = keys.data_key(&binding).await?;
        let sealed = seal::seal(data_key, &binding, value).map_err(ApiError::internal)?;
        values.push(StoredValue {
            key: key.to_owned(),
            value_id: uuid::Uuid::new_v4().simple().to_string(),
            sealed,
        });
    }
    Ok(values)
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
            bytes: value.sealed.ciphertext.len().saturating_sub(16),
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
                return Ok(store.delete_values(namespace, name, &gone).await?);
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
                return Ok(store.delete_values(namespace, name, &gone).await?);
            }
            SetWrite::Changed | SetWrite::AccountFull => races.lost().await?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;
    use crate::testing::data_keys::FakeKms;
    use serde_json::{Value, json};

    const NS: &str = "tiny-ferret-1";
    const REGION: &str = "us-west-2";

    async fn put_body(
        store: &MemoryStore,
        kms: &FakeKms,
        name: &str,
        body: Value,
    ) -> Result<PutAnswer, ApiError> {
        let change = SetChange::from_json(name, REGION, body)?;
        put(store, kms, NS, name, REGION, change).await
    }

    async fn opened(store: &MemoryStore, kms: &FakeKms, name: &str) -> Vec<(String, String)> {
        let set = store.get_set(NS, name).await.unwrap().unwrap();
        let mut values = Vec::new();
        for value in store.get_values(&set).await.unwrap() {
            let binding = Binding {
                namespace: NS,
                set: name,
                key: &value.key,
            };
            let data_key = kms.decrypt(&value.sealed.encrypted_key, &binding).unwrap();
            let plain = seal::open(&data_key, &binding, &value.sealed).unwrap();
            values.push((value.key, String::from_utf8(plain).unwrap()));
        }
        values
    }

    #[tokio::test]
    async fn keys_given_are_set_and_keys_not_given_are_kept() {
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        let answer = put_body(
            &store,
            &kms,
            "voice",
            json!({"secretKey": "A", "secretValue": "one"}),
        )
        .await
        .unwrap();
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({"status": "OK", "name": "voice", "type": "secret", "region": REGION})
        );
        put_body(
            &store,
            &kms,
            "voice",
            json!({"secrets": [
            {"secretKey": "B", "secretValue": "two"}, {"secretKey": "A", "secretValue": "uno"}]}),
        )
        .await
        .unwrap();
        assert_eq!(
            opened(&store, &kms, "voice").await,
            [
                ("A".to_owned(), "uno".to_owned()),
                ("B".to_owned(), "two".to_owned())
            ]
        );
        // The replaced value is gone: only what the set points at is kept.
        assert_eq!(store.sealed_value_count(), 2);
        assert_eq!(kms.issued(), 3, "a data key a value");

        let view = serde_json::to_value(get(&store, NS, "voice", REGION).await.unwrap()).unwrap();
        assert_eq!(view["type"], "secret");
        assert_eq!(view["status"], "ready");
        let names: Vec<&str> = view["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["fieldName"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["A", "B"]);
        assert!(!view.to_string().contains("uno") && !view.to_string().contains("two"));
    }

    #[tokio::test]
    async fn an_image_pull_secret_replaces_its_credentials_and_keeps_its_type() {
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        let body = |user: &str| {
            let credentials = base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                format!("{user}:tok"),
            );
            json!({"isImagePullSecret": true, "host": "ghcr.io", "secretValue": credentials})
        };
        put_body(&store, &kms, "pull", body("robot")).await.unwrap();
        put_body(&store, &kms, "pull", body("robot2"))
            .await
            .unwrap();
        assert_eq!(store.sealed_value_count(), 1);
        let view = serde_json::to_value(get(&store, NS, "pull", REGION).await.unwrap()).unwrap();
        assert_eq!(view["type"], "imagePullSecret");
        assert_eq!(view["host"], "ghcr.io");
        assert!(view.get("secrets").is_none());

        let refused = put_body(
            &store,
            &kms,
            "pull",
            json!({"secretKey": "A", "secretValue": "x"}),
        )
        .await
        .unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::CONFLICT);
        let refused = delete_key(&store, NS, "pull", CREDENTIALS_KEY)
            .await
            .unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::BAD_REQUEST);
        // Refused writes leave nothing behind.
        assert_eq!(store.sealed_value_count(), 1);
    }

    #[tokio::test]
    async fn a_key_and_then_the_set_are_deleted_leaving_nothing() {
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        put_body(
            &store,
            &kms,
            "voice",
            json!({"secrets": [
            {"secretKey": "A", "secretValue": "1"}, {"secretKey": "B", "secretValue": "2"}]}),
        )
        .await
        .unwrap();
        delete_key(&store, NS, "voice", "A").await.unwrap();
        assert_eq!(
            opened(&store, &kms, "voice").await,
            [("B".to_owned(), "2".to_owned())]
        );
        assert_eq!(
            delete_key(&store, NS, "voice", "A")
                .await
                .unwrap_err()
                .status(),
            http::StatusCode::NOT_FOUND
        );
        delete(&store, NS, "voice").await.unwrap();
        assert_eq!(store.sealed_value_count(), 0);
        for missing in [
            delete(&store, NS, "voice").await.unwrap_err(),
            get(&store, NS, "voice", REGION).await.unwrap_err(),
            delete_key(&store, NS, "voice", "B").await.unwrap_err(),
        ] {
            assert_eq!(missing.status(), http::StatusCode::NOT_FOUND);
        }
    }

    #[tokio::test]
    async fn a_set_in_use_is_not_deleted_and_the_answer_names_its_agents() {
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        put_body(
            &store,
            &kms,
            "voice",
            json!({"secretKey": "A", "secretValue": "1"}),
        )
        .await
        .unwrap();
        let mut set = store.get_set(NS, "voice").await.unwrap().unwrap();
        let read = set.version;
        set.used_by.insert("support-bot".to_owned());
        set.version += 1;
        assert_eq!(
            store.write_set(Some(read), &set).await.unwrap(),
            SetWrite::Written
        );
        let refused = delete(&store, NS, "voice").await.unwrap_err();
        assert_eq!(refused.status(), http::StatusCode::CONFLICT);
        assert!(refused.to_string().contains("support-bot"), "{refused}");
        assert_eq!(store.sealed_value_count(), 1);
    }

    #[tokio::test]
    async fn the_list_is_by_name_a_page_at_a_time() {
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        for name in ["c-set", "a-set", "b-set"] {
            put_body(
                &store,
                &kms,
                name,
                json!({"secretKey": "A", "secretValue": "1"}),
            )
            .await
            .unwrap();
        }
        let key = CursorKey::from_bytes([9; 32]);
        let first = list(
            &store,
            NS,
            &ListQuery {
                limit: 2,
                after: None,
            },
            &key,
            REGION,
        )
        .await
        .unwrap();
        let names: Vec<&str> = first.sets.iter().map(|set| set.name.as_str()).collect();
        assert_eq!(names, ["a-set", "b-set"]);
        let cursor = first.next_cursor.unwrap();
        let query = ListQuery::from_params([("cursor", cursor.as_str())], &key, &CURSOR_FORMAT, NS)
            .unwrap();
        let second = list(&store, NS, &query, &key, REGION).await.unwrap();
        assert_eq!(second.sets.len(), 1);
        assert_eq!(second.sets[0].name, "c-set");
        assert!(second.next_cursor.is_none());
        let elsewhere = ListQuery::from_params(
            [("cursor", cursor.as_str())],
            &key,
            &CURSOR_FORMAT,
            "other-ns",
        );
        assert_eq!(elsewhere.unwrap_err().field(), Some("cursor"));
    }

    #[tokio::test]
    async fn the_201st_set_of_an_account_is_refused() {
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        for i in 0..MAX_SETS_PER_ACCOUNT {
            put_body(
                &store,
                &kms,
                &format!("set-{i}"),
                json!({"secretKey": "A", "secretValue": "1"}),
            )
            .await
            .unwrap();
        }
        let refused = put_body(
            &store,
            &kms,
            "one-more",
            json!({"secretKey": "A", "secretValue": "1"}),
        )
        .await
        .unwrap_err();
        assert_eq!(refused.field(), Some("setName"));
        assert_eq!(store.sealed_value_count(), MAX_SETS_PER_ACCOUNT);
        // An existing set still changes.
        put_body(
            &store,
            &kms,
            "set-0",
            json!({"secretKey": "B", "secretValue": "2"}),
        )
        .await
        .unwrap();
    }
}
