//! The agent port's promise of a deployment history read a page at a time.

use super::agent;
use crate::agent::{AgentRecord, AgentStore, Change, CreateOutcome, WriteOutcome};

/// `agent` deployed again with `image`, written.
async fn deploy<S: AgentStore>(store: &S, agent: &AgentRecord, image: &str) -> AgentRecord {
    let config = super::agent(&agent.owner.namespace, &agent.name, image)
        .active
        .config;
    let next = agent.deploy(
        config,
        crate::manifest::DeploymentMode::Simulated,
        "2026-11-24T11:00:00.000Z",
    );
    let change = Change::NewDeployment {
        replaced: agent.config(),
    };
    assert_eq!(
        store
            .write_agent(agent.version, &next, change, None)
            .await
            .unwrap(),
        WriteOutcome::Written
    );
    next
}

fn ids(page: &crate::agent::DeploymentPage) -> Vec<&str> {
    page.deployments
        .iter()
        .map(|record| record.deployment.id.as_str())
        .collect()
}

/// A service's deployments come newest first, each as kept, a page at a time, and none of
/// another service's.
pub async fn deployment_history<S: AgentStore>(store: &S) {
    let ns = "history-ns";
    let first = agent(ns, "bot", "ghcr.io/acme/agent:1.0");
    assert_eq!(
        store.create_agent(&first, None).await.unwrap(),
        CreateOutcome::Created
    );
    let second = deploy(store, &first, "ghcr.io/acme/agent:2.0").await;
    let third = deploy(store, &second, "ghcr.io/acme/agent:3.0").await;
    // Another agent of the account, and an agent of the same name in another account.
    let neighbour = agent(ns, "other", "ghcr.io/acme/agent:1.0");
    store.create_agent(&neighbour, None).await.unwrap();
    deploy(store, &neighbour, "ghcr.io/acme/agent:2.0").await;
    let elsewhere = agent("history-elsewhere", "bot", "ghcr.io/acme/agent:1.0");
    store.create_agent(&elsewhere, None).await.unwrap();

    let service = first.service_id.as_str();
    let newest_first = [
        third.active.deployment.id.as_str(),
        second.active.deployment.id.as_str(),
        first.active.deployment.id.as_str(),
    ];
    let whole = store
        .list_deployments(ns, service, None, 100)
        .await
        .unwrap();
    assert_eq!(ids(&whole), newest_first, "newest first, the service's own");
    assert!(!whole.more);
    assert_eq!(whole.deployments[0], third.active, "each as kept");
    assert_eq!(whole.deployments[2], first.active);

    let page = store.list_deployments(ns, service, None, 2).await.unwrap();
    assert_eq!((ids(&page), page.more), (newest_first[..2].to_vec(), true));
    let rest = store
        .list_deployments(ns, service, Some(newest_first[1]), 2)
        .await
        .unwrap();
    assert_eq!((ids(&rest), rest.more), (newest_first[2..].to_vec(), false));
    let exact = store.list_deployments(ns, service, None, 3).await.unwrap();
    assert_eq!((exact.deployments.len(), exact.more), (3, false));

    assert_eq!(
        store
            .list_deployments("history-elsewhere", service, None, 100)
            .await
            .unwrap(),
        Default::default(),
        "the service's history is its account's"
    );
    let theirs = store
        .list_deployments(ns, &neighbour.service_id, None, 100)
        .await
        .unwrap();
    assert_eq!(theirs.deployments.len(), 2);
    assert!(
        theirs
            .deployments
            .iter()
            .all(|record| record.deployment.service_id == neighbour.service_id)
    );

    // A deleted agent's history goes with it.
    let current = store.get_agent(ns, "bot").await.unwrap().unwrap();
    assert_eq!(
        store.delete_agent(&current).await.unwrap(),
        WriteOutcome::Written
    );
    assert_eq!(
        store
            .list_deployments(ns, service, None, 100)
            .await
            .unwrap(),
        Default::default()
    );
}
