//! Upgrading a store the first slice wrote (create and logs only, before agents had versions
//! and a deployment history) to this layout: the operator's `migrate-first-slice`.
//!
//! The first slice kept, in AgentsTable, an agent item without `kind`, `version` or `active`
//! (its active deployment by id only) and a deployment item at `DEPLOYMENT#{name}#{id}` holding
//! the manifest alone; in LogsTable, a line an item under `{namespace}/{agent}`. For each such
//! agent, in this order:
//! 1. its lines are copied into chunks under its service (`put_lines`: the same lines pack into
//!    the same chunks, so a second run writes nothing new); the old line items stay unreachable
//!    and expire by their TTL;
//! 2. one transaction writes the agent and its deployment in this layout (the configuration read
//!    back from the manifest: [`AgentConfig::from_manifest`]), conditioned on the old agent item
//!    being unchanged, and deletes the old deployment item.
//!
//! An agent whose deployment is missing or whose manifest no configuration builds is left as it
//! is and reported. Running it again migrates what is left; what is migrated is not seen again
//! (it has `kind`).

use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem};
use serde::{Deserialize, Serialize};

use super::items::{AgentItem, DeploymentItem, namespace_pk};
use super::logs::LogItem;
use super::{
    DynamoStore, Item, Transaction, built, classify, item_as, item_of, key, mapping, put_new, s,
};
use crate::agent::{AgentConfig, AgentRecord, Deployment, DeploymentRecord, DeploymentStatus};
use crate::auth::Principal;
use crate::error::StoreError;
use crate::logs::{LogLine, LogStore};
use crate::manifest::{Manifest, Replicas};

/// The first slice's agent item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FirstSliceAgentItem {
    pub pk: String,
    pub sk: String,
    pub account_id: String,
    pub namespace: String,
    pub name: String,
    pub service_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub active_deployment_id: String,
    pub auto_scaling: Replicas,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_profile: Option<String>,
}

/// The first slice's deployment item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FirstSliceDeploymentItem {
    pub pk: String,
    pub sk: String,
    pub agent_name: String,
    pub id: String,
    pub service_id: String,
    pub manifest: Manifest,
    pub created_at: String,
    pub updated_at: String,
}

pub fn first_slice_deployment_sk(agent_name: &str, deployment_id: &str) -> String {
    format!("DEPLOYMENT#{agent_name}#{deployment_id}")
}

/// The partition of an agent's lines in the first slice's LogsTable.
pub fn first_slice_log_partition(namespace: &str, agent_name: &str) -> String {
    format!("{namespace}/{agent_name}")
}

/// What a migration did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// `{namespace}/{agent}` of each agent migrated.
    pub migrated: Vec<String>,
    /// Log lines copied into chunks.
    pub lines_copied: usize,
    /// Agents left as they were, and why.
    pub refused: Vec<(String, String)>,
}

/// The agent the first slice's items describe, in this layout: version 1, its one deployment
/// active and pending (the data plane reports it again), its configuration read back from the
/// manifest; or why not.
pub fn agent_of(
    agent: &FirstSliceAgentItem,
    deployment: &FirstSliceDeploymentItem,
) -> Result<AgentRecord, String> {
    let config = AgentConfig::from_manifest(&deployment.manifest, agent.agent_profile.as_deref())
        .ok_or(
        "no configuration builds its manifest (a profile or filter this version lacks)",
    )?;
    Ok(AgentRecord {
        owner: Principal {
            account_id: agent.account_id.clone(),
            namespace: agent.namespace.clone(),
        },
        name: agent.name.clone(),
        service_id: agent.service_id.clone(),
        version: 1,
        created_at: agent.created_at.clone(),
        updated_at: agent.updated_at.clone(),
        active: DeploymentRecord {
            deployment: Deployment {
                id: deployment.id.clone(),
                manifest: deployment.manifest.clone(),
                service_id: deployment.service_id.clone(),
                created_at: deployment.created_at.clone(),
                updated_at: deployment.updated_at.clone(),
            },
            config,
            status: DeploymentStatus::requested(),
        },
        serving: None,
        active_sessions: 0,
    })
}

impl DynamoStore {
    /// Migrates every agent of the first slice's layout (see the module).
    pub async fn migrate_first_slice(&self) -> Result<MigrationReport, StoreError> {
        let mut report = MigrationReport::default();
        for agent in self.first_slice_agents().await? {
            let label = format!("{}/{}", agent.namespace, agent.name);
            let Some(deployment) = self.first_slice_deployment(&agent).await? else {
                report
                    .refused
                    .push((label, "its deployment item is missing".to_owned()));
                continue;
            };
            let record = match agent_of(&agent, &deployment) {
                Ok(record) => record,
                Err(why) => {
                    report.refused.push((label, why));
                    continue;
                }
            };
            report.lines_copied += self.copy_first_slice_lines(&agent).await?;
            match self.write_migrated(&agent, &record).await? {
                Transaction::Written => report.migrated.push(label),
                Transaction::ConditionFailed { .. } => report.refused.push((
                    label,
                    "it changed while being migrated (run the migration again)".to_owned(),
                )),
            }
        }
        Ok(report)
    }

    /// The agent items without `kind`: the first slice's.
    async fn first_slice_agents(&self) -> Result<Vec<FirstSliceAgentItem>, StoreError> {
        let mut pages = self
            .client
            .scan()
            .table_name(&self.agents_table)
            .filter_expression("begins_with(sk, :agent) AND attribute_not_exists(kind)")
            .expression_attribute_values(":agent", s("AGENT#"))
            .into_paginator()
            .items()
            .send();
        let mut agents = Vec::new();
        while let Some(item) = pages.next().await {
            let item: Item = item.map_err(classify)?;
            agents.push(serde_dynamo::from_item(item).map_err(mapping)?);
        }
        Ok(agents)
    }

    async fn first_slice_deployment(
        &self,
        agent: &FirstSliceAgentItem,
    ) -> Result<Option<FirstSliceDeploymentItem>, StoreError> {
        let output = self
            .get_item(
                &self.agents_table,
                namespace_pk(&agent.namespace),
                first_slice_deployment_sk(&agent.name, &agent.active_deployment_id),
                true,
            )
            .send()
            .await
            .map_err(classify)?;
        item_as(output)
    }

    /// Copies an agent's lines from its first-slice partition into chunks under its service,
    /// page by page (a page of the same items packs into the same chunks: idempotent).
    async fn copy_first_slice_lines(
        &self,
        agent: &FirstSliceAgentItem,
    ) -> Result<usize, StoreError> {
        let mut pages = self
            .client
            .query()
            .table_name(&self.logs_table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(
                ":pk",
                s(first_slice_log_partition(&agent.namespace, &agent.name)),
            )
            .limit(1_000)
            .into_paginator()
            .send();
        let mut copied = 0;
        while let Some(page) = pages.next().await {
            let mut by_retention: std::collections::BTreeMap<u32, Vec<LogLine>> =
                Default::default();
            for item in page.map_err(classify)?.items.unwrap_or_default() {
                let chunk = serde_dynamo::from_item::<_, LogItem>(item)
                    .map_err(mapping)?
                    .into_chunk()?;
                for line in chunk.lines()? {
                    // The retention it was written under, in whole days.
                    let seconds = (line.timestamp_nanos / 1_000_000_000) as i64;
                    let days = ((chunk.line_expires_at(line.timestamp_nanos) - seconds) / 86_400)
                        .clamp(1, i64::from(u16::MAX)) as u32;
                    by_retention.entry(days).or_default().push(LogLine {
                        service_id: agent.service_id.clone(),
                        deployment_id: chunk.deployment_id.clone(),
                        session_id: chunk.session_id.clone(),
                        event_id: line.event_id,
                        timestamp_nanos: line.timestamp_nanos,
                        text: line.text,
                    });
                }
            }
            for (days, lines) in by_retention {
                self.put_lines(&lines, days).await?;
                copied += lines.len();
            }
        }
        Ok(copied)
    }

    async fn write_migrated(
        &self,
        old: &FirstSliceAgentItem,
        record: &AgentRecord,
    ) -> Result<Transaction, StoreError> {
        let agent = Put::builder()
            .table_name(&self.agents_table)
            .set_item(Some(item_of(&AgentItem::from(record))?))
            .condition_expression("attribute_not_exists(kind) AND activeDeploymentId = :active")
            .expression_attribute_values(":active", s(&old.active_deployment_id))
            .build()
            .map_err(built)?;
        let old_deployment = Delete::builder()
            .table_name(&self.agents_table)
            .set_key(Some(key(
                namespace_pk(&old.namespace),
                first_slice_deployment_sk(&old.name, &old.active_deployment_id),
            )))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(built)?;
        self.transact(vec![
            TransactWriteItem::builder().put(agent).build(),
            put_new(
                &self.agents_table,
                &DeploymentItem::new(record, &record.active),
            )?,
            TransactWriteItem::builder().delete(old_deployment).build(),
        ])
        .await
    }
}
