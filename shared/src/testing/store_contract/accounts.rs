//! The account port's promises, through the account rules.

use super::agent;
use crate::account::{self, Account, AccountStore, NewAccount};
use crate::agent::AgentStore;
use crate::auth::{KeyKind, KeyStore};

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

    // Keys: kept by hash with their kind, listed by id, revoked once.
    let (key, issued) = account::issue_key(store, "acme", KeyKind::Private)
        .await
        .unwrap();
    let found = store.find_key(&key.hash()).await.unwrap().unwrap();
    assert_eq!(
        (
            found.account_id.as_str(),
            found.namespace.as_str(),
            found.kind
        ),
        ("acme", "acme-ns", KeyKind::Private)
    );
    assert_eq!(found.revoked_at, None);
    let listed = store.list_keys("acme").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (&listed[0].key_id, listed[0].kind),
        (&issued.key_id, KeyKind::Private)
    );
    assert!(store.list_keys("bob").await.unwrap().is_empty());
    assert_eq!(
        (listed[0].name.as_str(), listed[0].hint.as_str()),
        ("operator", &key.expose()[..8]),
        "the operator command's keys are named so"
    );
    assert_eq!(
        store
            .revoke_key("acme", "no-such-key", "2026-11-24T11:00:00.000Z")
            .await
            .unwrap(),
        None
    );
    for at in ["2026-11-24T11:00:00.000Z", "2026-11-24T12:00:00.000Z"] {
        assert_eq!(
            store
                .revoke_key("acme", &issued.key_id, at)
                .await
                .unwrap()
                .as_deref(),
            Some("2026-11-24T11:00:00.000Z")
        );
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
    let (second, issued) = account::issue_key(store, "acme", KeyKind::Public)
        .await
        .unwrap();
    assert_eq!(second.kind(), KeyKind::Public);
    let found = store.find_key(&second.hash()).await.unwrap().unwrap();
    assert_eq!(found.kind, KeyKind::Public);
    let listed = store.list_keys("acme").await.unwrap();
    assert_eq!(
        listed
            .iter()
            .find(|key| key.key_id == issued.key_id)
            .map(|key| key.kind),
        Some(KeyKind::Public)
    );
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
