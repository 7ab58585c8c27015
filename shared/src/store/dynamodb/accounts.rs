//! Accounts and their API keys: the key check's one read (`KeyStore`), and what the operator
//! command does (create an account with a unique namespace; issue, list and revoke keys).

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::items::{
    AccountItem, AccountKeyItem, KeyItem, NamespaceItem, account_pk, key_pk, namespace_pk,
};
use super::{DynamoStore, Transaction, built, classify, item_as, key, mapping, put_new, s};
use crate::auth::{ApiKey, KeyHash, KeyRecord, KeyStore};
use crate::error::StoreError;
use crate::timestamp::now_rfc3339_millis;

/// An account as the operator command reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub account_id: String,
    pub namespace: String,
    pub created_at: String,
}

/// A key of an account as listed by the operator command (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySummary {
    pub key_id: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Invalid(String),
    #[error("no account {0}")]
    NoAccount(String),
    #[error("no such key")]
    NoKey,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DynamoStore {
    pub async fn get_account(&self, account_id: &str) -> Result<Option<Account>, StoreError> {
        let item: Option<AccountItem> = item_as(
            self.get_item(
                &self.accounts_table,
                account_pk(account_id),
                "ACCOUNT".to_owned(),
                true,
            )
            .send()
            .await
            .map_err(classify)?,
        )?;
        Ok(item.map(|account| Account {
            account_id: account.account_id,
            namespace: account.namespace,
            created_at: account.created_at,
        }))
    }

    /// The account, created with a new unique namespace when it does not exist yet.
    pub async fn ensure_account(&self, account_id: &str) -> Result<Account, AdminError> {
        self.ensure_account_in(account_id, None).await
    }

    /// As [`ensure_account`](Self::ensure_account), with the namespace chosen by the operator
    /// (it must be free); an existing account keeps its own namespace.
    pub async fn ensure_account_in(
        &self,
        account_id: &str,
        namespace: Option<&str>,
    ) -> Result<Account, AdminError> {
        for (what, value) in [("account id", Some(account_id)), ("namespace", namespace)] {
            if value.is_some_and(|value| !crate::validation::is_dns_label(value)) {
                return Err(AdminError::Invalid(format!(
                    "{what} {}",
                    crate::validation::DNS_LABEL_RULE
                )));
            }
        }
        for _ in 0..8 {
            if let Some(account) = self.get_account(account_id).await? {
                return Ok(account);
            }
            let chosen = namespace.map_or_else(crate::namespace::generate, str::to_owned);
            let now = now_rfc3339_millis();
            let account = AccountItem {
                pk: account_pk(account_id),
                sk: "ACCOUNT".to_owned(),
                account_id: account_id.to_owned(),
                namespace: chosen.clone(),
                created_at: now.clone(),
            };
            let claim = NamespaceItem {
                pk: format!("NAMESPACE#{chosen}"),
                sk: "NAMESPACE".to_owned(),
                account_id: account_id.to_owned(),
            };
            let items = vec![
                put_new(&self.accounts_table, &account)?,
                put_new(&self.accounts_table, &claim)?,
            ];
            match self.transact(items).await? {
                Transaction::Written => {
                    return Ok(Account {
                        account_id: account_id.to_owned(),
                        namespace: chosen,
                        created_at: now,
                    });
                }
                // The account appeared meanwhile: read it on the next turn.
                Transaction::ConditionFailed { failed, .. } if failed == [0] => continue,
                Transaction::ConditionFailed { .. } if namespace.is_some() => {
                    return Err(AdminError::Invalid(format!(
                        "namespace {chosen} belongs to another account"
                    )));
                }
                // The namespace drawn was taken: draw another.
                Transaction::ConditionFailed { .. } => continue,
            }
        }
        Err(AdminError::Store(StoreError::Unexpected(
            "could not claim a unique namespace".into(),
        )))
    }

    /// Issues a new key for an existing account; the key is returned once and never stored.
    pub async fn issue_key(&self, account_id: &str) -> Result<(ApiKey, KeyRecord), AdminError> {
        let account = self
            .get_account(account_id)
            .await?
            .ok_or_else(|| AdminError::NoAccount(account_id.to_owned()))?;
        let key = ApiKey::generate();
        let hash = key.hash();
        let now = now_rfc3339_millis();
        let record = KeyItem {
            pk: key_pk(&hash),
            sk: "KEY".to_owned(),
            key_id: hash.key_id().to_owned(),
            account_id: account.account_id.clone(),
            namespace: account.namespace.clone(),
            created_at: now.clone(),
            revoked_at: None,
        };
        let handle = AccountKeyItem {
            pk: account_pk(account_id),
            sk: format!("KEY#{}", hash.key_id()),
            key_id: hash.key_id().to_owned(),
            key_hash: hash.as_str().to_owned(),
            created_at: now,
            revoked_at: None,
        };
        let items = vec![
            put_new(&self.accounts_table, &record)?,
            put_new(&self.accounts_table, &handle)?,
        ];
        match self.transact(items).await? {
            Transaction::Written => Ok((key, record.into())),
            Transaction::ConditionFailed { .. } => Err(AdminError::Store(StoreError::Unexpected(
                "a freshly generated key collided with a stored one".into(),
            ))),
        }
    }

    pub async fn list_keys(&self, account_id: &str) -> Result<Vec<KeySummary>, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.accounts_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :keys)")
            .expression_attribute_values(":pk", s(account_pk(account_id)))
            .expression_attribute_values(":keys", s("KEY#"))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        output
            .items()
            .iter()
            .map(|item| {
                serde_dynamo::from_item::<_, AccountKeyItem>(item.clone()).map(|key| KeySummary {
                    key_id: key.key_id,
                    created_at: key.created_at,
                    revoked_at: key.revoked_at,
                })
            })
            .collect::<Result<_, _>>()
            .map_err(mapping)
    }

    /// Revokes a key of `account_id` by its key id. Revoking twice is harmless.
    pub async fn revoke_key(&self, account_id: &str, key_id: &str) -> Result<(), AdminError> {
        let handle: AccountKeyItem = item_as(
            self.get_item(
                &self.accounts_table,
                account_pk(account_id),
                format!("KEY#{key_id}"),
                true,
            )
            .send()
            .await
            .map_err(classify)?,
        )?
        .ok_or(AdminError::NoKey)?;
        let now = s(now_rfc3339_millis());
        let revoke = |pk: String, sk: String| -> Result<TransactWriteItem, StoreError> {
            let update = Update::builder()
                .table_name(&self.accounts_table)
                .set_key(Some(key(pk, sk)))
                .update_expression("SET revokedAt = if_not_exists(revokedAt, :now)")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_values(":now", now.clone())
                .build()
                .map_err(built)?;
            Ok(TransactWriteItem::builder().update(update).build())
        };
        let hash = KeyHash::from_hex(handle.key_hash);
        let items = vec![
            revoke(key_pk(&hash), "KEY".to_owned())?,
            revoke(handle.pk, handle.sk)?,
        ];
        match self.transact(items).await? {
            Transaction::Written => Ok(()),
            Transaction::ConditionFailed { .. } => Err(AdminError::NoKey),
        }
    }

    /// Revokes a key given as its text (an operator pasting a leaked key).
    pub async fn revoke_key_text(&self, key: &ApiKey) -> Result<(), AdminError> {
        let record = self.find_key(&key.hash()).await?.ok_or(AdminError::NoKey)?;
        self.revoke_key(&record.account_id, &record.key_id).await
    }
}

impl DynamoStore {
    /// Every account: a Scan of the accounts table (an operator's sweep, such as
    /// `sync-gateway`; it reads every key item too).
    pub async fn list_accounts(&self) -> Result<Vec<Account>, StoreError> {
        let mut accounts = Vec::new();
        let mut pages = self
            .client
            .scan()
            .table_name(&self.accounts_table)
            .filter_expression("sk = :account")
            .expression_attribute_values(":account", s("ACCOUNT"))
            .consistent_read(true)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            for item in page.map_err(classify)?.items.unwrap_or_default() {
                let account: AccountItem = serde_dynamo::from_item(item).map_err(mapping)?;
                accounts.push(Account {
                    account_id: account.account_id,
                    namespace: account.namespace,
                    created_at: account.created_at,
                });
            }
        }
        accounts.sort_by(|a, b| a.account_id.cmp(&b.account_id));
        Ok(accounts)
    }

    /// Deletes an account and its keys (each refused by the functions at once, and at the
    /// gateway within the authorizer's 60 s cache). Refused while the account has agents. Its
    /// namespace stays claimed and is never another account's: its agents' log groups were named
    /// by it. `false` when there was no such account (deleting twice is harmless).
    pub async fn delete_account(&self, account_id: &str) -> Result<bool, AdminError> {
        let Some(account) = self.get_account(account_id).await? else {
            return Ok(false);
        };
        let agents = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :agents)")
            .expression_attribute_values(":pk", s(namespace_pk(&account.namespace)))
            .expression_attribute_values(":agents", s("AGENT#"))
            .limit(1)
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        if agents.count > 0 {
            return Err(AdminError::Invalid(format!(
                "account {account_id} still has agents; delete them first"
            )));
        }
        let handles = self
            .client
            .query()
            .table_name(&self.accounts_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :keys)")
            .expression_attribute_values(":pk", s(account_pk(account_id)))
            .expression_attribute_values(":keys", s("KEY#"))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(classify)?;
        for item in handles {
            let handle: AccountKeyItem = serde_dynamo::from_item(item).map_err(mapping)?;
            // The key's own item first: from then on it no longer authenticates.
            let hash = KeyHash::from_hex(handle.key_hash);
            for (pk, sk) in [(key_pk(&hash), "KEY".to_owned()), (handle.pk, handle.sk)] {
                self.client
                    .delete_item()
                    .table_name(&self.accounts_table)
                    .set_key(Some(key(pk, sk)))
                    .send()
                    .await
                    .map_err(classify)?;
            }
        }
        self.client
            .delete_item()
            .table_name(&self.accounts_table)
            .set_key(Some(key(account_pk(account_id), "ACCOUNT".to_owned())))
            .send()
            .await
            .map_err(classify)?;
        Ok(true)
    }
}

impl KeyStore for DynamoStore {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        // Eventually consistent, as it always read: half the read units of the key check every
        // request makes (a key just issued may be refused for about a second).
        let item: Option<KeyItem> = item_as(
            self.get_item(&self.accounts_table, key_pk(hash), "KEY".to_owned(), false)
                .send()
                .await
                .map_err(classify)?,
        )?;
        Ok(item.map(KeyRecord::from))
    }
}
