//! Agents, their deployment history and their idempotency records in AgentsTable
//! (layouts in [`super::items`]). Every write of an existing agent is one transaction
//! conditioned on the version it was read at.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, DeleteRequest, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update, WriteRequest,
};

use super::agent_transaction::AgentTransaction;
use super::items::{
    ACTIVE_SESSIONS, AgentItem, DeploymentItem, IDEMPOTENCY_PREFIX, IdempotencyItem, agent_sk,
    deployment_sk, deployments_prefix, namespace_pk,
};
use super::{
    DynamoStore, Item, Replacement, built, classify, item_as, item_of, key, mapping, put_new, s,
};
use crate::agent::{
    AgentPage, AgentRecord, AgentRef, AgentStore, Change, CreateOutcome, DeploymentPage,
    DeploymentRecord, SetUse, WriteOutcome,
};
use crate::error::StoreError;
use crate::idempotency::IdempotencyRecord;

/// A transaction takes at most 100 actions.
const MAX_TRANSACTION_ITEMS: usize = 100;

/// The condition every write of an existing agent is made on: the agent is still the one read
/// (the same service: an agent deleted and made again under its name is another) at the version
/// read ([`AgentRecord::is_still`], as a condition expression).
struct ReadAt {
    expression: &'static str,
    names: HashMap<String, String>,
    values: Item,
}

fn read_at(service_id: &str, version: u64) -> ReadAt {
    ReadAt {
        expression: "#version = :read AND #serviceId = :service",
        names: HashMap::from([
            ("#version".to_owned(), "version".to_owned()),
            ("#serviceId".to_owned(), "serviceId".to_owned()),
        ]),
        values: HashMap::from([
            (":read".to_owned(), AttributeValue::N(version.to_string())),
            (":service".to_owned(), s(service_id)),
        ]),
    }
}

fn agent_key(agent: &AgentRecord) -> Item {
    key(namespace_pk(&agent.owner.namespace), agent_sk(&agent.name))
}

fn delete_of(table: &str, key: Item) -> Result<TransactWriteItem, StoreError> {
    let delete = Delete::builder()
        .table_name(table)
        .set_key(Some(key))
        .build()
        .map_err(built)?;
    Ok(TransactWriteItem::builder().delete(delete).build())
}

/// The put of an idempotency record: it may replace a dead record of the same key that TTL has
/// not deleted yet, never a live one ([`IdempotencyRecord::holds_off`], as a condition); when
/// it may not, the live record comes back in the cancellation reason (no second read).
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
        let namespace = &agent.owner.namespace;
        let own = vec![
            put_new(&self.agents_table, &AgentItem::from(agent))?,
            put_new(
                &self.agents_table,
                &DeploymentItem::new(agent, &agent.active),
            )?,
        ];
        let record = idempotency
            .map(|record| put_idempotency(&self.agents_table, namespace, record))
            .transpose()?;
        let uses = SetUse::between(None, Some(agent.config()));
        const AGENT: usize = 0;
        let refusal = match self
            .transact_agent(namespace, &agent.name, own, &uses, record)
            .await?
        {
            AgentTransaction::Written => return Ok(CreateOutcome::Created),
            AgentTransaction::Raced => return Ok(CreateOutcome::Raced),
            AgentTransaction::Refused(refusal) => refusal,
        };
        // The key's record comes first: a retry of a create that landed finds both its name
        // taken and its key used, and must get the first answer back. A missing set is the
        // request's fault whether or not the name is taken.
        if let Some(found) = refusal.record {
            return Ok(CreateOutcome::KeyUsed(found_record(found)?));
        }
        if let Some(member) = refusal.set {
            return Ok(CreateOutcome::NoSuchSet(member));
        }
        if refusal.own == [AGENT] {
            return Ok(CreateOutcome::NameTaken);
        }
        // A deployment id collision (a v4 UUID): impossible in practice, never silent.
        Err(StoreError::Unexpected(
            "deployment id already stored".into(),
        ))
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

    async fn list_deployments(
        &self,
        namespace: &str,
        service_id: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<DeploymentPage, StoreError> {
        self.query_deployments(namespace, service_id, before, limit)
            .await
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
        let agents = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| serde_dynamo::from_item::<_, AgentItem>(item).map(AgentRecord::from))
            .collect::<Result<Vec<_>, _>>()
            .map_err(mapping)?;
        let (agents, more) = crate::paging::split_page(agents, limit);
        Ok(AgentPage { agents, more })
    }

    async fn every_agent(&self) -> Result<Vec<AgentRef>, StoreError> {
        self.scan_agents().await
    }

    #[tracing::instrument(skip_all, fields(namespace = %next.owner.namespace, agent = %next.name, read_version))]
    async fn write_agent(
        &self,
        read_version: u64,
        next: &AgentRecord,
        change: Change<'_>,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<WriteOutcome, StoreError> {
        let condition = read_at(&next.service_id, read_version);
        // Every attribute but the count its sessions own (an update, not a put).
        let mut replacement = Replacement::of(
            item_of(&AgentItem::from(next))?,
            &[ACTIVE_SESSIONS],
            &["serving"],
        );
        replacement.names.extend(condition.names);
        replacement.values.extend(condition.values);
        let agent = Update::builder()
            .table_name(&self.agents_table)
            .set_key(Some(agent_key(next)))
            .update_expression(replacement.expression)
            .condition_expression(condition.expression)
            .set_expression_attribute_names(Some(replacement.names))
            .set_expression_attribute_values(Some(replacement.values))
            .build()
            .map_err(built)?;
        let mut own = vec![TransactWriteItem::builder().update(agent).build()];
        let mut uses = SetUse::default();
        match change {
            Change::NewDeployment { replaced } => {
                own.push(put_new(
                    &self.agents_table,
                    &DeploymentItem::new(next, &next.active),
                )?);
                uses = SetUse::between(Some(replaced), Some(next.config()));
            }
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
                own.push(TransactWriteItem::builder().update(update).build());
            }
            Change::AnswerRecorded => {}
        }
        let namespace = &next.owner.namespace;
        let record = idempotency
            .map(|record| put_idempotency(&self.agents_table, namespace, record))
            .transpose()?;
        let refusal = match self
            .transact_agent(namespace, &next.name, own, &uses, record)
            .await?
        {
            AgentTransaction::Written => return Ok(WriteOutcome::Written),
            AgentTransaction::Raced => return Ok(WriteOutcome::Conflict),
            AgentTransaction::Refused(refusal) => refusal,
        };
        if refusal.own.contains(&0) {
            return Ok(WriteOutcome::Conflict);
        }
        if let Some(found) = refusal.record {
            return Ok(WriteOutcome::KeyUsed(found_record(found)?));
        }
        if let Some(member) = refusal.set {
            return Ok(WriteOutcome::NoSuchSet(member));
        }
        Err(StoreError::Unexpected(
            "a deployment of the agent is missing from, or already in, its history".into(),
        ))
    }

    /// One transaction: the agent (conditioned on the service and version read) and what
    /// [`DeletePlan`] puts with it; then the history that did not fit.
    #[tracing::instrument(skip_all, fields(namespace = %agent.owner.namespace, agent = %agent.name))]
    async fn delete_agent(&self, agent: &AgentRecord) -> Result<WriteOutcome, StoreError> {
        let namespace = &agent.owner.namespace;
        let history = self
            .keys_with_prefix(namespace, &deployments_prefix(&agent.service_id), None)
            .await?;
        let records = self
            .keys_with_prefix(namespace, IDEMPOTENCY_PREFIX, Some(&agent.name))
            .await?;
        let uses = SetUse::between(Some(agent.config()), None);
        let plan = DeletePlan::new(agent, history, records, uses.dropped.len());
        if !plan.before.is_empty() {
            self.batch_write(&self.agents_table, delete_requests(plan.before)?)
                .await?;
        }
        let condition = read_at(&agent.service_id, agent.version);
        let the_agent = Delete::builder()
            .table_name(&self.agents_table)
            .set_key(Some(agent_key(agent)))
            .condition_expression(condition.expression)
            .set_expression_attribute_names(Some(condition.names))
            .set_expression_attribute_values(Some(condition.values))
            .build()
            .map_err(built)?;
        let mut own = vec![TransactWriteItem::builder().delete(the_agent).build()];
        for key in plan.with_agent {
            own.push(delete_of(&self.agents_table, key)?);
        }
        match self
            .transact_agent(namespace, &agent.name, own, &uses, None)
            .await?
        {
            AgentTransaction::Written => {
                if !plan.after.is_empty() {
                    self.batch_write(&self.agents_table, delete_requests(plan.after)?)
                        .await?;
                }
                Ok(WriteOutcome::Written)
            }
            AgentTransaction::Raced | AgentTransaction::Refused(_) => Ok(WriteOutcome::Conflict),
        }
    }
}

/// What a delete removes with the agent in its one transaction, and what before or after it.
/// A reader reaches an agent's running deployments and its idempotency records through the
/// agent, so they go with it; its older history is keyed by its service, which nothing reaches
/// once the agent is gone, so what of it does not fit in the transaction goes after. Records
/// go before only when they alone do not fit (more than 97 live in 24 hours): a retry of one of
/// those requests then runs again instead of replaying, which an update, a merge, survives.
#[derive(Debug, PartialEq)]
struct DeletePlan {
    before: Vec<Item>,
    with_agent: Vec<Item>,
    after: Vec<Item>,
}

impl DeletePlan {
    /// `reserved`: the transaction's actions on other items (the sets the agent leaves).
    fn new(
        agent: &AgentRecord,
        history: Vec<Item>,
        mut records: Vec<Item>,
        reserved: usize,
    ) -> Self {
        let running: Vec<String> = std::iter::once(&agent.active.deployment.id)
            .chain(agent.serving.as_ref().map(|serving| &serving.deployment_id))
            .map(|id| deployment_sk(&agent.service_id, id))
            .collect();
        let (mut with_agent, mut older): (Vec<Item>, Vec<Item>) =
            history.into_iter().partition(|key| {
                key.get("sk")
                    .and_then(|sk| sk.as_s().ok())
                    .is_some_and(|sk| running.contains(sk))
            });
        // The agent itself takes one action.
        let room = MAX_TRANSACTION_ITEMS - 1 - reserved - with_agent.len();
        let before = records.split_off(records.len().min(room));
        let after = older.split_off(older.len().min(room - records.len()));
        with_agent.extend(records);
        with_agent.extend(older);
        DeletePlan {
            before,
            with_agent,
            after,
        }
    }
}

fn delete_requests(keys: Vec<Item>) -> Result<Vec<WriteRequest>, StoreError> {
    keys.into_iter()
        .map(|key| {
            let delete = DeleteRequest::builder()
                .set_key(Some(key))
                .build()
                .map_err(built)?;
            Ok(WriteRequest::builder().delete_request(delete).build())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::record::tests::record;

    fn keys(prefix: &str, count: usize) -> Vec<Item> {
        (0..count)
            .map(|i| key("NS#ns".into(), format!("{prefix}{i:04}")))
            .collect()
    }

    #[test]
    fn a_delete_takes_what_readers_reach_with_the_agent_and_the_rest_of_the_history_after() {
        let first = record();
        let mut agent = first.deploy(
            first.config().clone(),
            crate::manifest::DeploymentMode::Simulated,
            "2026-11-24T00:00:00.000Z",
        );
        agent.serving = Some(crate::agent::Serving {
            deployment_id: "serving".into(),
            status: crate::agent::DeploymentStatus::requested(),
        });
        let prefix = deployments_prefix(&agent.service_id);
        let mut history = keys(&prefix, 150);
        history.push(key(
            "NS#ns".into(),
            deployment_sk(&agent.service_id, &agent.active.deployment.id),
        ));
        history.push(key(
            "NS#ns".into(),
            deployment_sk(&agent.service_id, "serving"),
        ));

        let plan = DeletePlan::new(&agent, history.clone(), keys(IDEMPOTENCY_PREFIX, 20), 0);
        assert!(plan.before.is_empty());
        assert_eq!(plan.with_agent.len(), MAX_TRANSACTION_ITEMS - 1);
        let sort_keys = |items: &[Item]| -> Vec<String> {
            items
                .iter()
                .map(|item| item["sk"].as_s().unwrap().clone())
                .collect()
        };
        let with_agent = sort_keys(&plan.with_agent);
        for running in [
            deployment_sk(&agent.service_id, &agent.active.deployment.id),
            deployment_sk(&agent.service_id, "serving"),
        ] {
            assert!(with_agent.contains(&running), "{running}");
        }
        assert_eq!(
            with_agent
                .iter()
                .filter(|sk| sk.starts_with(IDEMPOTENCY_PREFIX))
                .count(),
            20,
            "every record goes with the agent"
        );
        assert_eq!(plan.after.len(), 152 + 20 - (MAX_TRANSACTION_ITEMS - 1));
        assert!(
            sort_keys(&plan.after)
                .iter()
                .all(|sk| sk.starts_with(&prefix)),
            "only older history after"
        );

        let crowded = DeletePlan::new(&agent, history, keys(IDEMPOTENCY_PREFIX, 120), 0);
        assert_eq!(crowded.before.len(), 120 - (MAX_TRANSACTION_ITEMS - 3));
        assert_eq!(crowded.with_agent.len(), MAX_TRANSACTION_ITEMS - 1);
        assert_eq!(crowded.after.len(), 150);
    }
}
