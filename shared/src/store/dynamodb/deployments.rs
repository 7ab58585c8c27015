//! A service's deployment history, a page at a time: its items (`DEPLOYMENT#{serviceId}#{id}`,
//! [`super::items`]) sort by id within the account's partition, so one Query read backwards
//! lists them greatest id first (newest first: ids are UUIDv7).

use super::items::{DeploymentItem, deployment_sk, deployments_prefix, namespace_pk};
use super::{DynamoStore, classify, key, mapping, s};
use crate::agent::{DeploymentPage, DeploymentRecord};
use crate::error::StoreError;

impl DynamoStore {
    /// [`crate::agent::AgentStore::list_deployments`]: one Query, `limit + 1` items (the extra
    /// one says whether more follow), from after `before` when given.
    pub(super) async fn query_deployments(
        &self,
        namespace: &str,
        service_id: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<DeploymentPage, StoreError> {
        // Strongly consistent: the agent was read so, and its active deployment, written in the
        // same transaction, must be on the first page.
        let output = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(namespace_pk(namespace)))
            .expression_attribute_values(":prefix", s(deployments_prefix(service_id)))
            .set_exclusive_start_key(
                before.map(|id| key(namespace_pk(namespace), deployment_sk(service_id, id))),
            )
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(i32::try_from(limit + 1).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(classify)?;
        // A Query stops at 1 MB too: a page cut short by size still says more follow.
        let cut_short = output.last_evaluated_key.is_some();
        let deployments = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| {
                serde_dynamo::from_item::<_, DeploymentItem>(item).map(DeploymentRecord::from)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(mapping)?;
        let (deployments, more) = crate::paging::split_page(deployments, limit);
        Ok(DeploymentPage {
            more: more || (cut_short && !deployments.is_empty()),
            deployments,
        })
    }
}
