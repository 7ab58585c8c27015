//! The people's promises on a store: a person is tied to one account, found by `sub`, listed by
//! account, removed, and an account with people is not deleted.

use crate::account::{self, AccountError, AccountStore};
use crate::auth::{KeyStore, PersonRecord};

fn person(person_id: &str, account_id: &str, email: &str) -> PersonRecord {
    PersonRecord {
        person_id: person_id.to_owned(),
        account_id: account_id.to_owned(),
        // The rule keeps the account's namespace, whatever is given.
        namespace: "ignored".to_owned(),
        email: email.to_owned(),
        created_at: "2026-11-26T14:00:00.000Z".to_owned(),
    }
}

/// People, through the rules.
pub async fn people<S: AccountStore + KeyStore>(store: &S) {
    account::ensure_account(store, "alpha", Some("alpha-ns"))
        .await
        .unwrap();
    account::ensure_account(store, "beta", Some("beta-ns"))
        .await
        .unwrap();
    assert_eq!(store.find_person("sub-a1").await.unwrap(), None);

    let a1 = person("sub-a1", "alpha", "a1@example.test");
    account::add_person(store, &a1).await.unwrap();
    let found = store.find_person("sub-a1").await.unwrap().unwrap();
    assert_eq!(
        found,
        PersonRecord {
            namespace: "alpha-ns".into(),
            ..a1.clone()
        }
    );
    // Again for the same account: harmless, nothing changes.
    account::add_person(store, &a1).await.unwrap();
    // For another account: refused, the first account keeps them.
    assert!(matches!(
        account::add_person(store, &person("sub-a1", "beta", "a1@example.test")).await,
        Err(AccountError::PersonTaken(id)) if id == "sub-a1"
    ));
    assert_eq!(
        store
            .find_person("sub-a1")
            .await
            .unwrap()
            .unwrap()
            .account_id,
        "alpha"
    );
    assert!(matches!(
        account::add_person(store, &person("sub-x", "nobody", "x@example.test")).await,
        Err(AccountError::NoAccount(_))
    ));
    assert_eq!(store.find_person("sub-x").await.unwrap(), None);

    account::add_person(store, &person("sub-a2", "alpha", "a2@example.test"))
        .await
        .unwrap();
    account::add_person(store, &person("sub-b1", "beta", "b1@example.test"))
        .await
        .unwrap();
    let listed = store.list_people("alpha").await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|p| p.person_id.as_str()).collect();
    assert_eq!(ids, ["sub-a1", "sub-a2"]);
    assert_eq!(listed[0], found);
    assert_eq!(listed[1].namespace, "alpha-ns");
    assert_eq!(listed[1].email, "a2@example.test");
    assert_eq!(store.list_people("beta").await.unwrap().len(), 1);

    // An account with people stays.
    assert!(matches!(
        account::delete_account(store, "beta").await,
        Err(AccountError::HasPeople(id)) if id == "beta"
    ));
    assert!(store.get_account("beta").await.unwrap().is_some());

    // Removed: no longer found nor listed; removing twice is harmless.
    account::remove_person(store, "sub-b1").await.unwrap();
    account::remove_person(store, "sub-b1").await.unwrap();
    assert_eq!(store.find_person("sub-b1").await.unwrap(), None);
    assert!(store.list_people("beta").await.unwrap().is_empty());
    assert!(account::delete_account(store, "beta").await.unwrap());
    // Once removed, a person may be tied to another account.
    account::add_person(store, &person("sub-b1", "alpha", "b1@example.test"))
        .await
        .unwrap();
    assert_eq!(store.list_people("alpha").await.unwrap().len(), 3);
}
