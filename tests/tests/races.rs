//! Concurrent creates against DynamoDB Local, through the real handler: one name in one account
//! is created exactly once, and different names (also naming one secret set) all land.

use std::sync::Arc;
use std::time::Duration;

use integration_tests::bounded::{Bound, retried_after_503};
use integration_tests::{TestStore, bearer, direct_create, parts};
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};
use shared::agent::AgentStore;

const CALLERS: usize = 50;

/// One race at a time: each test sets fifty callers against one store, and two tests at once
/// would be a hundred, on a DynamoDB Local that answers a transaction in tens of milliseconds;
/// the updates' race would then outlast its deadline (a 503) for want of store time.
static ONE_RACE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Sends every request to the create handler at once and returns the responses in order.
async fn create_concurrently(
    store: &Arc<TestStore>,
    requests: Vec<Request>,
) -> Vec<Response<Body>> {
    let tasks: Vec<_> = requests
        .into_iter()
        .map(|request| {
            let store = store.clone();
            tokio::spawn(async move {
                create_agent::handle(&store.store, &store.store, integration_tests::MODE, request)
                    .await
            })
        })
        .collect();
    let mut responses = Vec::new();
    for task in tasks {
        responses.push(task.await.unwrap());
    }
    responses
}

/// How long one of the fifty updates keeps coming back after a 503: a store that answers 503
/// to every try fails the test within it instead of holding CI.
const UPDATE_RETRIES: Bound = Bound::new(20, Duration::from_secs(120));

/// One create request per body.
fn creates(auth: &str, bodies: impl IntoIterator<Item = Value>) -> Vec<Request> {
    bodies
        .into_iter()
        .map(|body| direct_create(Some(auth), &body))
        .collect()
}

/// One create request per body, all with the same Idempotency-Key.
fn creates_with_key(
    auth: &str,
    key: &str,
    bodies: impl IntoIterator<Item = Value>,
) -> Vec<Request> {
    let mut requests = creates(auth, bodies);
    for request in &mut requests {
        request
            .headers_mut()
            .insert("idempotency-key", key.parse().unwrap());
    }
    requests
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_creates_of_one_name_give_one_agent() {
    let _race = ONE_RACE_AT_A_TIME.lock().await;
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let bodies = (0..CALLERS)
        .map(|i| json!({"serviceName": "contested", "image": format!("ghcr.io/acme/agent:{i}")}));
    let mut statuses = Vec::new();
    for response in create_concurrently(&store, creates(&bearer(&key), bodies)).await {
        let (status, body) = parts(response);
        assert!(status == 201 || status == 409, "{status} {body}");
        statuses.push(status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), CALLERS - 1);
    // One agent item and one deployment item: no orphan deployment from a losing request.
    assert_eq!(store.namespace_items(&caller.namespace).await, 2);
    let agent = store
        .store
        .get_agent(&caller.namespace, "contested")
        .await
        .unwrap()
        .unwrap();
    let view = agent.view();
    assert_eq!(view.deployment.unwrap().id, view.active_deployment_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_creates_of_different_names_all_land() {
    let _race = ONE_RACE_AT_A_TIME.lock().await;
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let bodies = (0..CALLERS)
        .map(|i| json!({"serviceName": format!("agent-{i}"), "image": "ghcr.io/acme/agent:1.0"}));
    for response in create_concurrently(&store, creates(&bearer(&key), bodies)).await {
        let (status, body) = parts(response);
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(store.namespace_items(&caller.namespace).await, 2 * CALLERS);
}

/// Retries racing each other with one Idempotency-Key create once: one answer is the original,
/// the rest replay it byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_with_one_key_create_once() {
    let _race = ONE_RACE_AT_A_TIME.lock().await;
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let body = json!({"serviceName": "retried", "image": "ghcr.io/acme/agent:1.0"});
    let requests = creates_with_key(
        &bearer(&key),
        "3f2a7c51-retry",
        std::iter::repeat_n(body, CALLERS),
    );
    let responses = create_concurrently(&store, requests).await;
    let replayed = responses
        .iter()
        .filter(|response| response.headers().contains_key("idempotent-replayed"))
        .count();
    let first_body = responses[0].body().as_ref().to_vec();
    for response in responses {
        assert!(
            response.body().as_ref() == first_body.as_slice(),
            "every answer is the same agent"
        );
        let (status, body) = parts(response);
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(
        replayed,
        CALLERS - 1,
        "one original answer, the rest replays"
    );
    // The agent, its deployment and the key's record: nothing else.
    assert_eq!(store.namespace_items(&caller.namespace).await, 3);
}

/// Racing requests with one key but different bodies: one lands, the others are 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_different_bodies_with_one_key_land_once() {
    let _race = ONE_RACE_AT_A_TIME.lock().await;
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let bodies = (0..CALLERS)
        .map(|i| json!({"serviceName": format!("agent-{i}"), "image": "ghcr.io/acme/agent:1.0"}));
    let requests = creates_with_key(&bearer(&key), "one-key", bodies);
    let mut statuses = Vec::new();
    for response in create_concurrently(&store, requests).await {
        let (status, body) = parts(response);
        assert!(status == 201 || status == 422, "{status} {body}");
        statuses.push(status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(store.namespace_items(&caller.namespace).await, 3);
}

/// Fifty updates of one agent at once, each with its own image: each is applied to the version it
/// read or retried on the newer one, so none is lost: fifty new deployments are kept, the active
/// one is one of them, and reading the agent agrees with the store. A caller told 503 with
/// `Retry-After` (the service's retries outlasted its deadline: fifty writes of one item, one at
/// a time, take DynamoDB Local longer on a busy machine) comes back after it, as a client does;
/// what the test holds to is that every update lands once, not how fast.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_updates_of_one_agent_are_all_kept() {
    let _race = ONE_RACE_AT_A_TIME.lock().await;
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let created = integration_tests::create_named_agent(&store, &key, "contested").await;
    let tasks: Vec<_> = (0..CALLERS)
        .map(|i| {
            let store = store.clone();
            let key = key.clone();
            let body = json!({"image": format!("ghcr.io/acme/agent:2.{i}")});
            tokio::spawn(async move {
                retried_after_503(
                    &format!("update {i} answered other than 503"),
                    UPDATE_RETRIES,
                    || {
                        let request = integration_tests::agent_request(
                            "POST",
                            &key,
                            "contested",
                            Some(&body),
                        );
                        update_agent::handle(
                            &store.store,
                            &store.store,
                            integration_tests::MODE,
                            request,
                        )
                    },
                )
                .await
            })
        })
        .collect();
    let mut deployed = std::collections::BTreeSet::new();
    for task in tasks {
        let (status, body) = parts(task.await.unwrap());
        assert_eq!(status, 200, "{body}");
        deployed.insert(body["activeDeploymentId"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        deployed.len(),
        CALLERS,
        "each update made its own deployment"
    );

    let agent = store
        .store
        .get_agent(&caller.namespace, "contested")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        agent.version,
        1 + CALLERS as u64,
        "every update was written once"
    );
    assert!(deployed.contains(&agent.active.deployment.id));
    for id in deployed
        .iter()
        .chain([created["activeDeploymentId"].as_str().unwrap().to_owned()].iter())
    {
        assert!(
            store
                .store
                .get_deployment(&caller.namespace, &agent.service_id, id)
                .await
                .unwrap()
                .is_some(),
            "deployment {id} is kept"
        );
    }
    assert_eq!(
        store.namespace_items(&caller.namespace).await,
        1 + 1 + CALLERS,
        "the agent and 51 deployments"
    );
    let (status, headers, body) =
        integration_tests::call(&store, &key, "GET", "contested", None).await;
    assert_eq!(status, 200);
    assert_eq!(body, serde_json::to_value(agent.read_view()).unwrap());
    assert_eq!(headers["etag"], agent.etag().as_str());
}

/// Agents naming one set at the same moment all get it: their writes of the set's users (one
/// item for all of them) do not lose one another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_agents_naming_one_set_at_once_are_all_its_users() {
    use shared::secrets::store::SecretStore;
    let _race = ONE_RACE_AT_A_TIME.lock().await;
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    store
        .make_sets(
            &caller.namespace,
            &[("env", shared::secrets::SetType::Secret)],
        )
        .await;
    let bodies = (0..CALLERS).map(|i| {
        json!({"serviceName": format!("bot-{i}"), "image": "ghcr.io/acme/agent:1.0",
            "secretSet": "env"})
    });
    for response in create_concurrently(&store, creates(&bearer(&key), bodies)).await {
        let (status, body) = parts(response);
        assert_eq!(status, 201, "{body}");
    }
    let set = store
        .store
        .get_set(&caller.namespace, "env")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(set.used_by.len(), CALLERS);
}

/// Fifty session starts of an agent with `maxAgents` 3 at the same moment, through the start
/// handler under a public key: each is one conditioned write of the agent's count, so exactly
/// three start and forty-seven are refused 429 `AGENT_AT_CAPACITY` with `Retry-After`; once the
/// three end, the count is back to zero and a start takes a place again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_starts_against_three_places_start_exactly_three() {
    use shared::session::{SessionState, SessionStore};

    let _race = ONE_RACE_AT_A_TIME.lock().await;
    let store = Arc::new(TestStore::new().await);
    let (caller, key) = store.account_with_key("acme").await;
    let public = store.public_key("acme").await;
    let scaling = json!({"image": "ghcr.io/acme/agent:1.0", "autoScaling": {"maxAgents": 3}});
    integration_tests::ready_agent(&store, &caller, &key, "capped", scaling).await;
    let service_id = stored_agent(&store, &caller.namespace).await.service_id;

    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (store, public) = (store.clone(), public.clone());
            tokio::spawn(async move {
                integration_tests::start_session(&store, &public, "capped", None).await
            })
        })
        .collect();
    let mut started = Vec::new();
    let mut refused = 0;
    for task in tasks {
        let response = task.await.unwrap();
        let retry_after = response.headers().contains_key("retry-after");
        match parts(response) {
            (200, answer) => started.push(answer["sessionId"].as_str().unwrap().to_owned()),
            (status, answer) => {
                assert_eq!(
                    (status, answer["code"].as_str()),
                    (429, Some("AGENT_AT_CAPACITY")),
                    "{answer}"
                );
                assert!(retry_after, "a full agent says when to come back");
                refused += 1;
            }
        }
    }
    assert_eq!((started.len(), refused), (3, CALLERS - 3));
    let agent = stored_agent(&store, &caller.namespace).await;
    assert_eq!(agent.active_sessions, 3);
    assert_eq!(
        agent.view().active_session_count,
        3,
        "activeSessionCount is the figure the cap uses"
    );

    let now = shared::timestamp::now_rfc3339_millis();
    for id in &started {
        let session = store
            .store
            .get_session(&caller.namespace, &service_id, id)
            .await
            .unwrap()
            .expect("a started session is stored");
        let ended = session.ended(SessionState::Ended, "completed", &now);
        store.store.write_session(&session, &ended).await.unwrap();
    }
    assert_eq!(
        stored_agent(&store, &caller.namespace)
            .await
            .active_sessions,
        0
    );
    let (status, answer) =
        parts(integration_tests::start_session(&store, &public, "capped", None).await);
    assert_eq!(status, 200, "a place is free again: {answer}");
    assert_eq!(
        stored_agent(&store, &caller.namespace)
            .await
            .active_sessions,
        1
    );
}

async fn stored_agent(store: &TestStore, namespace: &str) -> shared::agent::AgentRecord {
    store
        .store
        .get_agent(namespace, "capped")
        .await
        .unwrap()
        .expect("the agent is stored")
}
