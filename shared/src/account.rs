//! Accounts and their API keys, as the operator command keeps them (contract section 2): an
//! account is made with a namespace no other account has had, keys are issued to it (shown once,
//! kept as a hash), listed and revoked, and an account is deleted only once it has no agents and
//! no people. An account holds at most [`MAX_LIVE_KEYS`] keys not revoked (a counter the key's own
//! write keeps, so the operator command and the console's `/v1/keys` are bound alike). People (the
//! console's users, by their user pool `sub`) each belong to one account. The rules are here,
//! once, for every store; [`AccountStore`] is the port a store implements, each method one
//! conditional write or one read.

use std::future::Future;

use crate::auth::{ApiKey, KeyHash, KeyKind, KeyRecord, KeyStore, PersonRecord};
use crate::error::StoreError;
use crate::timestamp::now_rfc3339_millis;
use crate::validation::{DNS_LABEL_RULE, is_dns_label};

/// An account as the operator command reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub account_id: String,
    pub namespace: String,
    pub created_at: String,
}

/// The most keys not revoked an account may hold at once.
pub const MAX_LIVE_KEYS: u32 = 50;
/// A key's name: 1 to this many characters, none a control character.
pub const MAX_KEY_NAME_CHARS: usize = 64;
/// The name of the keys the operator command issues.
pub const OPERATOR_KEY_NAME: &str = "operator";
/// How many of a key's first characters are kept to tell it by (its prefix and 4 random ones:
/// nothing a guess could use).
const HINT_CHARS: usize = 8;

/// What a key is told by in a list, beside its id: the name its issuer gave it and its first
/// characters (the key itself is never kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLabel {
    pub name: String,
    pub hint: String,
}

impl KeyLabel {
    pub fn of(key: &ApiKey, name: &str) -> Self {
        KeyLabel {
            name: name.to_owned(),
            hint: key.expose()[..HINT_CHARS].to_owned(),
        }
    }
}

/// A key of an account as listed (never the key itself). Keys kept before keys had names have
/// the name `""` and their kind's prefix as hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySummary {
    pub key_id: String,
    pub kind: KeyKind,
    pub name: String,
    pub hint: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// What keeping a new key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddedKey {
    Added,
    /// The account holds [`MAX_LIVE_KEYS`] live keys already; nothing was written.
    AtLimit,
    /// The account is gone (deleted since it was read); nothing was written.
    NoAccount,
}

/// What keeping a person did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddedPerson {
    Added,
    /// The person is kept already, as this (perhaps another account's); nothing was written.
    Exists(PersonRecord),
}

/// Why an account operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("{what} {DNS_LABEL_RULE}")]
    NotAName { what: &'static str },
    #[error("namespace {0} belongs to another account")]
    NamespaceTaken(String),
    #[error("no free namespace was drawn in {NAMESPACE_DRAWS} tries")]
    NoFreeNamespace,
    #[error("no account {0}")]
    NoAccount(String),
    #[error("no such key")]
    NoKey,
    #[error("account {0} still has agents; delete them first")]
    HasAgents(String),
    #[error("this account has {MAX_LIVE_KEYS} live keys, the most it may have; revoke one first")]
    KeyLimit,
    #[error("a key's name is 1 to {MAX_KEY_NAME_CHARS} characters, none a control character")]
    BadKeyName,
    #[error("account {0} still has people; remove them first")]
    HasPeople(String),
    #[error("person {0} belongs to another account (a person belongs to one account)")]
    PersonTaken(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What writing a new account did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewAccount {
    Created,
    /// An account of that id exists (made meanwhile, perhaps); nothing was written.
    AccountExists,
    /// The namespace is claimed by an account, or was; nothing was written.
    NamespaceTaken,
}

/// How many generated namespaces are tried before giving up (each is one of millions).
const NAMESPACE_DRAWS: usize = 8;

pub trait AccountStore: Send + Sync {
    fn get_account(
        &self,
        account_id: &str,
    ) -> impl Future<Output = Result<Option<Account>, StoreError>> + Send;

    /// Every account, by id (an operator's sweep).
    fn list_accounts(&self) -> impl Future<Output = Result<Vec<Account>, StoreError>> + Send;

    /// Writes the account and the claim of its namespace at once, or nothing when either is
    /// taken. A namespace stays claimed after its account is deleted.
    fn create_account(
        &self,
        account: &Account,
    ) -> impl Future<Output = Result<NewAccount, StoreError>> + Send;

    /// Keeps a key of an account: the record the key check reads (by its hash) and the account's
    /// handle on it (by its id, with its label), counting it among the account's live keys; at
    /// once, or nothing when the account holds [`MAX_LIVE_KEYS`] live keys already.
    fn add_key(
        &self,
        hash: &KeyHash,
        record: &KeyRecord,
        label: &KeyLabel,
    ) -> impl Future<Output = Result<AddedKey, StoreError>> + Send;

    fn list_keys(
        &self,
        account_id: &str,
    ) -> impl Future<Output = Result<Vec<KeySummary>, StoreError>> + Send;

    /// Marks a key of the account revoked at `at` and frees its place among the live keys, once
    /// (revoking twice keeps the first time); the time it is revoked since, `None` when the
    /// account has no such key.
    fn revoke_key(
        &self,
        account_id: &str,
        key_id: &str,
        at: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// Keeps a person of an account (the item the token check reads, by `sub`, and the account's
    /// handle on it) at once, or nothing when the person is kept already (by any account).
    fn add_person(
        &self,
        person: &PersonRecord,
    ) -> impl Future<Output = Result<AddedPerson, StoreError>> + Send;

    /// The account's people, by person id.
    fn list_people(
        &self,
        account_id: &str,
    ) -> impl Future<Output = Result<Vec<PersonRecord>, StoreError>> + Send;

    /// Removes the person and the account's handle on them at once; `false` when no such person
    /// was kept.
    fn remove_person(
        &self,
        person_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Whether any agent is kept in the namespace.
    fn has_agents(&self, namespace: &str) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Removes the account's keys (each stops authenticating as it goes) and then the account.
    fn remove_account(
        &self,
        account_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The account, made with a new namespace (or the one the operator chose, which must be free)
/// when it does not exist yet; an existing account keeps its own.
pub async fn ensure_account<S: AccountStore>(
    store: &S,
    account_id: &str,
    namespace: Option<&str>,
) -> Result<Account, AccountError> {
    if !is_dns_label(account_id) {
        return Err(AccountError::NotAName { what: "account id" });
    }
    if namespace.is_some_and(|namespace| !is_dns_label(namespace)) {
        return Err(AccountError::NotAName { what: "namespace" });
    }
    for _ in 0..NAMESPACE_DRAWS {
        if let Some(account) = store.get_account(account_id).await? {
            return Ok(account);
        }
        let account = Account {
            account_id: account_id.to_owned(),
            namespace: namespace.map_or_else(crate::namespace::generate, str::to_owned),
            created_at: now_rfc3339_millis(),
        };
        match store.create_account(&account).await? {
            NewAccount::Created => return Ok(account),
            // Made meanwhile: read on the next turn.
            NewAccount::AccountExists => continue,
            NewAccount::NamespaceTaken if namespace.is_some() => {
                return Err(AccountError::NamespaceTaken(account.namespace));
            }
            // The namespace drawn was taken: draw another.
            NewAccount::NamespaceTaken => continue,
        }
    }
    Err(AccountError::NoFreeNamespace)
}

/// A new key of `kind` for an existing account, named by the operator command; the key is
/// answered once and never kept.
pub async fn issue_key<S: AccountStore>(
    store: &S,
    account_id: &str,
    kind: KeyKind,
) -> Result<(ApiKey, KeyRecord), AccountError> {
    let (key, record, _) = issue(store, account_id, kind, OPERATOR_KEY_NAME).await?;
    Ok((key, record))
}

/// A new key of `kind` named `name` for an existing account (the console's `POST /v1/keys`);
/// the key is answered once and never kept. Refused past [`MAX_LIVE_KEYS`] live keys.
pub async fn issue_named_key<S: AccountStore>(
    store: &S,
    account_id: &str,
    kind: KeyKind,
    name: &str,
) -> Result<(ApiKey, KeySummary), AccountError> {
    if !is_key_name(name) {
        return Err(AccountError::BadKeyName);
    }
    let (key, record, label) = issue(store, account_id, kind, name).await?;
    Ok((
        key,
        KeySummary {
            key_id: record.key_id,
            kind: record.kind,
            name: label.name,
            hint: label.hint,
            created_at: record.created_at,
            revoked_at: None,
        },
    ))
}

/// Whether `name` may name a key: 1 to [`MAX_KEY_NAME_CHARS`] characters, no control character.
pub fn is_key_name(name: &str) -> bool {
    let count = name.chars().count();
    (1..=MAX_KEY_NAME_CHARS).contains(&count) && !name.chars().any(char::is_control)
}

async fn issue<S: AccountStore>(
    store: &S,
    account_id: &str,
    kind: KeyKind,
    name: &str,
) -> Result<(ApiKey, KeyRecord, KeyLabel), AccountError> {
    let no_account = || AccountError::NoAccount(account_id.to_owned());
    let account = store
        .get_account(account_id)
        .await?
        .ok_or_else(no_account)?;
    let key = ApiKey::generate_of(kind);
    let hash = key.hash();
    let record = KeyRecord {
        key_id: hash.key_id().to_owned(),
        kind,
        account_id: account.account_id,
        namespace: account.namespace,
        created_at: now_rfc3339_millis(),
        revoked_at: None,
    };
    let label = KeyLabel::of(&key, name);
    match store.add_key(&hash, &record, &label).await? {
        AddedKey::Added => Ok((key, record, label)),
        AddedKey::AtLimit => Err(AccountError::KeyLimit),
        AddedKey::NoAccount => Err(no_account()),
    }
}

/// The account's keys, newest first (the same second: by id).
pub async fn list_keys<S: AccountStore>(
    store: &S,
    account_id: &str,
) -> Result<Vec<KeySummary>, AccountError> {
    let mut keys = store.list_keys(account_id).await?;
    keys.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| a.key_id.cmp(&b.key_id))
    });
    Ok(keys)
}

/// Revokes a key of `account_id` by its key id; the time it is revoked since. Revoking twice is
/// harmless (the first time stays).
pub async fn revoke_key<S: AccountStore>(
    store: &S,
    account_id: &str,
    key_id: &str,
) -> Result<String, AccountError> {
    store
        .revoke_key(account_id, key_id, &now_rfc3339_millis())
        .await?
        .ok_or(AccountError::NoKey)
}

/// Revokes a key given as its text (an operator pasting a leaked key).
pub async fn revoke_key_text<S: AccountStore + KeyStore>(
    store: &S,
    key: &ApiKey,
) -> Result<(), AccountError> {
    let record = store
        .find_key(&key.hash())
        .await?
        .ok_or(AccountError::NoKey)?;
    revoke_key(store, &record.account_id, &record.key_id)
        .await
        .map(drop)
}

/// Ties a person to an existing account (the namespace kept is the account's). Adding a person
/// of the same account again is harmless; a person of another account is refused: a person
/// belongs to one account.
pub async fn add_person<S: AccountStore>(
    store: &S,
    person: &PersonRecord,
) -> Result<(), AccountError> {
    let account = store
        .get_account(&person.account_id)
        .await?
        .ok_or_else(|| AccountError::NoAccount(person.account_id.clone()))?;
    let person = PersonRecord {
        namespace: account.namespace,
        ..person.clone()
    };
    match store.add_person(&person).await? {
        AddedPerson::Added => Ok(()),
        AddedPerson::Exists(kept) if kept.account_id == person.account_id => Ok(()),
        AddedPerson::Exists(_) => Err(AccountError::PersonTaken(person.person_id)),
    }
}

/// Unties a person from their account: their tokens stop being accepted (within the gateway's
/// cache). Removing twice is harmless.
pub async fn remove_person<S: AccountStore>(
    store: &S,
    person_id: &str,
) -> Result<(), AccountError> {
    store.remove_person(person_id).await?;
    Ok(())
}

/// Deletes an account and its keys; refused while the account has agents or people. Its namespace stays
/// claimed, never another account's: its agents' log groups were named by it. `false` when there
/// was no such account (deleting twice is harmless).
pub async fn delete_account<S: AccountStore>(
    store: &S,
    account_id: &str,
) -> Result<bool, AccountError> {
    let Some(account) = store.get_account(account_id).await? else {
        return Ok(false);
    };
    if store.has_agents(&account.namespace).await? {
        return Err(AccountError::HasAgents(account_id.to_owned()));
    }
    if !store.list_people(account_id).await?.is_empty() {
        return Err(AccountError::HasPeople(account_id.to_owned()));
    }
    store.remove_account(account_id).await?;
    Ok(true)
}
