//! Accounts and their API keys in AccountsTable (layouts in [`super::items`]): the key check's
//! one read (`KeyStore`) and the account port (`AccountStore`: the operator's rules over it are
//! in [`crate::account`]).

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::items::{
    ACCOUNT_SK, AccountItem, AccountKeyItem, KEY_SK, KeyItem, NamespaceItem, account_key_sk,
    account_pk, agent_sk, key_pk, namespace_claim_pk, namespace_pk,
};
use super::{DynamoStore, Transaction, built, classify, item_as, key, mapping, put_new, s};
use crate::account::{Account, AccountStore, KeySummary, NewAccount};
use crate::auth::{KeyHash, KeyRecord, KeyStore};
use crate::error::StoreError;

impl From<AccountItem> for Account {
    fn from(item: AccountItem) -> Self {
        Account {
            account_id: item.account_id,
            namespace: item.namespace,
            created_at: item.created_at,
        }
    }
}

impl DynamoStore {
    /// The account's handles on its keys.
    async fn key_handles(&self, account_id: &str) -> Result<Vec<AccountKeyItem>, StoreError> {
        self.client
            .query()
            .table_name(&self.accounts_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :keys)")
            .expression_attribute_values(":pk", s(account_pk(account_id)))
            .expression_attribute_values(":keys", s(account_key_sk("")))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(classify)?
            .into_iter()
            .map(|item| serde_dynamo::from_item(item).map_err(mapping))
            .collect()
    }
}

impl AccountStore for DynamoStore {
    async fn get_account(&self, account_id: &str) -> Result<Option<Account>, StoreError> {
        let item: Option<AccountItem> = item_as(
            self.get_item(
                &self.accounts_table,
                account_pk(account_id),
                ACCOUNT_SK.to_owned(),
                true,
            )
            .send()
            .await
            .map_err(classify)?,
        )?;
        Ok(item.map(Account::from))
    }

    /// A Scan of the accounts table (it reads every key item too: an operator's sweep).
    async fn list_accounts(&self) -> Result<Vec<Account>, StoreError> {
        let mut accounts = Vec::new();
        let mut pages = self
            .client
            .scan()
            .table_name(&self.accounts_table)
            .filter_expression("sk = :account")
            .expression_attribute_values(":account", s(ACCOUNT_SK))
            .consistent_read(true)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            for item in page.map_err(classify)?.items.unwrap_or_default() {
                let account: AccountItem = serde_dynamo::from_item(item).map_err(mapping)?;
                accounts.push(Account::from(account));
            }
        }
        accounts.sort_by(|a, b| a.account_id.cmp(&b.account_id));
        Ok(accounts)
    }

    async fn create_account(&self, account: &Account) -> Result<NewAccount, StoreError> {
        let item = AccountItem {
            pk: account_pk(&account.account_id),
            sk: ACCOUNT_SK.to_owned(),
            account_id: account.account_id.clone(),
            namespace: account.namespace.clone(),
            created_at: account.created_at.clone(),
        };
        let claim = NamespaceItem {
            pk: namespace_claim_pk(&account.namespace),
            sk: "NAMESPACE".to_owned(),
            account_id: account.account_id.clone(),
        };
        let items = vec![
            put_new(&self.accounts_table, &item)?,
            put_new(&self.accounts_table, &claim)?,
        ];
        Ok(match self.transact(items).await? {
            Transaction::Written => NewAccount::Created,
            Transaction::ConditionFailed { failed, .. } if failed.contains(&0) => {
                NewAccount::AccountExists
            }
            Transaction::ConditionFailed { .. } => NewAccount::NamespaceTaken,
        })
    }

    async fn add_key(&self, hash: &KeyHash, record: &KeyRecord) -> Result<(), StoreError> {
        let key_item = KeyItem {
            pk: key_pk(hash),
            sk: KEY_SK.to_owned(),
            key_id: record.key_id.clone(),
            kind: record.kind,
            account_id: record.account_id.clone(),
            namespace: record.namespace.clone(),
            created_at: record.created_at.clone(),
            revoked_at: record.revoked_at.clone(),
        };
        let handle = AccountKeyItem {
            pk: account_pk(&record.account_id),
            sk: account_key_sk(&record.key_id),
            key_id: record.key_id.clone(),
            kind: record.kind,
            key_hash: hash.as_str().to_owned(),
            created_at: record.created_at.clone(),
            revoked_at: record.revoked_at.clone(),
        };
        let items = vec![
            put_new(&self.accounts_table, &key_item)?,
            put_new(&self.accounts_table, &handle)?,
        ];
        match self.transact(items).await? {
            Transaction::Written => Ok(()),
            Transaction::ConditionFailed { .. } => Err(StoreError::Unexpected(
                "a freshly generated key collided with a stored one".into(),
            )),
        }
    }

    async fn list_keys(&self, account_id: &str) -> Result<Vec<KeySummary>, StoreError> {
        Ok(self
            .key_handles(account_id)
            .await?
            .into_iter()
            .map(|handle| KeySummary {
                key_id: handle.key_id,
                kind: handle.kind,
                created_at: handle.created_at,
                revoked_at: handle.revoked_at,
            })
            .collect())
    }

    async fn revoke_key(
        &self,
        account_id: &str,
        key_id: &str,
        at: &str,
    ) -> Result<bool, StoreError> {
        let handle: Option<AccountKeyItem> = item_as(
            self.get_item(
                &self.accounts_table,
                account_pk(account_id),
                account_key_sk(key_id),
                true,
            )
            .send()
            .await
            .map_err(classify)?,
        )?;
        let Some(handle) = handle else {
            return Ok(false);
        };
        let revoke = |pk: String, sk: String| -> Result<TransactWriteItem, StoreError> {
            let update = Update::builder()
                .table_name(&self.accounts_table)
                .set_key(Some(key(pk, sk)))
                .update_expression("SET revokedAt = if_not_exists(revokedAt, :now)")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_values(":now", s(at))
                .build()
                .map_err(built)?;
            Ok(TransactWriteItem::builder().update(update).build())
        };
        let hash = KeyHash::from_hex(handle.key_hash);
        let items = vec![
            revoke(key_pk(&hash), KEY_SK.to_owned())?,
            revoke(handle.pk, handle.sk)?,
        ];
        Ok(matches!(self.transact(items).await?, Transaction::Written))
    }

    async fn has_agents(&self, namespace: &str) -> Result<bool, StoreError> {
        let agents = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :agents)")
            .expression_attribute_values(":pk", s(namespace_pk(namespace)))
            .expression_attribute_values(":agents", s(agent_sk("")))
            .limit(1)
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(agents.count > 0)
    }

    async fn remove_account(&self, account_id: &str) -> Result<(), StoreError> {
        for handle in self.key_handles(account_id).await? {
            // The key's own item first: from then on it no longer authenticates.
            let hash = KeyHash::from_hex(handle.key_hash);
            for (pk, sk) in [(key_pk(&hash), KEY_SK.to_owned()), (handle.pk, handle.sk)] {
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
            .set_key(Some(key(account_pk(account_id), ACCOUNT_SK.to_owned())))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }
}

impl KeyStore for DynamoStore {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        // Eventually consistent, as it always read: half the read units of the key check every
        // request makes (a key just issued may be refused for about a second).
        let item: Option<KeyItem> = item_as(
            self.get_item(&self.accounts_table, key_pk(hash), KEY_SK.to_owned(), false)
                .send()
                .await
                .map_err(classify)?,
        )?;
        Ok(item.map(KeyRecord::from))
    }
}
