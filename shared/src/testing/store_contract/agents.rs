//! The agent port's promises.

use super::{NOW, agent, record, secret_set};
use crate::agent::{AgentRef, AgentStore, Change, CreateOutcome, DeploymentState, WriteOutcome};
use crate::idempotency::RETENTION_SECONDS;
use crate::secrets::store::SecretStore;

/// Create, read, list, write under a version, delete: the agent port's promises.
pub async fn agents<S: AgentStore>(store: &S) {
    let ns = "contract-ns";
    let first = agent(ns, "bot", "ghcr.io/acme/agent:1.0");

    // A create writes the agent and its first deployment, once a name.
    assert_eq!(
        store.create_agent(&first, None).await.unwrap(),
        CreateOutcome::Created
    );
    let again = agent(ns, "bot", "ghcr.io/acme/agent:2.0");
    assert_eq!(
        store.create_agent(&again, None).await.unwrap(),
        CreateOutcome::NameTaken
    );
    assert_eq!(
        store.get_agent(ns, "bot").await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(store.get_agent("other-ns", "bot").await.unwrap(), None);
    let kept = store
        .get_deployment(ns, &first.service_id, &first.active.deployment.id)
        .await
        .unwrap()
        .expect("the first deployment is in the history");
    assert_eq!(kept, first.active);

    // A key's record goes with the create; a live one is found, not replaced.
    let keyed = agent(ns, "keyed", "ghcr.io/acme/agent:1.0");
    let key = record("a", "keyed", NOW);
    assert_eq!(
        store.create_agent(&keyed, Some(&key)).await.unwrap(),
        CreateOutcome::Created
    );
    let retry = agent(ns, "keyed-again", "ghcr.io/acme/agent:1.0");
    let later = record("a", "keyed-again", NOW + 60);
    assert_eq!(
        store.create_agent(&retry, Some(&later)).await.unwrap(),
        CreateOutcome::KeyUsed(key.clone())
    );
    assert_eq!(store.get_agent(ns, "keyed-again").await.unwrap(), None);
    // Past its 24 hours (TTL may not have deleted it yet), a record is replaced.
    let next_day = record("a", "keyed-again", NOW + RETENTION_SECONDS);
    assert_eq!(
        store.create_agent(&retry, Some(&next_day)).await.unwrap(),
        CreateOutcome::Created
    );

    // Writes are made on the version read, of the agent read.
    let image_three = agent(ns, "bot", "ghcr.io/acme/agent:3.0").active.config;
    let deployed = first.deploy(
        image_three,
        crate::manifest::DeploymentMode::Simulated,
        "2026-11-24T11:00:00.000Z",
    );
    assert_eq!(
        store
            .write_agent(
                first.version,
                &deployed,
                Change::NewDeployment {
                    replaced: first.config()
                },
                None
            )
            .await
            .unwrap(),
        WriteOutcome::Written
    );
    let stale = first.next_version();
    assert_eq!(
        store
            .write_agent(first.version, &stale, Change::AnswerRecorded, None)
            .await
            .unwrap(),
        WriteOutcome::Conflict,
        "a version read before the last write"
    );
    let mut ready = deployed.clone();
    ready.version += 1;
    ready.active.status.state = DeploymentState::Ready;
    let status = ready.active.status.clone();
    assert_eq!(
        store
            .write_agent(
                deployed.version,
                &ready,
                Change::Status {
                    deployment_id: &ready.active.deployment.id,
                    status: &status,
                },
                None,
            )
            .await
            .unwrap(),
        WriteOutcome::Written
    );
    let history = store
        .get_deployment(ns, &ready.service_id, &ready.active.deployment.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(history.status, status, "the history's copy follows");
    let answered = record("b", "bot", NOW);
    let touched = ready.next_version();
    assert_eq!(
        store
            .write_agent(
                ready.version,
                &touched,
                Change::AnswerRecorded,
                Some(&answered)
            )
            .await
            .unwrap(),
        WriteOutcome::Written
    );
    let retried = touched.next_version();
    assert_eq!(
        store
            .write_agent(
                touched.version,
                &retried,
                Change::AnswerRecorded,
                Some(&record("b", "bot", NOW + 5)),
            )
            .await
            .unwrap(),
        WriteOutcome::KeyUsed(answered),
        "nothing is written when the key is used"
    );
    assert_eq!(
        store.get_agent(ns, "bot").await.unwrap(),
        Some(touched.clone())
    );

    // The list: by name, a page at a time.
    let page = store.list_agents(ns, None, 2).await.unwrap();
    let names: Vec<&str> = page.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!((names, page.more), (vec!["bot", "keyed"], true));
    let rest = store.list_agents(ns, Some("keyed"), 2).await.unwrap();
    let names: Vec<&str> = rest.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!((names, rest.more), (vec!["keyed-again"], false));

    // A delete is made on the version read; then the agent, its history and its records go,
    // and nothing of another agent.
    assert_eq!(
        store.delete_agent(&ready).await.unwrap(),
        WriteOutcome::Conflict
    );
    assert!(store.get_agent(ns, "bot").await.unwrap().is_some());
    assert_eq!(
        store.delete_agent(&touched).await.unwrap(),
        WriteOutcome::Written
    );
    assert_eq!(store.get_agent(ns, "bot").await.unwrap(), None);
    for deployment in [&first.active.deployment.id, &ready.active.deployment.id] {
        assert_eq!(
            store
                .get_deployment(ns, &first.service_id, deployment)
                .await
                .unwrap(),
            None
        );
    }
    let remade = agent(ns, "bot", "ghcr.io/acme/agent:1.0");
    assert_eq!(
        store
            .create_agent(&remade, Some(&record("b", "bot", NOW + 10)))
            .await
            .unwrap(),
        CreateOutcome::Created,
        "the deleted agent's record went with it"
    );
    assert_eq!(
        store
            .write_agent(
                touched.version,
                &touched.next_version(),
                Change::AnswerRecorded,
                None
            )
            .await
            .unwrap(),
        WriteOutcome::Conflict,
        "a version of the deleted agent is not the agent made again"
    );
    assert!(store.get_agent(ns, "keyed").await.unwrap().is_some());
}

/// Every agent of every namespace is listed by reference, once, and nothing else of the table:
/// not a deployment, a key's record, a set or an account.
pub async fn every_agent<S: AgentStore + SecretStore>(store: &S) {
    assert_eq!(store.every_agent().await.unwrap(), []);
    let mut made = Vec::new();
    for (namespace, name) in [("ns-a", "voice"), ("ns-a", "video"), ("ns-b", "voice")] {
        let made_agent = agent(namespace, name, "ghcr.io/acme/agent:1.0");
        let key = record(&format!("{namespace}{name}"), name, NOW);
        assert_eq!(
            store.create_agent(&made_agent, Some(&key)).await.unwrap(),
            CreateOutcome::Created
        );
        made.push(made_agent);
    }
    let deployed = made[0].deploy(
        made[0].config().clone(),
        crate::manifest::DeploymentMode::Simulated,
        "2026-11-24T11:00:00.000Z",
    );
    let change = Change::NewDeployment {
        replaced: made[0].config(),
    };
    store.write_agent(1, &deployed, change, None).await.unwrap();
    store
        .write_set(None, &secret_set("ns-a", "voice-env", 1))
        .await
        .unwrap();
    let listed = |mut agents: Vec<AgentRef>| {
        agents.sort();
        agents
    };
    let reference = |namespace: &str, name: &str| AgentRef {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    };
    assert_eq!(
        listed(store.every_agent().await.unwrap()),
        [
            reference("ns-a", "video"),
            reference("ns-a", "voice"),
            reference("ns-b", "voice")
        ]
    );
    assert_eq!(
        store.delete_agent(&made[1]).await.unwrap(),
        WriteOutcome::Written
    );
    assert_eq!(
        listed(store.every_agent().await.unwrap()),
        [reference("ns-a", "voice"), reference("ns-b", "voice")]
    );
}
