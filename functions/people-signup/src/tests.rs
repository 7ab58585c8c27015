//! The trigger on the in-memory store, fed with events/people-signup.json (a confirmed sign-up,
//! as Cognito sends it). moto stores a pool's triggers but never invokes them, so these are the
//! trigger's tests; the store methods it calls are the store contract's (tests/, both stores).

use super::*;
use shared::account::{Account, AddedKey, AddedPerson, KeyLabel, KeySummary, NewAccount};
use shared::auth::{KeyHash, KeyRecord};
use shared::error::StoreError;
use shared::store::memory::MemoryStore;
use shared::testing::logs::Logs;

const SUB: &str = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f";

/// No gateway-keys function configured (as locally).
const NO_KEYS: Option<&Recorder<'static>> = None;

/// An invocation's time, as Lambda gives the trigger (its timeout: 5 s).
const AMPLE: Duration = Duration::from_secs(5);

/// The deadline of an invocation that starts now.
fn ample() -> SystemTime {
    SystemTime::now() + AMPLE
}

fn sign_up() -> Value {
    shared::testing::fixture_event("people-signup.json")
}

fn forgot_password() -> Value {
    let mut event = sign_up();
    event["triggerSource"] = "PostConfirmation_ConfirmForgotPassword".into();
    event
}

/// The trigger run on `event`, with an invocation's ample time: asserts it succeeds and Cognito
/// is answered its event unchanged.
async fn answered<S: AccountStore + KeyStore>(
    store: &S,
    keys: Option<&Recorder<'_>>,
    event: Value,
) {
    let answer = handle(store, keys, event.clone(), ample()).await.unwrap();
    assert_eq!(answer, event, "Cognito is answered its event unchanged");
}

async fn accounts(store: &impl AccountStore) -> Vec<Account> {
    store.list_accounts().await.unwrap()
}

#[tokio::test]
async fn a_confirmed_sign_up_makes_one_account_and_ties_the_person_to_it() {
    let store = MemoryStore::default();
    answered(&store, NO_KEYS, sign_up()).await;

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
    answered(&store, NO_KEYS, sign_up()).await;
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
    assert_eq!(
        confirm(&store, &event).await.unwrap(),
        Outcome::InvitedBefore {
            account_id: shared::testing::dev_owner().account_id
        }
    );

    // The operator's account is keyed by the operator (invite-person), not asked for here.
    let keys = Recorder::of(&store);
    answered(&store, Some(&keys), event).await;
    assert_eq!(accounts(&store).await, before);
    assert!(keys.asked().is_empty(), "{:?}", keys.asked());
}

#[tokio::test]
async fn a_forgotten_password_confirmation_changes_nothing() {
    let store = MemoryStore::default();
    let event = forgot_password();
    assert_eq!(confirm(&store, &event).await.unwrap(), Outcome::NotSignUp);
    answered(&store, NO_KEYS, event).await;
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
        let failed = handle(&store, NO_KEYS, event.clone(), ample()).await;
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
        handle(&store, NO_KEYS, no_sub, ample()).await,
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
    let failed = handle(&outage, NO_KEYS, sign_up(), ample()).await;
    assert!(
        matches!(failed, Err(SignupError::Account(AccountError::Store(_)))),
        "{failed:?}"
    );
    assert!(memory.find_person(SUB).await.unwrap().is_none());

    let recovered = Faulty::of(&memory);
    answered(&recovered, NO_KEYS, sign_up()).await;
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
    answered(&stale, NO_KEYS, event).await;
}

#[test]
fn an_account_id_is_the_same_for_a_sub_and_differs_between_subs() {
    let id = account_id_of(SUB);
    assert_eq!(id, account_id_of(SUB));
    assert_ne!(id, account_id_of("another-sub"));
    assert_eq!(id.len(), ACCOUNT_PREFIX.len() + 32);
    assert!(shared::validation::is_dns_label(&id));
}

/// The gateway-keys port, faked: records each account asked for and whether the account and its
/// person were in the store at that moment; or fails every request (Lambda unreachable).
struct Recorder<'a> {
    store: &'a MemoryStore,
    fails: bool,
    asked: std::sync::Mutex<Vec<(String, bool)>>,
    timeouts: std::sync::Mutex<Vec<Duration>>,
}

impl<'a> Recorder<'a> {
    fn of(store: &'a MemoryStore) -> Self {
        Recorder {
            store,
            fails: false,
            asked: Default::default(),
            timeouts: Default::default(),
        }
    }

    fn asked(&self) -> Vec<(String, bool)> {
        self.asked.lock().unwrap().clone()
    }
}

impl GatewayKeyRequests for Recorder<'_> {
    async fn request(&self, account_id: &str, timeout: Duration) -> Result<(), KeyRequestError> {
        self.timeouts.lock().unwrap().push(timeout);
        let account = self.store.get_account(account_id).await.unwrap();
        let person = self.store.find_person(SUB).await.unwrap();
        let exists = account.is_some() && person.is_some_and(|p| p.account_id == account_id);
        self.asked
            .lock()
            .unwrap()
            .push((account_id.to_owned(), exists));
        if self.fails {
            return Err(KeyRequestError {
                account_id: account_id.to_owned(),
                message: "Lambda unreachable".into(),
            });
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_gateway_key_is_asked_for_with_the_account_id_once_the_account_and_person_exist() {
    let store = MemoryStore::default();
    let keys = Recorder::of(&store);
    answered(&store, Some(&keys), sign_up()).await;
    assert_eq!(keys.asked(), [(account_id_of(SUB), true)]);

    // Cognito's retry of a confirmation that did finish: asked again (the function is
    // idempotent), for the same account.
    answered(&store, Some(&keys), sign_up()).await;
    assert_eq!(keys.asked().len(), 2);
    assert_eq!(keys.asked()[1], (account_id_of(SUB), true));
}

#[tokio::test]
async fn no_key_is_asked_for_without_an_account_of_the_persons_own() {
    let store = MemoryStore::default();
    let keys = Recorder::of(&store);
    answered(&store, Some(&keys), forgot_password()).await;

    // A store failure: no account to key, and the confirmation fails (Cognito's retry asks).
    let outage = Faulty {
        person_writes_fail: true,
        ..Faulty::of(&store)
    };
    assert!(
        handle(&outage, Some(&keys), sign_up(), ample())
            .await
            .is_err()
    );

    // Tied to the operator's account meanwhile: the account made here is unused, not keyed.
    let invited = MemoryStore::default();
    shared::testing::seed_fixture_person(&invited)
        .await
        .unwrap();
    let mut event = sign_up();
    event["request"]["userAttributes"]["sub"] = shared::testing::FIXTURE_PERSON_ID.into();
    let stale = Faulty {
        person_reads_stale: true,
        ..Faulty::of(&invited)
    };
    let other = Recorder::of(&invited);
    answered(&stale, Some(&other), event).await;

    assert!(keys.asked().is_empty(), "{:?}", keys.asked());
    assert!(other.asked().is_empty(), "{:?}", other.asked());
}

#[tokio::test]
async fn with_no_gateway_keys_function_nothing_is_asked_and_the_account_is_made() {
    let store = MemoryStore::default();
    answered(&store, NO_KEYS, sign_up()).await;
    assert_eq!(accounts(&store).await.len(), 1);
    assert_eq!(
        request_key(NO_KEYS, &account_id_of(SUB), AMPLE).await,
        KeyRequest::NotConfigured
    );
}

#[tokio::test]
async fn a_failed_key_request_is_logged_and_the_confirmation_still_succeeds() {
    let store = MemoryStore::default();
    let keys = Recorder {
        fails: true,
        ..Recorder::of(&store)
    };
    let logs = Logs::capture();
    // The account and person are written; sync-gateway makes the key (docs/people.md).
    answered(&store, Some(&keys), sign_up()).await;
    assert_eq!(keys.asked(), [(account_id_of(SUB), true)]);
    assert!(store.find_person(SUB).await.unwrap().is_some());
    // What GatewayKeyNotRequestedMetricFilter counts: the message, at ERROR.
    assert_eq!(
        logs.at(tracing::Level::ERROR),
        [KEY_NOT_REQUESTED],
        "{:?}",
        logs.all()
    );
    assert_eq!(
        request_key(Some(&keys), &account_id_of(SUB), AMPLE).await,
        KeyRequest::Failed
    );
}

#[test]
fn the_invoke_is_bounded_by_what_is_left_of_the_invocation() {
    assert_eq!(invoke_timeout(AMPLE), Some(INVOKE_TIMEOUT));
    assert_eq!(
        invoke_timeout(INVOKE_TIMEOUT + DEADLINE_MARGIN),
        Some(INVOKE_TIMEOUT)
    );
    assert_eq!(
        invoke_timeout(Duration::from_millis(1_000)),
        Some(Duration::from_millis(800)),
        "the margin kept for the answer"
    );
    assert_eq!(
        invoke_timeout(DEADLINE_MARGIN + MIN_INVOKE_TIMEOUT),
        Some(MIN_INVOKE_TIMEOUT)
    );
    for left in [
        DEADLINE_MARGIN + MIN_INVOKE_TIMEOUT - Duration::from_millis(1),
        DEADLINE_MARGIN,
        Duration::from_millis(50),
        Duration::ZERO,
    ] {
        assert_eq!(invoke_timeout(left), None, "{left:?}");
    }
}

#[tokio::test]
async fn the_invoke_is_given_what_is_left_of_the_invocation_but_the_margin() {
    let store = MemoryStore::default();
    let keys = Recorder::of(&store);
    let deadline = SystemTime::now() + Duration::from_millis(1_000);
    handle(&store, Some(&keys), sign_up(), deadline)
        .await
        .unwrap();
    let timeouts = keys.timeouts.lock().unwrap().clone();
    assert_eq!(timeouts.len(), 1);
    assert!(
        timeouts[0] <= Duration::from_millis(800) && timeouts[0] >= MIN_INVOKE_TIMEOUT,
        "{timeouts:?}"
    );
}

#[tokio::test]
async fn with_too_little_time_left_no_key_is_asked_for_it_is_logged_and_the_confirmation_answered()
{
    for deadline in [
        SystemTime::now() + Duration::from_millis(250),
        SystemTime::now(),
        SystemTime::now() - Duration::from_secs(1),
    ] {
        let store = MemoryStore::default();
        let keys = Recorder::of(&store);
        let logs = Logs::capture();
        assert_eq!(
            handle(&store, Some(&keys), sign_up(), deadline)
                .await
                .unwrap(),
            sign_up(),
            "Cognito is answered"
        );
        assert!(keys.asked().is_empty(), "no Invoke: {:?}", keys.asked());
        assert!(store.find_person(SUB).await.unwrap().is_some());
        assert_eq!(
            logs.at(tracing::Level::ERROR),
            [KEY_NOT_REQUESTED],
            "{:?}",
            logs.all()
        );
    }
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

mod lambda {
    //! The adapter's request as it leaves for Lambda (stopped before it is sent: no emulator
    //! needed to see what Lambda would be asked).
    use aws_sdk_lambda::config::{BehaviorVersion, Credentials, Region};
    use shared::testing::requests::{Requests, SentRequest};

    use crate::GatewayKeyRequests;
    use crate::gateway_keys::LambdaGatewayKeys;

    #[tokio::test]
    async fn the_function_is_invoked_by_its_name_asynchronously_with_the_account_id() {
        // Each request recorded, then refused.
        let sent = Requests::refusing();
        let config = aws_sdk_lambda::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "test"))
            .endpoint_url("http://127.0.0.1:9")
            .interceptor(sent.clone())
            .build();
        let keys = LambdaGatewayKeys::new(
            aws_sdk_lambda::Client::from_conf(config),
            "stack-gateway-keys".into(),
        );
        let failed = keys
            .request("acct-0123", crate::INVOKE_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(
            failed.account_id, "acct-0123",
            "a failure is an error, not a panic"
        );

        let sent = sent.take();
        let SentRequest {
            method, path, body, ..
        } = &sent[0];
        assert_eq!(method, "POST");
        assert_eq!(path, "/2015-03-31/functions/stack-gateway-keys/invocations");
        assert_eq!(
            sent[0].header("x-amz-invocation-type"),
            Some("Event"),
            "asynchronous: Lambda queues it"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(body).unwrap(),
            serde_json::json!({"account_id": "acct-0123"})
        );
    }
}
