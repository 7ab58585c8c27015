//! Every agent of the table, by its keys alone: a scan, for a data plane that starts (never a
//! request's read). Only the keys are projected, so a page holds many agents.

use aws_sdk_dynamodb::types::AttributeValue;

use super::items::{agent_sk, namespace_pk};
use super::{DynamoStore, Item, classify};
use crate::agent::AgentRef;
use crate::error::StoreError;

impl DynamoStore {
    pub(super) async fn scan_agents(&self) -> Result<Vec<AgentRef>, StoreError> {
        let mut pages = self
            .client
            .scan()
            .table_name(&self.agents_table)
            .filter_expression("begins_with(sk, :agent)")
            .expression_attribute_values(":agent", AttributeValue::S(agent_sk("")))
            .projection_expression("pk, sk")
            .into_paginator()
            .send();
        let mut agents = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(classify)?;
            agents.extend(page.items().iter().filter_map(agent_of));
        }
        Ok(agents)
    }
}

/// The agent an item's keys name; none for an item of another kind.
fn agent_of(item: &Item) -> Option<AgentRef> {
    let key = |name: &str| item.get(name).and_then(|value| value.as_s().ok());
    Some(AgentRef {
        namespace: key("pk")?.strip_prefix(&namespace_pk(""))?.to_owned(),
        name: key("sk")?.strip_prefix(&agent_sk(""))?.to_owned(),
    })
}
