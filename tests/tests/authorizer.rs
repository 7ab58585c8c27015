//! The gateway's authorizer against DynamoDB Local, and the operator's key life cycle.

use integration_tests::{TestStore, authorizer_event, bearer};

#[tokio::test]
async fn an_issued_key_is_allowed_until_it_is_revoked() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;

    let allowed = authorizer::authorize(&store.store, authorizer_event(&bearer(&key)))
        .await
        .unwrap();
    assert!(allowed.is_allowed());
    assert_eq!(allowed.context["accountId"], "acme");
    assert_eq!(allowed.context["namespace"], caller.namespace.as_str());

    shared::account::revoke_key_text(&store.store, &key)
        .await
        .unwrap();
    let denied = authorizer::authorize(&store.store, authorizer_event(&bearer(&key)))
        .await
        .unwrap();
    assert!(!denied.is_allowed());
    assert!(denied.context.is_empty());

    let keys = shared::account::AccountStore::list_keys(&store.store, "acme")
        .await
        .unwrap();
    assert_eq!(keys.len(), 1);
    assert!(keys[0].revoked_at.is_some());
}

#[tokio::test]
async fn unknown_and_malformed_headers_are_denied() {
    let store = TestStore::new().await;
    store.account_with_key("acme").await;
    for header in [
        bearer(&shared::auth::ApiKey::generate()),
        "Bearer".to_owned(),
        "Bearer ahk_short".to_owned(),
        "Token abc".to_owned(),
    ] {
        let response = authorizer::authorize(&store.store, authorizer_event(&header))
            .await
            .unwrap();
        assert!(!response.is_allowed(), "{header}");
    }
}

#[tokio::test]
async fn accounts_are_idempotent_and_namespaces_unique() {
    let store = TestStore::new().await;
    let first = shared::account::ensure_account(&store.store, "acme", None)
        .await
        .unwrap();
    let again = shared::account::ensure_account(&store.store, "acme", None)
        .await
        .unwrap();
    assert_eq!(
        first, again,
        "creating an existing account returns it unchanged"
    );
    let mut namespaces = std::collections::HashSet::from([first.namespace.clone()]);
    for index in 0..20 {
        let account = shared::account::ensure_account(&store.store, &format!("team-{index}"), None)
            .await
            .unwrap();
        assert!(shared::validation::is_dns_label(&account.namespace));
        assert!(
            namespaces.insert(account.namespace),
            "namespaces are unique"
        );
    }
    assert!(
        shared::account::ensure_account(&store.store, "Not Valid", None)
            .await
            .is_err()
    );
    assert!(
        shared::account::issue_key(&store.store, "nobody", shared::auth::KeyKind::Private)
            .await
            .is_err(),
        "keys only for existing accounts"
    );
}

#[tokio::test]
async fn only_the_hash_of_a_key_is_stored() {
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    let items = store
        .client
        .scan()
        .table_name(&store.accounts_table)
        .send()
        .await
        .unwrap();
    let dump = format!("{:?}", items.items());
    assert!(!dump.contains(key.expose()));
    assert!(dump.contains(key.hash().as_str()));
}
