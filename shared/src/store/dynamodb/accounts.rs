//! Accounts, their API keys and people in AccountsTable (layouts in [`super::items`]): the
//! credential check's reads (`KeyStore`: a key by its hash, a person by `sub`) and the account
//! port (`AccountStore`: the rules over it are in [`crate::account`]).

use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::items::{
    ACCOUNT_SK, AccountItem, AccountKeyItem, AccountPersonItem, KEY_SK, KeyItem, NamespaceItem,
    PERSON_SK, PersonItem, account_key_sk, account_person_sk, account_pk, agent_sk, key_pk,
    namespace_claim_pk, namespace_pk, person_pk,
};
use super::{
    DynamoStore, Item, Transaction, built, classify, item_as, item_of, key, mapping, put_new, s,
};
use crate::account::{
    Account, AccountStore, AddedKey, AddedPerson, KeyLabel, KeySummary, MAX_LIVE_KEYS, NewAccount,
};
use crate::auth::{KeyHash, KeyRecord, KeyStore, PersonRecord};
use crate::error::StoreError;

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

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
        self.account_handles(account_id, account_key_sk("")).await
    }

    /// The account's handles whose sort key begins with `prefix`.
    async fn account_handles<T: serde::de::DeserializeOwned>(
        &self,
        account_id: &str,
        prefix: String,
    ) -> Result<Vec<T>, StoreError> {
        self.client
            .query()
            .table_name(&self.accounts_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(account_pk(account_id)))
            .expression_attribute_values(":prefix", s(prefix))
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

    async fn key_handle(
        &self,
        account_id: &str,
        key_id: &str,
    ) -> Result<Option<AccountKeyItem>, StoreError> {
        item_as(
            self.get_item(
                &self.accounts_table,
                account_pk(account_id),
                account_key_sk(key_id),
                true,
            )
            .send()
            .await
            .map_err(classify)?,
        )
    }

    async fn person(
        &self,
        person_id: &str,
        consistent: bool,
    ) -> Result<Option<PersonRecord>, StoreError> {
        let item: Option<PersonItem> = item_as(
            self.get_item(
                &self.accounts_table,
                person_pk(person_id),
                PERSON_SK.to_owned(),
                consistent,
            )
            .send()
            .await
            .map_err(classify)?,
        )?;
        Ok(item.map(PersonRecord::from))
    }

    /// An update of the account item's live-key count by `by`, conditioned on `condition` (the
    /// account item must exist: an Update alone would make one).
    fn count_live_keys(
        &self,
        account_id: &str,
        by: i64,
        condition: &str,
        values: &[(&str, AttributeValue)],
    ) -> Result<TransactWriteItem, StoreError> {
        let mut update = Update::builder()
            .table_name(&self.accounts_table)
            .set_key(Some(key(account_pk(account_id), ACCOUNT_SK.to_owned())))
            .update_expression("ADD liveKeys :by")
            .condition_expression(format!("attribute_exists(pk) AND ({condition})"))
            .expression_attribute_values(":by", n(by))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (name, value) in values {
            update = update.expression_attribute_values(*name, value.clone());
        }
        Ok(TransactWriteItem::builder()
            .update(update.build().map_err(built)?)
            .build())
    }

    /// One try at revoking an unrevoked key: the key item, the handle (still unrevoked) and,
    /// when the handle is counted, one live key less.
    async fn revoke_once(
        &self,
        handle: &AccountKeyItem,
        account_id: &str,
        at: &str,
        counted: bool,
    ) -> Result<Transaction, StoreError> {
        let revoke = |pk: String, sk: String, condition: &str| {
            let update = Update::builder()
                .table_name(&self.accounts_table)
                .set_key(Some(key(pk, sk)))
                .update_expression("SET revokedAt = if_not_exists(revokedAt, :now)")
                .condition_expression(condition)
                .expression_attribute_values(":now", s(at))
                .build()
                .map_err(built)?;
            Ok::<_, StoreError>(TransactWriteItem::builder().update(update).build())
        };
        let hash = KeyHash::from_hex(handle.key_hash.clone());
        let mut items = vec![
            revoke(key_pk(&hash), KEY_SK.to_owned(), "attribute_exists(pk)")?,
            revoke(
                handle.pk.clone(),
                handle.sk.clone(),
                "attribute_exists(pk) AND attribute_not_exists(revokedAt)",
            )?,
        ];
        if counted {
            items.push(self.count_live_keys(
                account_id,
                -1,
                "liveKeys > :zero",
                &[(":zero", n(0))],
            )?);
        }
        self.transact(items).await
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

    async fn add_key(
        &self,
        hash: &KeyHash,
        record: &KeyRecord,
        label: &KeyLabel,
    ) -> Result<AddedKey, StoreError> {
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
            name: label.name.clone(),
            hint: Some(label.hint.clone()),
            created_at: record.created_at.clone(),
            revoked_at: record.revoked_at.clone(),
        };
        let items = vec![
            put_new(&self.accounts_table, &key_item)?,
            put_new(&self.accounts_table, &handle)?,
            // Accounts made before the counter start it at the first key they are issued.
            self.count_live_keys(
                &record.account_id,
                1,
                "attribute_not_exists(liveKeys) OR liveKeys < :max",
                &[(":max", n(MAX_LIVE_KEYS))],
            )?,
        ];
        match self.transact(items).await? {
            Transaction::Written => Ok(AddedKey::Added),
            Transaction::ConditionFailed { failed, mut found } if failed == [2] => {
                Ok(match found.get_mut(2).and_then(Option::take) {
                    Some(_) => AddedKey::AtLimit,
                    None => AddedKey::NoAccount,
                })
            }
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
            .map(KeySummary::from)
            .collect())
    }

    async fn revoke_key(
        &self,
        account_id: &str,
        key_id: &str,
        at: &str,
    ) -> Result<Option<String>, StoreError> {
        // A handle kept before keys had names (no hint) was never counted.
        let mut counted = true;
        // Each lost race reads the handle again: revoked meanwhile, gone, or the account's count
        // could not be lowered (the account gone), which the next try leaves alone.
        for _ in 0..3 {
            let Some(handle) = self.key_handle(account_id, key_id).await? else {
                return Ok(None);
            };
            if let Some(revoked_at) = handle.revoked_at {
                return Ok(Some(revoked_at));
            }
            counted &= handle.hint.is_some();
            match self.revoke_once(&handle, account_id, at, counted).await? {
                Transaction::Written => return Ok(Some(at.to_owned())),
                Transaction::ConditionFailed { failed, .. } if failed.contains(&0) => {
                    // The key's own item is gone: the account is being removed.
                    return Ok(None);
                }
                Transaction::ConditionFailed { failed, .. } if failed == [2] => counted = false,
                Transaction::ConditionFailed { .. } => {}
            }
        }
        Err(StoreError::Throttled(
            "revoking the key kept losing races with other writes".into(),
        ))
    }

    async fn add_person(&self, person: &PersonRecord) -> Result<AddedPerson, StoreError> {
        let item = PersonItem {
            pk: person_pk(&person.person_id),
            sk: PERSON_SK.to_owned(),
            person_id: person.person_id.clone(),
            account_id: person.account_id.clone(),
            namespace: person.namespace.clone(),
            email: person.email.clone(),
            created_at: person.created_at.clone(),
        };
        let handle = AccountPersonItem {
            pk: account_pk(&person.account_id),
            sk: account_person_sk(&person.person_id),
            person_id: person.person_id.clone(),
            email: person.email.clone(),
            created_at: person.created_at.clone(),
        };
        let put = Put::builder()
            .table_name(&self.accounts_table)
            .set_item(Some(item_of(&item)?))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(built)?;
        let items = vec![
            TransactWriteItem::builder().put(put).build(),
            put_new(&self.accounts_table, &handle)?,
        ];
        match self.transact(items).await? {
            Transaction::Written => Ok(AddedPerson::Added),
            Transaction::ConditionFailed { mut found, .. } => {
                let kept: Item = found.get_mut(0).and_then(Option::take).ok_or_else(|| {
                    StoreError::Unexpected("a person's handle without the person".into())
                })?;
                let kept: PersonItem = serde_dynamo::from_item(kept).map_err(mapping)?;
                Ok(AddedPerson::Exists(kept.into()))
            }
        }
    }

    async fn list_people(&self, account_id: &str) -> Result<Vec<PersonRecord>, StoreError> {
        let handles: Vec<AccountPersonItem> = self
            .account_handles(account_id, account_person_sk(""))
            .await?;
        if handles.is_empty() {
            return Ok(Vec::new());
        }
        // The handles do not repeat the namespace: the account's item holds it.
        let namespace = self
            .get_account(account_id)
            .await?
            .map(|account| account.namespace)
            .unwrap_or_default();
        Ok(handles
            .into_iter()
            .map(|handle| PersonRecord {
                person_id: handle.person_id,
                account_id: account_id.to_owned(),
                namespace: namespace.clone(),
                email: handle.email,
                created_at: handle.created_at,
            })
            .collect())
    }

    async fn remove_person(&self, person_id: &str) -> Result<bool, StoreError> {
        let Some(person) = self.person(person_id, true).await? else {
            return Ok(false);
        };
        let delete = |pk: String, sk: String| -> Result<TransactWriteItem, StoreError> {
            let delete = Delete::builder()
                .table_name(&self.accounts_table)
                .set_key(Some(key(pk, sk)))
                .build()
                .map_err(built)?;
            Ok(TransactWriteItem::builder().delete(delete).build())
        };
        let items = vec![
            delete(person_pk(person_id), PERSON_SK.to_owned())?,
            delete(account_pk(&person.account_id), account_person_sk(person_id))?,
        ];
        self.transact(items).await?;
        Ok(true)
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

    async fn find_person(&self, person_id: &str) -> Result<Option<PersonRecord>, StoreError> {
        // Eventually consistent, as the key check: removing a person takes effect within the
        // gateway's cache bound anyway.
        self.person(person_id, false).await
    }
}
