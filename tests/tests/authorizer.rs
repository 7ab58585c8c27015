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

    store.store.revoke_key_text(&key).await.unwrap();
    let denied = authorizer::authorize(&store.store, authorizer_event(&bearer(&key)))
        .await
        .unwrap();
    assert!(!denied.is_allowed());
    assert!(denied.context.is_empty());

    let keys = store.store.list_keys("acme").await.unwrap();
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
    let first = store.store.ensure_account("acme").await.unwrap();
    let again = store.store.ensure_account("acme").await.unwrap();
    assert_eq!(
        first, again,
        "creating an existing account returns it unchanged"
    );
    let mut namespaces = std::collections::HashSet::from([first.namespace.clone()]);
    for index in 0..20 {
        let account = store
            .store
            .ensure_account(&format!("team-{index}"))
            .await
            .unwrap();
        assert!(shared::validation::is_dns_label(&account.namespace));
        assert!(
            namespaces.insert(account.namespace),
            "namespaces are unique"
        );
    }
    assert!(store.store.ensure_account("Not Valid").await.is_err());
    assert!(
        store.store.issue_key("nobody").await.is_err(),
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
