//! Agents, their deployment history and their idempotency records in AgentsTable
//! (layouts in [`super::items`]). Every write of an existing agent is one transaction
//! conditioned on the version it was read at.

use aws_sdk_dynamodb::types::{
    AttributeValue, DeleteRequest, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update, WriteRequest,
};

use super::items::{
    AgentItem, DeploymentItem, IDEMPOTENCY_PREFIX, IdempotencyItem, agent_sk, deployment_sk,
    deployments_prefix, namespace_pk,
};
use super::{
    DynamoStore, Item, Transaction, built, classify, item_as, item_of, key, mapping, put_new, s,
};
use crate::agent::{
    AgentPage, AgentRecord, AgentStore, Change, CreateOutcome, DeploymentRecord, WriteOutcome,
};
use crate::error::StoreError;
use crate::idempotency::IdempotencyRecord;

fn version(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// The put of an idempotency record: it may replace a dead record of the same key that TTL has
/// not deleted yet, never a live one; when it may not, the live record comes back in the
/// cancellation reason (no second read).
fn put_idempotency(
    table: &str,
    namespace: &str,
    record: &IdempotencyRecord,
) -> Result<Put, StoreError> {
    Put::builder()
        .table_name(table)
        .set_item(Some(item_of(&IdempotencyItem::new(namespace, record))?))
        .condition_expression("attribute_not_exists(pk) OR #expiresAt <= :now")
        .expression_attribute_names("#expiresAt", "expiresAt")
        .expression_attribute_values(":now", AttributeValue::N(record.written_at().to_string()))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(built)
}

/// The record a failed idempotency condition returned.
fn found_record(found: Option<Item>) -> Result<IdempotencyRecord, StoreError> {
    let item = found.ok_or_else(|| {
        StoreError::Unexpected("the failed idempotency condition returned no item".into())
    })?;
    let record: IdempotencyItem = serde_dynamo::from_item(item).map_err(mapping)?;
    Ok(record.into())
}

impl DynamoStore {
    /// The keys of a partition's items whose sort key starts with `prefix`, optionally only
    /// those of idempotency records for `agent`.
    async fn keys_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        agent: Option<&str>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut query = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(namespace_pk(namespace)))
            .expression_attribute_values(":prefix", s(prefix))
            .projection_expression("pk, sk")
            .consistent_read(true);
        if let Some(agent) = agent {
            query = query
                .filter_expression("#agentName = :agent")
                .expression_attribute_names("#agentName", "agentName")
                .expression_attribute_values(":agent", s(agent));
        }
        let mut pages = query.into_paginator().send();
        let mut keys = Vec::new();
        while let Some(page) = pages.next().await {
            keys.extend(page.map_err(classify)?.items.unwrap_or_default());
        }
        Ok(keys)
    }
}

impl AgentStore for DynamoStore {
    #[tracing::instrument(skip_all, fields(namespace = %agent.owner.namespace, agent = %agent.name))]
    async fn create_agent(
        &self,
        agent: &AgentRecord,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<CreateOutcome, StoreError> {
        let mut items = vec![
            put_new(&self.agents_table, &AgentItem::from(agent))?,
            put_new(
                &self.agents_table,
                &DeploymentItem::new(agent, &agent.active),
            )?,
        ];
        if let Some(record) = idempotency {
            let put = put_idempotency(&self.agents_table, &agent.owner.namespace, record)?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        const AGENT: usize = 0;
        const IDEMPOTENCY: usize = 2;
        match self.transact(items).await? {
            Transaction::Written => Ok(CreateOutcome::Created),
            // The key's record comes first: a retry of a create that landed finds both its
            // name taken and its key used, and must get the first answer back.
            Transaction::ConditionFailed { failed, mut found } if failed.contains(&IDEMPOTENCY) => {
                Ok(CreateOutcome::KeyUsed(found_record(
                    found.get_mut(IDEMPOTENCY).and_then(Option::take),
                )?))
            }
            Transaction::ConditionFailed { failed, .. } if failed == [AGENT] => {
                Ok(CreateOutcome::NameTaken)
            }
            // A deployment id collision (a v4 UUID): impossible in practice, never silent.
            Transaction::ConditionFailed { .. } => Err(StoreError::Unexpected(
                "deployment id already stored".into(),
            )),
        }
    }

    async fn get_agent(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<AgentRecord>, StoreError> {
        let item: Option<AgentItem> = item_as(
            self.get_item(
                &self.agents_table,
                namespace_pk(namespace),
                agent_sk(name),
                true,
            )
            .send()
            .await
            .map_err(classify)?,
        )?;
        Ok(item.map(AgentRecord::from))
    }

    async fn get_deployment(
        &self,
        namespace: &str,
        service_id: &str,
        deployment_id: &str,
    ) -> Result<Option<DeploymentRecord>, StoreError> {
        let item: Option<DeploymentItem> = item_as(
            self.get_item(
                &self.agents_table,
                namespace_pk(namespace),
                deployment_sk(service_id, deployment_id),
                true,
            )
            .send()
            .await
            .map_err(classify)?,
        )?;
        Ok(item.map(DeploymentRecord::from))
    }

    async fn list_agents(
        &self,
        namespace: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<AgentPage, StoreError> {
        // One more than asked tells whether more follow. Eventually consistent: half the read
        // units, and a list is not read-after-write.
        let output = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :agents)")
            .expression_attribute_values(":pk", s(namespace_pk(namespace)))
            .expression_attribute_values(":agents", s(agent_sk("")))
            .set_exclusive_start_key(after.map(|name| key(namespace_pk(namespace), agent_sk(name))))
            .limit(i32::try_from(limit + 1).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(classify)?;
        let mut agents = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| serde_dynamo::from_item::<_, AgentItem>(item).map(AgentRecord::from))
            .collect::<Result<Vec<_>, _>>()
            .map_err(mapping)?;
        let more = agents.len() > limit;
        agents.truncate(limit);
        Ok(AgentPage { agents, more })
    }

    #[tracing::instrument(skip_all, fields(namespace = %next.owner.namespace, agent = %next.name, read_version))]
    async fn write_agent(
        &self,
        read_version: u64,
        next: &AgentRecord,
        change: Change<'_>,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<WriteOutcome, StoreError> {
        let agent = Put::builder()
            .table_name(&self.agents_table)
            .set_item(Some(item_of(&AgentItem::from(next))?))
            .condition_expression("#version = :read")
            .expression_attribute_names("#version", "version")
            .expression_attribute_values(":read", version(read_version))
            .build()
            .map_err(built)?;
        let mut items = vec![TransactWriteItem::builder().put(agent).build()];
        match change {
            Change::NewDeployment => items.push(put_new(
                &self.agents_table,
                &DeploymentItem::new(next, &next.active),
            )?),
            Change::Status {
                deployment_id,
                status,
            } => {
                let update = Update::builder()
                    .table_name(&self.agents_table)
                    .set_key(Some(key(
                        namespace_pk(&next.owner.namespace),
                        deployment_sk(&next.service_id, deployment_id),
                    )))
                    .update_expression("SET #status = :status")
                    .condition_expression("attribute_exists(pk)")
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(
                        ":status",
                        AttributeValue::M(serde_dynamo::to_item(status).map_err(mapping)?),
                    )
                    .build()
                    .map_err(built)?;
                items.push(TransactWriteItem::builder().update(update).build());
            }
        }
        let idempotency_at = items.len();
        if let Some(record) = idempotency {
            let put = put_idempotency(&self.agents_table, &next.owner.namespace, record)?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        match self.transact(items).await? {
            Transaction::Written => Ok(WriteOutcome::Written),
            Transaction::ConditionFailed { failed, .. } if failed.contains(&0) => {
                Ok(WriteOutcome::Conflict)
            }
            Transaction::ConditionFailed { failed, mut found }
                if idempotency.is_some() && failed == [idempotency_at] =>
            {
                Ok(WriteOutcome::KeyUsed(found_record(
                    found.get_mut(idempotency_at).and_then(Option::take),
                )?))
            }
            Transaction::ConditionFailed { .. } => Err(StoreError::Unexpected(
                "a deployment of the agent is missing from, or already in, its history".into(),
            )),
        }
    }

    async fn record_answer(
        &self,
        namespace: &str,
        record: &IdempotencyRecord,
    ) -> Result<WriteOutcome, StoreError> {
        let put = put_idempotency(&self.agents_table, namespace, record)?;
        match self
            .transact(vec![TransactWriteItem::builder().put(put).build()])
            .await?
        {
            Transaction::Written => Ok(WriteOutcome::Written),
            Transaction::ConditionFailed { mut found, .. } => Ok(WriteOutcome::KeyUsed(
                found_record(found.get_mut(0).and_then(Option::take))?,
            )),
        }
    }

    #[tracing::instrument(skip_all, fields(namespace = %agent.owner.namespace, agent = %agent.name))]
    async fn delete_agent(&self, agent: &AgentRecord) -> Result<WriteOutcome, StoreError> {
        let namespace = &agent.owner.namespace;
        let mut keys = self
            .keys_with_prefix(namespace, &deployments_prefix(&agent.service_id), None)
            .await?;
        keys.extend(
            self.keys_with_prefix(namespace, IDEMPOTENCY_PREFIX, Some(&agent.name))
                .await?,
        );
        let deletes = keys
            .into_iter()
            .map(|key| {
                let delete = DeleteRequest::builder()
                    .set_key(Some(key))
                    .build()
                    .map_err(built)?;
                Ok(WriteRequest::builder().delete_request(delete).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.batch_write(&self.agents_table, deletes).await?;
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.agents_table)
            .set_key(Some(key(namespace_pk(namespace), agent_sk(&agent.name))))
            .condition_expression("#version = :read")
            .expression_attribute_names("#version", "version")
            .expression_attribute_values(":read", version(agent.version))
            .send()
            .await;
        match deleted {
            Ok(_) => Ok(WriteOutcome::Written),
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|error| error.is_conditional_check_failed_exception()) =>
            {
                Ok(WriteOutcome::Conflict)
            }
            Err(error) => Err(classify(error)),
        }
    }
}
