//! The promises of the agent and account ports, as checks any store runs: the in-memory store
//! and the DynamoDB adapter on DynamoDB Local both (tests/tests/store_contract.rs), so the fake
//! cannot drift from the real store. (The log port has its own on both stores:
//! tests/tests/log_order.rs.) Each check panics with what broke.

use crate::account::{self, Account, AccountStore, NewAccount};
use crate::agent::{
    AgentRecord, AgentStore, Change, ConfigChanges, CreateOutcome, DeploymentState, WriteOutcome,
};
use crate::auth::{KeyStore, Principal};
use crate::idempotency::{IdempotencyRecord, RETENTION_SECONDS};

fn owner(namespace: &str) -> Principal {
    Principal {
        account_id: format!("{namespace}-account"),
        namespace: namespace.to_owned(),
    }
}

fn agent(namespace: &str, name: &str, image: &str) -> AgentRecord {
    let body = serde_json::json!({"serviceName": name, "image": image});
    let (name, config) = ConfigChanges::from_json(body)
        .and_then(ConfigChanges::into_new_agent)
        .expect("a valid agent");
    AgentRecord::new(&owner(namespace), &name, config, "2026-11-24T10:00:00.000Z")
}

fn record(key: &str, agent: &str, written_at: i64) -> IdempotencyRecord {
    IdempotencyRecord {
        key_digest: format!("{key:0>64}"),
        fingerprint: format!("body of {key}"),
        status: 201,
        body: format!("{{\"name\":\"{agent}\"}}"),
        created_at: "2026-11-24T10:00:00.000Z".to_owned(),
        expires_at: written_at + RETENTION_SECONDS,
        agent: agent.to_owned(),
    }
}

const NOW: i64 = 1_795_000_000;

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
    let deployed = first.deploy(image_three, "2026-11-24T11:00:00.000Z");
    assert_eq!(
        store
            .write_agent(first.version, &deployed, Change::NewDeployment, None)
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

/// Accounts, their namespace claims and keys: the account port's promises, through the rules.
pub async fn accounts<S: AccountStore + KeyStore + AgentStore>(store: &S) {
    let acme = Account {
        account_id: "acme".into(),
        namespace: "acme-ns".into(),
        created_at: "2026-11-24T10:00:00.000Z".into(),
    };
    assert_eq!(
        store.create_account(&acme).await.unwrap(),
        NewAccount::Created
    );
    assert_eq!(
        store.create_account(&acme).await.unwrap(),
        NewAccount::AccountExists
    );
    let squatter = Account {
        account_id: "other".into(),
        ..acme.clone()
    };
    assert_eq!(
        store.create_account(&squatter).await.unwrap(),
        NewAccount::NamespaceTaken
    );
    assert_eq!(store.get_account("acme").await.unwrap(), Some(acme.clone()));
    assert_eq!(store.get_account("other").await.unwrap(), None);
    let bob = account::ensure_account(store, "bob", None).await.unwrap();
    assert_eq!(
        account::ensure_account(store, "bob", None).await.unwrap(),
        bob
    );
    let ids: Vec<String> = store
        .list_accounts()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.account_id)
        .collect();
    assert_eq!(ids, ["acme", "bob"]);

    // Keys: kept by hash, listed by id, revoked once.
    let (key, issued) = account::issue_key(store, "acme").await.unwrap();
    let found = store.find_key(&key.hash()).await.unwrap().unwrap();
    assert_eq!(
        (found.account_id.as_str(), found.namespace.as_str()),
        ("acme", "acme-ns")
    );
    assert_eq!(found.revoked_at, None);
    let listed = store.list_keys("acme").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].key_id, issued.key_id);
    assert!(store.list_keys("bob").await.unwrap().is_empty());
    assert!(
        !store
            .revoke_key("acme", "no-such-key", "2026-11-24T11:00:00.000Z")
            .await
            .unwrap()
    );
    for at in ["2026-11-24T11:00:00.000Z", "2026-11-24T12:00:00.000Z"] {
        assert!(store.revoke_key("acme", &issued.key_id, at).await.unwrap());
    }
    let revoked = store.find_key(&key.hash()).await.unwrap().unwrap();
    assert_eq!(
        revoked.revoked_at.as_deref(),
        Some("2026-11-24T11:00:00.000Z"),
        "revoking twice keeps the first time"
    );
    assert_eq!(
        store.list_keys("acme").await.unwrap()[0].revoked_at,
        revoked.revoked_at
    );

    // An account with agents stays; without, it goes with its keys, its namespace kept.
    let agent = agent("acme-ns", "bot", "ghcr.io/acme/agent:1.0");
    store.create_agent(&agent, None).await.unwrap();
    assert!(store.has_agents("acme-ns").await.unwrap());
    assert!(matches!(
        account::delete_account(store, "acme").await,
        Err(account::AccountError::HasAgents(_))
    ));
    store.delete_agent(&agent).await.unwrap();
    assert!(!store.has_agents("acme-ns").await.unwrap());
    let (second, _) = account::issue_key(store, "acme").await.unwrap();
    assert!(account::delete_account(store, "acme").await.unwrap());
    assert!(!account::delete_account(store, "acme").await.unwrap());
    assert_eq!(store.get_account("acme").await.unwrap(), None);
    assert_eq!(store.find_key(&second.hash()).await.unwrap(), None);
    assert!(store.list_keys("acme").await.unwrap().is_empty());
    let again = Account {
        account_id: "newcomer".into(),
        ..acme
    };
    assert_eq!(
        store.create_account(&again).await.unwrap(),
        NewAccount::NamespaceTaken,
        "a deleted account's namespace is never another's"
    );
}

fn sealed_value(key: &str, value_id: &str) -> crate::secrets::store::StoredValue {
    crate::secrets::store::StoredValue {
        key: key.to_owned(),
        value_id: value_id.to_owned(),
        sealed: crate::secrets::seal::Sealed {
            encrypted_key: format!("data key of {value_id}").into_bytes(),
            nonce: [7; 12],
            ciphertext: format!("ciphertext of {value_id}").into_bytes(),
        },
    }
}

fn secret_set(namespace: &str, name: &str, version: u64) -> crate::secrets::store::SecretSetRecord {
    crate::secrets::store::SecretSetRecord {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        set_type: crate::secrets::SetType::Secret,
        host: None,
        keys: Default::default(),
        used_by: Default::default(),
        version,
        created_at: "2026-11-24T10:00:00.000Z".to_owned(),
        updated_at: "2026-11-24T10:00:00.000Z".to_owned(),
    }
}

/// Sets written on the version read, at most 200 an account, deleted only unused; values kept
/// by (set, key, value id) and read through the set that points at them.
pub async fn secret_sets<S: crate::secrets::store::SecretStore>(store: &S) {
    use crate::secrets::store::{KeyEntry, SetWrite};
    let ns = "contract-secrets";

    // Values first, then the set that points at them.
    let value = sealed_value("OPENAI_API_KEY", "v1");
    store
        .put_values(ns, "voice", std::slice::from_ref(&value))
        .await
        .unwrap();
    let mut set = secret_set(ns, "voice", 1);
    set.keys.insert(
        value.key.clone(),
        KeyEntry {
            value_id: "v1".into(),
            bytes: 3,
            updated_at: set.updated_at.clone(),
        },
    );
    assert_eq!(
        store.write_set(None, &set).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(
        store.write_set(None, &set).await.unwrap(),
        SetWrite::Changed,
        "made once"
    );
    assert_eq!(store.get_set(ns, "voice").await.unwrap(), Some(set.clone()));
    assert_eq!(
        store.get_values(&set).await.unwrap(),
        std::slice::from_ref(&value)
    );

    // A write on a version no longer stored changes nothing.
    let mut next = set.clone();
    next.version = 2;
    next.used_by.insert("support-bot".into());
    assert_eq!(
        store.write_set(Some(1), &next).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(
        store.write_set(Some(1), &next).await.unwrap(),
        SetWrite::Changed
    );
    assert_eq!(
        store.get_set(ns, "voice").await.unwrap(),
        Some(next.clone())
    );

    // In use, at its own version: not deleted.
    assert_eq!(store.delete_set(&next).await.unwrap(), SetWrite::Changed);
    let mut unused = next.clone();
    unused.used_by.clear();
    unused.version = 3;
    assert_eq!(
        store.write_set(Some(2), &unused).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(
        store.delete_set(&next).await.unwrap(),
        SetWrite::Changed,
        "an old version"
    );

    // The list, by name, a page at a time, of this account only.
    for name in ["a-set", "b-set"] {
        assert_eq!(
            store
                .write_set(None, &secret_set(ns, name, 1))
                .await
                .unwrap(),
            SetWrite::Written
        );
    }
    store
        .write_set(None, &secret_set("contract-other", "a-set", 1))
        .await
        .unwrap();
    let (page, more) = store.list_sets(ns, None, 2).await.unwrap();
    let names: Vec<&str> = page.iter().map(|set| set.name.as_str()).collect();
    assert_eq!((names, more), (vec!["a-set", "b-set"], true));
    let (page, more) = store.list_sets(ns, Some("b-set"), 2).await.unwrap();
    let names: Vec<&str> = page.iter().map(|set| set.name.as_str()).collect();
    assert_eq!((names, more), (vec!["voice"], false));

    // Deleted unused at its version; its values go when asked, and only those.
    assert_eq!(store.delete_set(&unused).await.unwrap(), SetWrite::Written);
    assert_eq!(store.get_set(ns, "voice").await.unwrap(), None);
    store
        .delete_values(ns, "voice", &[("OPENAI_API_KEY".into(), "v1".into())])
        .await
        .unwrap();
    assert_eq!(store.get_values(&set).await.unwrap(), []);

    // At most 200 sets an account: 3 made here, one deleted.
    for i in 0..198 {
        let made = store
            .write_set(None, &secret_set(ns, &format!("s-{i:03}"), 1))
            .await
            .unwrap();
        assert_eq!(made, SetWrite::Written, "set {i}");
    }
    let full = store
        .write_set(None, &secret_set(ns, "one-more", 1))
        .await
        .unwrap();
    assert_eq!(full, SetWrite::AccountFull);
    assert_eq!(store.get_set(ns, "one-more").await.unwrap(), None);
    let (page, _) = store.list_sets("contract-other", None, 10).await.unwrap();
    assert_eq!(page.len(), 1, "another account's count is its own");
    assert_eq!(
        store
            .write_set(None, &secret_set("contract-other", "b-set", 1))
            .await
            .unwrap(),
        SetWrite::Written
    );
    // A delete frees its place.
    assert_eq!(
        store.delete_set(&secret_set(ns, "a-set", 1)).await.unwrap(),
        SetWrite::Written
    );
    assert_eq!(
        store
            .write_set(None, &secret_set(ns, "one-more", 1))
            .await
            .unwrap(),
        SetWrite::Written
    );
}
