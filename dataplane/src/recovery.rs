//! What should run, read from the agents table when a data plane starts. It keeps nothing of
//! its own, and what feeds it resumes after a restart (locally the stream after its checkpoint,
//! on AWS the inbox holding only what came since), so the `Deployment Requested` events of
//! before a restart are not delivered again: without this, a restarted data plane knows no
//! deployment and stops every replica of its stack as unknown. Each agent's deployments are
//! taken again as the events that requested them.

use crate::events::ControlEvent;
use shared::agent::{AgentRecord, AgentRef, AgentStore, DeploymentRecord};
use shared::error::StoreError;

/// Why what should run could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    #[error("listing the agents: {0}")]
    List(#[source] StoreError),
    #[error("reading agent {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: String,
        #[source]
        source: StoreError,
    },
}

/// Every agent's deployments, as the events that requested them.
pub async fn what_should_run<S: AgentStore>(store: &S) -> Result<Vec<ControlEvent>, RecoveryError> {
    let agents = store.every_agent().await.map_err(RecoveryError::List)?;
    deployments(store, &agents).await
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
