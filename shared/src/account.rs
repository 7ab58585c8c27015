//! Accounts and their API keys, as the operator command keeps them (contract section 2): an
//! account is made with a namespace no other account has had, keys are issued to it (shown once,
//! kept as a hash), listed and revoked, and an account is deleted only once it has no agents. The
//! rules are here, once, for every store; [`AccountStore`] is the port a store implements, each
//! method one conditional write or one read.

use std::future::Future;

use crate::auth::{ApiKey, KeyHash, KeyKind, KeyRecord, KeyStore};
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

/// A key of an account as listed (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySummary {
    pub key_id: String,
    pub kind: KeyKind,
    pub created_at: String,
    pub revoked_at: Option<String>,
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
    /// handle on it (by its id).
    fn add_key(
        &self,
        hash: &KeyHash,
        record: &KeyRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    fn list_keys(
        &self,
        account_id: &str,
    ) -> impl Future<Output = Result<Vec<KeySummary>, StoreError>> + Send;

    /// Marks a key of the account revoked at `at` (revoking twice keeps the first time); `false`
    /// when the account has no such key.
    fn revoke_key(
        &self,
        account_id: &str,
        key_id: &str,
        at: &str,
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

/// A new key of `kind` for an existing account; the key is answered once and never kept.
pub async fn issue_key<S: AccountStore>(
    store: &S,
    account_id: &str,
    kind: KeyKind,
) -> Result<(ApiKey, KeyRecord), AccountError> {
    let account = store
        .get_account(account_id)
        .await?
        .ok_or_else(|| AccountError::NoAccount(account_id.to_owned()))?;
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
    store.add_key(&hash, &record).await?;
    Ok((key, record))
}

/// Revokes a key of `account_id` by its key id. Revoking twice is harmless.
pub async fn revoke_key<S: AccountStore>(
    store: &S,
    account_id: &str,
    key_id: &str,
) -> Result<(), AccountError> {
    if store
        .revoke_key(account_id, key_id, &now_rfc3339_millis())
        .await?
    {
        Ok(())
    } else {
        Err(AccountError::NoKey)
    }
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
    revoke_key(store, &record.account_id, &record.key_id).await
}

/// Deletes an account and its keys; refused while the account has agents. Its namespace stays
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
    store.remove_account(account_id).await?;
    Ok(true)
}
