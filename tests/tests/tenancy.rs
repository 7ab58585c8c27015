//! A second account against every endpoint, on DynamoDB Local: with its own key, bob never
//! reads, changes or learns of anything of alice's. Alice's agent is set up with secrets and
//! log lines; bob then tries the logs with every parameter and her cursor, a create with her
//! names and idempotency key, and every other route (agents, sessions, secrets) on her names.

use integration_tests::{TestStore, bearer, direct_create, ingest, log_data, parts, read_logs};
use serde_json::{Value, json};
use shared::agent::AgentStore;
use shared::auth::ApiKey;
use shared::secrets::SetType;
use shared::session::SessionStore;
use shared::store::dynamodb::DynamoStore;

const SETTINGS: agent_logs::Settings = integration_tests::LOGS_SETTINGS;
const SECRET_TEXT: &str = "alice-private-token-8c1f";

fn now_millis() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Nothing of alice's in a body bob got: not her lines, her namespace, her secrets or her ids.
fn assert_nothing_of_alice(body: &Value, alice_namespace: &str, alice_agent: &Value) {
    let text = body.to_string();
    for leaked in [
        SECRET_TEXT,
        alice_namespace,
        "alice-env",
        alice_agent["activeDeploymentId"].as_str().unwrap(),
        alice_agent["deployment"]["serviceId"].as_str().unwrap(),
    ] {
        assert!(!text.contains(leaked), "{leaked} reached bob: {text}");
    }
}

async fn agent_item(store: &DynamoStore, namespace: &str, name: &str) -> Value {
    let agent = store.get_agent(namespace, name).await.unwrap().unwrap();
    serde_json::to_value(agent.view()).unwrap()
}

#[tokio::test]
async fn a_second_account_reaches_nothing_of_the_first_through_logs_create_or_its_key() {
    let store = TestStore::new().await;
    let (alice, alice_key) = store.account_with_key("alice").await;
    let (bob, bob_key) = store.account_with_key("bob").await;
    let alice_sets = [
        ("alice-env", SetType::Secret),
        ("alice-pull", SetType::ImagePullSecret),
    ];
    store.make_sets(&alice.namespace, &alice_sets).await;

    // Alice: an agent with secrets, created with an idempotency key, and lines of a session.
    let mut request = direct_create(
        Some(&bearer(&alice_key)),
        &json!({"serviceName": "support-bot", "image": "ghcr.io/acme/agent:1.0",
                "secretSet": "alice-env", "imagePullSecretSet": "alice-pull"}),
    );
    request
        .headers_mut()
        .insert("idempotency-key", "shared-key-1".parse().unwrap());
    let (status, alice_agent) = parts(
        create_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await,
    );
    assert_eq!(status, 201);
    let deployment = alice_agent["activeDeploymentId"]
        .as_str()
        .unwrap()
        .to_owned();
    let events: Vec<(String, i64, String)> = (0..12)
        .map(|i| {
            (
                format!("{i:056}"),
                now_millis() - 5_000 + i,
                format!("{SECRET_TEXT} line {i}"),
            )
        })
        .collect();
    let report = ingest(
        &store,
        30,
        log_data(
            &format!("/agent-hosting/{}/support-bot", alice.namespace),
            &format!("{deployment}/session-1"),
            &events,
        ),
    )
    .await;
    assert_eq!(report.stored, 12);
    let (status, page) = read_logs(
        &store,
        &alice_key,
        SETTINGS,
        "support-bot",
        &[("limit", "3".into())],
    )
    .await;
    assert_eq!(status, 200);
    let alice_cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let alice_before = agent_item(&store.store, &alice.namespace, "support-bot").await;

    // GET logs of alice's agent, with every parameter and with her cursor: 404, nothing more.
    let all_parameters = [
        ("deploymentId", deployment.clone()),
        ("sessionId", "session-1".to_owned()),
        ("query", SECRET_TEXT.to_owned()),
        ("startTime", "0".to_owned()),
        ("endTime", "253402300799".to_owned()),
        ("order", "asc".to_owned()),
        ("limit", "1000".to_owned()),
        ("offset", "1".to_owned()),
    ];
    let mut attempts: Vec<Vec<(&str, String)>> = vec![vec![], all_parameters.to_vec()];
    attempts.extend(
        all_parameters
            .iter()
            .map(|parameter| vec![parameter.clone()]),
    );
    attempts.push(vec![("cursor", alice_cursor.clone())]);
    for parameters in &attempts {
        let (status, body) = read_logs(&store, &bob_key, SETTINGS, "support-bot", parameters).await;
        assert_eq!(status, 404, "{parameters:?}: {body}");
        assert_eq!(
            body,
            json!({"error": "No agent of that name in this account", "code": "NOT_FOUND"}),
            "the same answer as for a name nobody has"
        );
    }
    let (_, nobody) = read_logs(&store, &bob_key, SETTINGS, "no-such-bot", &[]).await;
    let (_, alice_name) = read_logs(&store, &bob_key, SETTINGS, "support-bot", &[]).await;
    assert_eq!(
        nobody, alice_name,
        "bob cannot tell alice's name from a free one"
    );

    // POST with alice's agent name, her sets' names and her idempotency key: bob's account
    // holds no such sets, so bob is told so as of any name nobody has, not replayed her answer.
    let bob_creates = |sets: (&str, &str)| {
        let mut request = direct_create(
            Some(&bearer(&bob_key)),
            &json!({"serviceName": "support-bot", "image": "ghcr.io/acme/agent:1.0",
                    "secretSet": sets.0, "imagePullSecretSet": sets.1}),
        );
        request
            .headers_mut()
            .insert("idempotency-key", "shared-key-1".parse().unwrap());
        create_agent::handle(&store.store, &store.store, integration_tests::MODE, request)
    };
    let response = bob_creates(("alice-env", "alice-pull")).await;
    assert!(!response.headers().contains_key("idempotent-replayed"));
    let (status, refused) = parts(response);
    assert_eq!(status, 400, "{refused}");
    let (_, unknown) = parts(bob_creates(("no-env", "no-pull")).await);
    assert_eq!(
        refused.to_string().replace("alice-env", "no-env"),
        unknown.to_string(),
        "alice's sets are to bob as names nobody has"
    );

    // Sets of the same names in bob's own account are his to name: bob gets an agent of his own,
    // not a 409 and not a replay of her answer.
    store.make_sets(&bob.namespace, &alice_sets).await;
    let response = bob_creates(("alice-env", "alice-pull")).await;
    assert!(!response.headers().contains_key("idempotent-replayed"));
    let (status, bob_agent) = parts(response);
    assert_eq!(status, 201, "{bob_agent}");
    assert_eq!(
        bob_agent["deployment"]["manifest"]["metadata"]["namespace"],
        bob.namespace.as_str()
    );
    assert_ne!(
        bob_agent["activeDeploymentId"],
        alice_agent["activeDeploymentId"]
    );

    // Bob's own agent of that name shows none of alice's lines, and her cursor does not travel.
    let (status, body) = read_logs(&store, &bob_key, SETTINGS, "support-bot", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(body["total"], json!({"value": 0, "relation": "eq"}));
    assert_eq!(body["logs"], json!([]));
    for parameters in &attempts[1..] {
        let (status, body) = read_logs(&store, &bob_key, SETTINGS, "support-bot", parameters).await;
        assert!(
            status == 200 || status == 400,
            "{parameters:?}: {status} {body}"
        );
        assert!(body["logs"].as_array().is_none_or(Vec::is_empty), "{body}");
        assert_nothing_of_alice(&body, &alice.namespace, &alice_agent);
    }
    let (status, body) = read_logs(
        &store,
        &bob_key,
        SETTINGS,
        "support-bot",
        &[("cursor", alice_cursor)],
    )
    .await;
    assert_eq!(status, 400, "alice's cursor is not bob's: {body}");
    assert_nothing_of_alice(&body, &alice.namespace, &alice_agent);

    // The authorizer names bob, never alice, for bob's key.
    let event = integration_tests::authorizer_event(&bearer(&bob_key));
    let allowed = authorizer::authorize(&store.store, event).await.unwrap();
    assert!(allowed.is_allowed());
    assert_eq!(allowed.context["namespace"], bob.namespace.as_str());
    assert_eq!(allowed.context["accountId"], "bob");
    // ... and puts bob's requests under bob's usage plan, so only bob's own limits apply.
    assert_eq!(allowed.principal_id, "bob");
    assert_eq!(
        allowed.usage_identifier_key.as_deref(),
        Some(shared::auth::usage_plan_key_value("abc123", "bob").as_str())
    );

    // Lines sent under bob's namespace with alice's agent name land in bob's agent only.
    ingest(
        &store,
        30,
        log_data(
            &format!("/agent-hosting/{}/support-bot", bob.namespace),
            bob_agent["activeDeploymentId"].as_str().unwrap(),
            &[("9".repeat(56), now_millis(), "bob's own line".to_owned())],
        ),
    )
    .await;
    let (_, alice_page) = read_logs(
        &store,
        &alice_key,
        SETTINGS,
        "support-bot",
        &[("limit", "1000".into())],
    )
    .await;
    assert_eq!(
        alice_page["total"]["value"], 12,
        "alice still has her 12 lines only"
    );
    assert!(!alice_page.to_string().contains("bob's own line"));

    // Alice's agent is exactly as it was.
    assert_eq!(
        agent_item(&store.store, &alice.namespace, "support-bot").await,
        alice_before
    );
}

/// Bob's person's token (the keys routes take only a person's) and alice's key id.
struct KeysOf<'a> {
    token: &'a str,
    alice_key_id: &'a str,
}

/// The status and body of bob's request on each route, alice's names in its path.
async fn every_other_route(
    store: &TestStore,
    key: &ApiKey,
    public: &ApiKey,
    session: &str,
    keys: KeysOf<'_>,
) -> Vec<(&'static str, u16, Value)> {
    use integration_tests::{call, secrets_request, session_request, sessions_list_request};
    let s = &store.store;
    let kms = shared::testing::data_keys::FakeKms::default();
    let mut answers = Vec::new();
    for (route, method, body) in [
        ("GET agent", "GET", None),
        (
            "POST agent",
            "POST",
            Some(json!({"image": "ghcr.io/bob/a:1"})),
        ),
        ("DELETE agent", "DELETE", None),
        ("GET agents", "GET", None),
    ] {
        let agent = if route == "GET agents" { "" } else { "voice" };
        let (status, _, body) = call(store, key, method, agent, body.as_ref()).await;
        answers.push((route, status, body));
    }
    let mut deployments = integration_tests::agent_request("GET", key, "voice", None);
    *deployments.uri_mut() = "https://api.example.com/v1/agents/voice/deployments"
        .parse()
        .unwrap();
    let response =
        list_deployments::handle(s, s, &integration_tests::CURSOR_KEY, deployments).await;
    let (status, body) = parts(response);
    answers.push(("GET deployments", status, body));
    let mut organizations = integration_tests::agent_request("GET", key, "", None);
    *organizations.uri_mut() = "https://api.example.com/v1/organizations".parse().unwrap();
    let region = shared::config::LOCAL_REGION;
    let (status, body) = parts(account_info::handle(s, region, organizations).await);
    answers.push(("GET organizations", status, body));
    let sessions = [
        ("GET sessions", sessions_list_request(key, "voice", &[])),
        ("GET session", session_request("GET", key, "voice", session)),
        (
            "DELETE session",
            session_request("DELETE", key, "voice", session),
        ),
    ];
    for (route, request) in sessions {
        let response = match route {
            "GET sessions" => {
                list_sessions::handle(s, s, s, &integration_tests::CURSOR_KEY, request).await
            }
            "GET session" => get_session::handle(s, s, s, request).await,
            _ => stop_session::handle(s, s, s, request).await,
        };
        let (status, body) = parts(response);
        answers.push((route, status, body));
    }
    for (route, starter) in [("start (public key)", public), ("start (private key)", key)] {
        let (status, body) =
            parts(integration_tests::start_session(store, starter, "voice", None).await);
        answers.push((route, status, body));
    }
    let secrets = [
        ("GET set", secrets_request("GET", key, &["alice-env"], None)),
        ("GET sets", secrets_request("GET", key, &[], None)),
        (
            "DELETE key",
            secrets_request("DELETE", key, &["alice-env", "API_KEY"], None),
        ),
        (
            "DELETE set",
            secrets_request("DELETE", key, &["alice-env"], None),
        ),
    ];
    for (route, request) in secrets {
        let response = match route {
            "GET set" => get_secret_set::handle(s, s, region, request).await,
            "GET sets" => {
                list_secret_sets::handle(s, s, &integration_tests::CURSOR_KEY, region, request)
                    .await
            }
            "DELETE key" => delete_secret::handle(s, s, request).await,
            _ => delete_secret_set::handle(s, s, request).await,
        };
        let (status, body) = parts(response);
        answers.push((route, status, body));
    }
    // A PUT of her set's name makes a set of bob's own.
    let body = json!({"secretKey": "API_KEY", "secretValue": "bob's"});
    let request = secrets_request("PUT", key, &["alice-env"], Some(&body));
    let (status, body) = parts(put_secret_set::handle(s, &kms, s, region, request).await);
    answers.push(("PUT set", status, body));
    // Keys: his list, a key he makes (his own), and a revocation of her key's id.
    use integration_tests::tokens::keys_request;
    let new_key = json!({"kind": "private", "name": "bob-ci"});
    for (route, request) in [
        ("GET keys", keys_request("GET", keys.token, None, None)),
        (
            "POST keys",
            keys_request("POST", keys.token, None, Some(&new_key)),
        ),
        (
            "DELETE key id",
            keys_request("DELETE", keys.token, Some(keys.alice_key_id), None),
        ),
    ] {
        let (status, body) = parts(keys::handle(s, request).await);
        answers.push((route, status, body));
    }
    answers
}

#[tokio::test]
async fn a_second_account_reaches_nothing_of_the_first_on_every_other_route() {
    let (store, alice, alice_key, _) = integration_tests::acme_with_voice().await;
    store
        .make_sets(&alice.namespace, &[("alice-env", SetType::Secret)])
        .await;
    let (_, started) =
        parts(integration_tests::start_session(&store, &alice_key, "voice", None).await);
    let session = started["sessionId"].as_str().unwrap().to_owned();
    let (_, _, alice_agent) =
        integration_tests::call(&store, &alice_key, "GET", "voice", None).await;
    let alice_items = store.namespace_items(&alice.namespace).await;
    let alice_session = store
        .store
        .get_session(
            &alice.namespace,
            &store.service_of(&alice.namespace, "voice").await,
            &session,
        )
        .await
        .unwrap();
    let alice_keys = shared::account::list_keys(&store.store, &alice.account_id)
        .await
        .unwrap();
    let (bob, bob_key) = store.account_with_key("bob").await;
    let bob_public = store.public_key("bob").await;
    let bob_token = integration_tests::tokens::person_token(&store.store, "bob", "p-bob").await;

    let keys = KeysOf {
        token: &bob_token,
        alice_key_id: &alice_keys[0].key_id,
    };
    let answers = every_other_route(&store, &bob_key, &bob_public, &session, keys).await;
    let not_found = |status: u16, body: &Value| status == 404 && body["code"] == "NOT_FOUND";
    for (route, status, body) in &answers {
        match *route {
            "GET agents" | "GET sets" | "PUT set" | "GET organizations" | "GET keys" => {
                assert_eq!(*status, 200, "{route}: {body}")
            }
            "POST keys" => assert_eq!(*status, 201, "{route}: {body}"),
            _ => assert!(not_found(*status, body), "{route}: {status} {body}"),
        }
        assert!(!body.to_string().contains(&session), "{route}: {body}");
        for key in &alice_keys {
            assert!(!body.to_string().contains(&key.key_id), "{route}: {body}");
        }
        if *route == "PUT set" {
            // The set's name is bob's to echo: he named it.
            let own = json!({"status": "OK", "name": "alice-env", "type": "secret", "region": "us-east-1"});
            assert_eq!(body, &own);
            continue;
        }
        assert_nothing_of_alice(body, &alice.namespace, &alice_agent);
    }
    let listed = |route: &str| {
        answers
            .iter()
            .find(|(r, _, _)| *r == route)
            .unwrap()
            .2
            .clone()
    };
    assert_eq!(
        listed("GET agents")["services"],
        json!([]),
        "bob's list is his own"
    );
    assert_eq!(
        listed("GET sets")["sets"],
        json!([]),
        "{}",
        listed("GET sets")
    );
    assert_eq!(
        listed("GET organizations")["organizations"],
        json!([{"name": bob.account_id, "verboseName": bob.account_id}]),
        "bob's organization is his account"
    );
    let bobs_keys = listed("GET keys");
    assert_eq!(
        bobs_keys["keys"].as_array().map(Vec::len),
        Some(2),
        "bob's list is his two keys: {bobs_keys}"
    );
    assert_eq!(
        answers.len(),
        19,
        "every route but the logs and a create: {answers:?}"
    );

    // Alice's agent, session, set and every item of her namespace are as they were; the set
    // bob put is in his namespace.
    let (_, _, after) = integration_tests::call(&store, &alice_key, "GET", "voice", None).await;
    assert_eq!(after, alice_agent);
    let alice_keys_after = shared::account::list_keys(&store.store, &alice.account_id).await;
    assert_eq!(
        alice_keys_after.unwrap(),
        alice_keys,
        "her keys, none revoked"
    );
    assert_eq!(store.namespace_items(&alice.namespace).await, alice_items);
    let service = store.service_of(&alice.namespace, "voice").await;
    let read = store
        .store
        .get_session(&alice.namespace, &service, &session)
        .await
        .unwrap();
    assert_eq!(read, alice_session);
    use shared::secrets::store::SecretStore;
    let bobs = store
        .store
        .get_set(&bob.namespace, "alice-env")
        .await
        .unwrap();
    assert!(bobs.is_some(), "bob's PUT made bob's set");
}
