//! What should run, read from the agents table when a data plane starts. It keeps nothing of
//! its own, and what feeds it resumes after a restart (locally the stream after its checkpoint,
//! on AWS the inbox holding only what came since), so the `Deployment Requested` events of
//! before a restart are not delivered again: without this, a restarted data plane knows no
//! deployment and stops every replica of its stack as unknown. Each agent's deployments are
//! taken again as the events that requested them.

use crate::events::{AgentRef, ControlEvent};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use shared::agent::{AgentRecord, AgentStore, DeploymentRecord};
use shared::error::StoreError;
use shared::store::dynamodb::items;

/// A scan's failure, as the SDK gives it.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why what should run could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    #[error("scanning table {table} for agents: {source}")]
    Scan {
        table: String,
        #[source]
        source: BoxError,
    },
    #[error("reading agent {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: String,
        #[source]
        source: StoreError,
    },
}

/// Every agent's deployments as the events that requested them, read from `table`.
pub async fn what_should_run<S: AgentStore>(
    client: &Client,
    table: &str,
    store: &S,
) -> Result<Vec<ControlEvent>, RecoveryError> {
    deployments(store, &agents(client, table).await?).await
}

/// The agents of the table, every namespace's: their keys alone.
pub async fn agents(client: &Client, table: &str) -> Result<Vec<AgentRef>, RecoveryError> {
    let scan_failed = |source: BoxError| RecoveryError::Scan {
        table: table.to_owned(),
        source,
    };
    let mut pages = client
        .scan()
        .table_name(table)
        .filter_expression("begins_with(sk, :agent)")
        .expression_attribute_values(":agent", AttributeValue::S(items::agent_sk("")))
        .projection_expression("pk, sk")
        .into_paginator()
        .send();
    let mut agents = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|error| scan_failed(error.into()))?;
        agents.extend(page.items().iter().filter_map(agent_of));
    }
    Ok(agents)
}

/// The agent an item's keys name; none for an item of another kind.
fn agent_of(item: &std::collections::HashMap<String, AttributeValue>) -> Option<AgentRef> {
    let key = |name: &str| item.get(name).and_then(|value| value.as_s().ok());
    Some(AgentRef {
        namespace: key("pk")?
            .strip_prefix(&items::namespace_pk(""))?
            .to_owned(),
        name: key("sk")?.strip_prefix(&items::agent_sk(""))?.to_owned(),
    })
}

/// Each agent's serving deployment (when it has one), then its active one: the later request
/// makes the active one the agent's active, the serving one running until it is ready. An agent
/// gone since it was listed has none.
pub async fn deployments<S: AgentStore>(
    store: &S,
    agents: &[AgentRef],
) -> Result<Vec<ControlEvent>, RecoveryError> {
    let mut events = Vec::new();
    for agent in agents {
        let read_failed = |source| RecoveryError::Read {
            namespace: agent.namespace.clone(),
            name: agent.name.clone(),
            source,
        };
        let Some(record) = store
            .get_agent(&agent.namespace, &agent.name)
            .await
            .map_err(read_failed)?
        else {
            continue;
        };
        if let Some(serving) = serving(store, &record).await.map_err(read_failed)? {
            events.push(requested(agent, &record, serving));
        }
        events.push(requested(agent, &record, record.active.clone()));
    }
    Ok(events)
}

/// The deployment the agent still serves from, kept in its history.
async fn serving<S: AgentStore>(
    store: &S,
    record: &AgentRecord,
) -> Result<Option<DeploymentRecord>, StoreError> {
    let Some(serving) = &record.serving else {
        return Ok(None);
    };
    let (namespace, service) = (&record.owner.namespace, &record.service_id);
    let found = store
        .get_deployment(namespace, service, &serving.deployment_id)
        .await?;
    if found.is_none() {
        tracing::warn!(
            namespace = %namespace,
            agent = %record.name,
            deployment_id = %serving.deployment_id,
            "the serving deployment is not in the agent's history: not recovered"
        );
    }
    Ok(found)
}

fn requested(agent: &AgentRef, record: &AgentRecord, deployment: DeploymentRecord) -> ControlEvent {
    ControlEvent::DeploymentRequested {
        agent: agent.clone(),
        service_id: record.service_id.clone(),
        deployment_id: deployment.deployment.id,
        manifest: Box::new(deployment.deployment.manifest),
    }
}
