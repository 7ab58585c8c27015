//! The trigger on the in-memory store, fed with events/people-signup.json (a confirmed sign-up,
//! as Cognito sends it). moto stores a pool's triggers but never invokes them, so these are the
//! trigger's tests; the store methods it calls are the store contract's (tests/, both stores).

use super::*;
use shared::account::{Account, AddedKey, AddedPerson, KeyLabel, KeySummary, NewAccount};
use shared::auth::{KeyHash, KeyRecord};
use shared::error::StoreError;
use shared::store::memory::MemoryStore;

const SUB: &str = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f";

fn sign_up() -> Value {
    shared::testing::fixture_event("people-signup.json")
}

fn forgot_password() -> Value {
    let mut event = sign_up();
    event["triggerSource"] = "PostConfirmation_ConfirmForgotPassword".into();
    event
}

async fn accounts(store: &impl AccountStore) -> Vec<Account> {
    store.list_accounts().await.unwrap()
}

#[tokio::test]
async fn a_confirmed_sign_up_makes_one_account_and_ties_the_person_to_it() {
    let store = MemoryStore::default();
    let answer = handle(&store, sign_up()).await.unwrap();
    assert_eq!(answer, sign_up(), "Cognito is answered its event unchanged");

    let made = accounts(&store).await;
    assert_eq!(made.len(), 1, "{made:?}");
    let account = &made[0];
    assert_eq!(account.account_id, account_id_of(SUB));
    assert!(shared::validation::is_dns_label(&account.account_id));
    assert!(shared::validation::is_dns_label(&account.namespace));
    let person = store.find_person(SUB).await.unwrap().expect("the person");
    assert_eq!(person.account_id, account.account_id);
    assert_eq!(person.namespace, account.namespace);
    assert_eq!(person.email, "new-person@example.com");
    let people = store.list_people(&account.account_id).await.unwrap();
    assert_eq!(people.len(), 1);
}

#[tokio::test]
async fn cognito_retrying_the_trigger_makes_no_second_account() {
    let store = MemoryStore::default();
    let first = confirm(&store, &sign_up()).await.unwrap();
    let account_id = account_id_of(SUB);
    assert_eq!(
        first,
        Outcome::Made {
            account_id: account_id.clone()
        }
    );
    let again = handle(&store, sign_up()).await.unwrap();
    assert_eq!(again, sign_up());
    assert_eq!(
        confirm(&store, &sign_up()).await.unwrap(),
        Outcome::AlreadyTied { account_id }
    );
    assert_eq!(accounts(&store).await.len(), 1);
}

#[tokio::test]
async fn a_person_already_invited_to_an_account_is_given_no_other() {
    let store = MemoryStore::default();
    shared::testing::seed_fixture_person(&store).await.unwrap();
    let mut event = sign_up();
    event["request"]["userAttributes"]["sub"] = shared::testing::FIXTURE_PERSON_ID.into();
    let before = accounts(&store).await;

    assert_eq!(handle(&store, event.clone()).await.unwrap(), event);
    assert_eq!(accounts(&store).await, before);
}

#[tokio::test]
async fn a_forgotten_password_confirmation_changes_nothing() {
    let store = MemoryStore::default();
    let event = forgot_password();
    assert_eq!(confirm(&store, &event).await.unwrap(), Outcome::NotSignUp);
    assert_eq!(handle(&store, event.clone()).await.unwrap(), event);
    assert!(accounts(&store).await.is_empty());
    assert!(store.find_person(SUB).await.unwrap().is_none());
}

#[tokio::test]
async fn an_event_that_is_not_a_post_confirmation_is_an_error_not_a_panic() {
    let store = MemoryStore::default();
    for event in [
        serde_json::json!({"triggerSource": "PreSignUp_SignUp", "request": {}, "response": {}}),
        serde_json::json!([1, 2]),
        serde_json::json!(null),
    ] {
        let failed = handle(&store, event.clone()).await;
        assert!(
            matches!(failed, Err(SignupError::NotPostConfirmation(_))),
            "{event}: {failed:?}"
        );
    }
    let mut no_sub = sign_up();
    no_sub["request"]["userAttributes"]
        .as_object_mut()
        .unwrap()
        .remove("sub");
    assert!(matches!(
        handle(&store, no_sub).await,
        Err(SignupError::NoSub)
    ));
    assert!(accounts(&store).await.is_empty());
}

#[tokio::test]
async fn a_store_failure_fails_the_confirmation_and_the_retry_finishes_the_same_account() {
    let memory = MemoryStore::default();
    let outage = Faulty {
        person_writes_fail: true,
        ..Faulty::of(&memory)
    };
    let failed = handle(&outage, sign_up()).await;
    assert!(
        matches!(failed, Err(SignupError::Account(AccountError::Store(_)))),
        "{failed:?}"
    );
    assert!(memory.find_person(SUB).await.unwrap().is_none());

    let recovered = Faulty::of(&memory);
    assert_eq!(handle(&recovered, sign_up()).await.unwrap(), sign_up());
    let made = accounts(&memory).await;
    assert_eq!(
        made.len(),
        1,
        "the first try's account, not a second: {made:?}"
    );
    let person = memory.find_person(SUB).await.unwrap().unwrap();
    assert_eq!(person.account_id, made[0].account_id);
}

#[tokio::test]
async fn a_person_tied_meanwhile_though_a_stale_read_missed_them_keeps_their_one_account() {
    let memory = MemoryStore::default();
    shared::testing::seed_fixture_person(&memory).await.unwrap();
    let mut event = sign_up();
    event["request"]["userAttributes"]["sub"] = shared::testing::FIXTURE_PERSON_ID.into();
    // The person check is an eventually consistent read: it may not see an invitation yet.
    let stale = Faulty {
        person_reads_stale: true,
        ..Faulty::of(&memory)
    };
    let outcome = confirm(&stale, &event).await.unwrap();
    let Outcome::TiedMeanwhile { unused_account_id } = outcome else {
        panic!("{outcome:?}")
    };
    let person = memory
        .find_person(shared::testing::FIXTURE_PERSON_ID)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(person.account_id, shared::testing::dev_owner().account_id);
    assert_ne!(person.account_id, unused_account_id);
    assert_eq!(handle(&stale, event.clone()).await.unwrap(), event);
}

#[test]
fn an_account_id_is_the_same_for_a_sub_and_differs_between_subs() {
    let id = account_id_of(SUB);
    assert_eq!(id, account_id_of(SUB));
    assert_ne!(id, account_id_of("another-sub"));
    assert_eq!(id.len(), ACCOUNT_PREFIX.len() + 32);
    assert!(shared::validation::is_dns_label(&id));
}

/// The memory store, whose person writes fail (the store unreachable), or whose person reads
/// see nothing (an eventually consistent read before the write reached it).
struct Faulty<'a> {
    inner: &'a MemoryStore,
    person_writes_fail: bool,
    person_reads_stale: bool,
}

impl<'a> Faulty<'a> {
    fn of(inner: &'a MemoryStore) -> Self {
        Faulty {
            inner,
            person_writes_fail: false,
            person_reads_stale: false,
        }
    }
}

impl AccountStore for Faulty<'_> {
    async fn get_account(&self, account_id: &str) -> Result<Option<Account>, StoreError> {
        self.inner.get_account(account_id).await
    }
    async fn list_accounts(&self) -> Result<Vec<Account>, StoreError> {
        self.inner.list_accounts().await
    }
    async fn create_account(&self, account: &Account) -> Result<NewAccount, StoreError> {
        self.inner.create_account(account).await
    }
    async fn add_key(
        &self,
        hash: &KeyHash,
        record: &KeyRecord,
        label: &KeyLabel,
    ) -> Result<AddedKey, StoreError> {
        self.inner.add_key(hash, record, label).await
    }
    async fn list_keys(&self, account_id: &str) -> Result<Vec<KeySummary>, StoreError> {
        self.inner.list_keys(account_id).await
    }
    async fn revoke_key(
        &self,
        account_id: &str,
        key_id: &str,
        at: &str,
    ) -> Result<Option<String>, StoreError> {
        self.inner.revoke_key(account_id, key_id, at).await
    }
    async fn add_person(&self, person: &PersonRecord) -> Result<AddedPerson, StoreError> {
        if self.person_writes_fail {
            return Err(StoreError::Timeout("DynamoDB unreachable".into()));
        }
        self.inner.add_person(person).await
    }
    async fn list_people(&self, account_id: &str) -> Result<Vec<PersonRecord>, StoreError> {
        self.inner.list_people(account_id).await
    }
    async fn remove_person(&self, person_id: &str) -> Result<bool, StoreError> {
        self.inner.remove_person(person_id).await
    }
    async fn has_agents(&self, namespace: &str) -> Result<bool, StoreError> {
        self.inner.has_agents(namespace).await
    }
    async fn remove_account(&self, account_id: &str) -> Result<(), StoreError> {
        self.inner.remove_account(account_id).await
    }
}

impl KeyStore for Faulty<'_> {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        self.inner.find_key(hash).await
    }
    async fn find_person(&self, person_id: &str) -> Result<Option<PersonRecord>, StoreError> {
        if self.person_reads_stale {
            return Ok(None);
        }
        self.inner.find_person(person_id).await
    }
}
