//! Agents naming secret sets: the agent and secret set ports together.

use super::{agent_of, secret_set};
use crate::agent::{
    AgentRecord, AgentStore, Change, CreateOutcome, DeploymentState, SetMember, WriteOutcome,
};
use crate::secrets::SetType;
use crate::secrets::store::{SecretSetRecord, SecretStore};

fn agent_naming(namespace: &str, name: &str, secret_set: &str, pull: Option<&str>) -> AgentRecord {
    let mut body = serde_json::json!({"serviceName": name, "image": "ghcr.io/acme/agent:1.0",
        "secretSet": secret_set});
    if let Some(pull) = pull {
        body["imagePullSecretSet"] = pull.into();
    }
    agent_of(namespace, body)
}

/// The agents a set has as users, as stored.
async fn users_of<S: SecretStore>(store: &S, namespace: &str, set: &str) -> Vec<String> {
    let set = store
        .get_set(namespace, set)
        .await
        .unwrap()
        .expect("the set");
    set.used_by.into_iter().collect()
}

/// An agent names only sets of its own account, of the member's type, that exist at the moment
/// of its write; a set is deleted only while no agent's active configuration names it; a set's
/// own writes never change its users, nor do its users move its version.
pub async fn agents_naming_sets<S: AgentStore + SecretStore>(store: &S) {
    use crate::secrets::store::SetWrite;
    let ns = "contract-named-sets";
    for (name, set_type) in [
        ("env", SetType::Secret),
        ("env-2", SetType::Secret),
        ("pull", SetType::ImagePullSecret),
    ] {
        let set = SecretSetRecord {
            set_type,
            ..secret_set(ns, name, 1)
        };
        assert_eq!(
            store.write_set(None, &set).await.unwrap(),
            SetWrite::Written
        );
    }
    store
        .write_set(None, &secret_set("contract-elsewhere", "theirs", 1))
        .await
        .unwrap();

    // A set missing, of the other type, or of another account is not named; nothing is written.
    for (agent, refused) in [
        (
            agent_naming(ns, "bot", "missing", None),
            SetMember::SecretSet,
        ),
        (
            agent_naming(ns, "bot", "env", Some("env-2")),
            SetMember::ImagePullSecretSet,
        ),
        (agent_naming(ns, "bot", "pull", None), SetMember::SecretSet),
        (
            agent_naming(ns, "bot", "theirs", None),
            SetMember::SecretSet,
        ),
    ] {
        assert_eq!(
            store.create_agent(&agent, None).await.unwrap(),
            CreateOutcome::NoSuchSet(refused)
        );
    }
    assert_eq!(store.get_agent(ns, "bot").await.unwrap(), None);
    assert!(users_of(store, ns, "env").await.is_empty());

    // Named: the agent is among the set's users, and the set's version did not move.
    let bot = agent_naming(ns, "bot", "env", Some("pull"));
    assert_eq!(
        store.create_agent(&bot, None).await.unwrap(),
        CreateOutcome::Created
    );
    assert_eq!(users_of(store, ns, "env").await, ["bot"]);
    assert_eq!(users_of(store, ns, "pull").await, ["bot"]);
    let env = store.get_set(ns, "env").await.unwrap().unwrap();
    assert_eq!(
        env.version, 1,
        "an agent naming a set does not move its version"
    );

    // A set's own write, made on the version it read, keeps its users.
    let rewritten = SecretSetRecord {
        version: 2,
        used_by: Default::default(),
        ..env.clone()
    };
    assert_eq!(
        store.write_set(Some(1), &rewritten).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(users_of(store, ns, "env").await, ["bot"]);
    let env = store.get_set(ns, "env").await.unwrap().unwrap();
    assert_eq!(
        store.delete_set(&env).await.unwrap(),
        SetWrite::Changed,
        "in use"
    );

    // An update naming a missing set changes nothing; one naming another set moves the agent.
    let missing = bot.deploy(
        agent_naming(ns, "bot", "gone", Some("pull")).active.config,
        crate::manifest::DeploymentMode::Simulated,
        "2026-11-24T11:00:00.000Z",
    );
    let change = Change::NewDeployment {
        replaced: bot.config(),
    };
    assert_eq!(
        store
            .write_agent(bot.version, &missing, change, None)
            .await
            .unwrap(),
        WriteOutcome::NoSuchSet(SetMember::SecretSet)
    );
    assert_eq!(store.get_agent(ns, "bot").await.unwrap(), Some(bot.clone()));
    let moved = bot.deploy(
        agent_naming(ns, "bot", "env-2", Some("pull")).active.config,
        crate::manifest::DeploymentMode::Simulated,
        "2026-11-24T11:00:00.000Z",
    );
    assert_eq!(
        store
            .write_agent(bot.version, &moved, change, None)
            .await
            .unwrap(),
        WriteOutcome::Written
    );
    assert!(users_of(store, ns, "env").await.is_empty());
    assert_eq!(users_of(store, ns, "env-2").await, ["bot"]);
    assert_eq!(
        users_of(store, ns, "pull").await,
        ["bot"],
        "a set kept stays used"
    );

    // Unused now, the set is deleted, and then cannot be named.
    let env = store.get_set(ns, "env").await.unwrap().unwrap();
    assert_eq!(store.delete_set(&env).await.unwrap(), SetWrite::Written);
    let back = moved.deploy(
        bot.config().clone(),
        crate::manifest::DeploymentMode::Simulated,
        "2026-11-24T12:00:00.000Z",
    );
    let change = Change::NewDeployment {
        replaced: moved.config(),
    };
    assert_eq!(
        store
            .write_agent(moved.version, &back, change, None)
            .await
            .unwrap(),
        WriteOutcome::NoSuchSet(SetMember::SecretSet)
    );

    // A report changes no set; a delete takes the agent from every set it named.
    let mut ready = moved.clone();
    ready.version += 1;
    ready.active.status.state = DeploymentState::Ready;
    let status = ready.active.status.clone();
    let report = Change::Status {
        deployment_id: &ready.active.deployment.id,
        status: &status,
    };
    assert_eq!(
        store
            .write_agent(moved.version, &ready, report, None)
            .await
            .unwrap(),
        WriteOutcome::Written
    );
    assert_eq!(users_of(store, ns, "env-2").await, ["bot"]);
    assert_eq!(
        store.delete_agent(&ready).await.unwrap(),
        WriteOutcome::Written
    );
    assert!(users_of(store, ns, "env-2").await.is_empty());
    assert!(users_of(store, ns, "pull").await.is_empty());
    let pull = store.get_set(ns, "pull").await.unwrap().unwrap();
    assert_eq!(store.delete_set(&pull).await.unwrap(), SetWrite::Written);
}
