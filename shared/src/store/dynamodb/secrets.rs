//! The secret set operations on DynamoDB (items: [`super::secret_items`]).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, DeleteRequest, PutRequest, TransactWriteItem, Update, WriteRequest,
};

use super::items::namespace_pk;
use super::secret_items::{
    SET_COUNTER_SK, SecretSetItem, SecretValueItem, secret_set_sk, secret_value_sk,
};
use super::{
    DynamoStore, Replacement, Transaction, built, classify, item_as, item_of, key, mapping,
    put_new, s,
};
use crate::error::StoreError;
use crate::secrets::MAX_SETS_PER_ACCOUNT;
use crate::secrets::store::{SecretSetRecord, SecretStore, SetWrite, StoredValue};

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

impl DynamoStore {
    /// The account's set counter moved by `by` (1 or -1); a new set only below the most.
    fn count_sets(&self, namespace: &str, by: i64) -> Result<TransactWriteItem, StoreError> {
        let mut update = Update::builder()
            .table_name(&self.agents_table)
            .set_key(Some(key(
                namespace_pk(namespace),
                SET_COUNTER_SK.to_owned(),
            )))
            .update_expression("SET setCount = if_not_exists(setCount, :zero) + :by")
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":by", n(by));
        if by > 0 {
            update = update
                .condition_expression("attribute_not_exists(setCount) OR setCount < :most")
                .expression_attribute_values(":most", n(MAX_SETS_PER_ACCOUNT));
        }
        Ok(TransactWriteItem::builder()
            .update(update.build().map_err(built)?)
            .build())
    }

    async fn create_set(&self, set: &SecretSetRecord) -> Result<SetWrite, StoreError> {
        let items = vec![
            put_new(&self.agents_table, &SecretSetItem::from(set))?,
            self.count_sets(&set.namespace, 1)?,
        ];
        Ok(match self.transact_racing(items).await? {
            Some(Transaction::Written) => SetWrite::Written,
            Some(Transaction::ConditionFailed { failed, .. }) if failed.contains(&0) => {
                SetWrite::Changed
            }
            Some(Transaction::ConditionFailed { .. }) => SetWrite::AccountFull,
            None => SetWrite::Changed,
        })
    }

    /// Every attribute of the set but `usedBy`, which agents' writes own (and which does not
    /// move the version, so an agent naming the set never makes this write lose its race).
    async fn replace_set(&self, read: u64, set: &SecretSetRecord) -> Result<SetWrite, StoreError> {
        let replacement =
            Replacement::of(item_of(&SecretSetItem::from(set))?, &["usedBy"], &["host"]);
        let update = self
            .client
            .update_item()
            .table_name(&self.agents_table)
            .set_key(Some(key(
                namespace_pk(&set.namespace),
                secret_set_sk(&set.name),
            )))
            .update_expression(replacement.expression)
            .set_expression_attribute_names(Some(replacement.names))
            .set_expression_attribute_values(Some(replacement.values))
            .condition_expression("#version = :read")
            .expression_attribute_names("#version", "version")
            .expression_attribute_values(":read", n(read));
        match update.send().await {
            Ok(_) => Ok(SetWrite::Written),
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(SetWrite::Changed)
            }
            Err(error) => Err(classify(error)),
        }
    }

    fn value_key(
        &self,
        namespace: &str,
        set: &str,
        key_name: &str,
        value_id: &str,
    ) -> HashMap<String, AttributeValue> {
        key(
            namespace_pk(namespace),
            secret_value_sk(set, key_name, value_id),
        )
    }
}

impl SecretStore for DynamoStore {
    async fn get_set(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<SecretSetRecord>, StoreError> {
        let output = self
            .get_item(
                &self.agents_table,
                namespace_pk(namespace),
                secret_set_sk(name),
                true,
            )
            .send()
            .await
            .map_err(classify)?;
        Ok(item_as::<SecretSetItem>(output)?.map(SecretSetRecord::from))
    }

    async fn list_sets(
        &self,
        namespace: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<SecretSetRecord>, bool), StoreError> {
        // One more than asked tells whether more follow; eventually consistent, as the agents'
        // list.
        let output = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :sets)")
            .expression_attribute_values(":pk", s(namespace_pk(namespace)))
            .expression_attribute_values(":sets", s(secret_set_sk("")))
            .set_exclusive_start_key(
                after.map(|name| key(namespace_pk(namespace), secret_set_sk(name))),
            )
            .limit(i32::try_from(limit + 1).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(classify)?;
        let sets = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| {
                serde_dynamo::from_item::<_, SecretSetItem>(item).map(SecretSetRecord::from)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(mapping)?;
        Ok(crate::paging::split_page(sets, limit))
    }

    async fn put_values(
        &self,
        namespace: &str,
        set: &str,
        values: &[StoredValue],
    ) -> Result<(), StoreError> {
        let requests = values
            .iter()
            .map(|value| {
                let item = item_of(&SecretValueItem::new(namespace, set, value))?;
                let put = PutRequest::builder()
                    .set_item(Some(item))
                    .build()
                    .map_err(built)?;
                Ok(WriteRequest::builder().put_request(put).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.batch_write(&self.agents_table, requests).await?;
        Ok(())
    }

    async fn write_set(
        &self,
        read_version: Option<u64>,
        set: &SecretSetRecord,
    ) -> Result<SetWrite, StoreError> {
        match read_version {
            None => self.create_set(set).await,
            Some(read) => self.replace_set(read, set).await,
        }
    }

    async fn delete_set(&self, set: &SecretSetRecord) -> Result<SetWrite, StoreError> {
        let delete = Delete::builder()
            .table_name(&self.agents_table)
            .set_key(Some(key(
                namespace_pk(&set.namespace),
                secret_set_sk(&set.name),
            )))
            .condition_expression("#version = :read AND attribute_not_exists(usedBy)")
            .expression_attribute_names("#version", "version")
            .expression_attribute_values(":read", n(set.version))
            .build()
            .map_err(built)?;
        let items = vec![
            TransactWriteItem::builder().delete(delete).build(),
            self.count_sets(&set.namespace, -1)?,
        ];
        Ok(match self.transact_racing(items).await? {
            Some(Transaction::Written) => SetWrite::Written,
            Some(Transaction::ConditionFailed { .. }) | None => SetWrite::Changed,
        })
    }

    async fn delete_values(
        &self,
        namespace: &str,
        set: &str,
        values: &[(String, String)],
    ) -> Result<(), StoreError> {
        let requests = values
            .iter()
            .map(|(key_name, value_id)| {
                let delete = DeleteRequest::builder()
                    .set_key(Some(self.value_key(namespace, set, key_name, value_id)))
                    .build()
                    .map_err(built)?;
                Ok(WriteRequest::builder().delete_request(delete).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.batch_write(&self.agents_table, requests).await?;
        Ok(())
    }

    async fn get_values(&self, set: &SecretSetRecord) -> Result<Vec<StoredValue>, StoreError> {
        let wanted: Vec<HashMap<String, AttributeValue>> = set
            .keys
            .iter()
            .map(|(key_name, entry)| {
                self.value_key(&set.namespace, &set.name, key_name, &entry.value_id)
            })
            .collect();
        let mut values = Vec::with_capacity(wanted.len());
        for item in self.batch_get(&self.agents_table, wanted, true).await? {
            let item: SecretValueItem = serde_dynamo::from_item(item).map_err(mapping)?;
            let value = item.into_value().ok_or_else(|| {
                StoreError::Unexpected("a sealed value's nonce is not 96 bits".into())
            })?;
            values.push(value);
        }
        values.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(values)
    }
}
