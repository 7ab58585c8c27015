//! People through their access tokens (docs/people.md): on the in-memory store, a
//! person of one account reaches nothing of another's with their token, exactly as a key of
//! that account would not, and a bad token is the bad key's 401 on every family of routes.

use integration_tests::tokens::{person_token, token_request as request};
use integration_tests::{CURSOR_KEY, parts};
use serde_json::json;
use shared::account::ensure_account;
use shared::people::testing::TestIssuer;
use shared::session::lifecycle::StartWait;
use shared::store::memory::MemoryStore;
use shared::testing::data_keys::FakeKms;

/// Accounts alice and bob, each with one person (`p-alice`, `p-bob`).
async fn two_accounts() -> MemoryStore {
    let store = MemoryStore::default();
    for (account, person) in [("alice", "p-alice"), ("bob", "p-bob")] {
        ensure_account(&store, account, None).await.unwrap();
        person_token(&store, account, person).await;
    }
    store
}

fn token(person: &str) -> String {
    TestIssuer::global().access_token(person)
}

#[tokio::test]
async fn a_person_works_on_their_own_account_and_reaches_nothing_of_another() {
    let store = two_accounts().await;
    let s = &store;
    let (alice, bob) = (token("p-alice"), token("p-bob"));

    // Alice, signed in, creates an agent and a secret set with her token.
    let create = json!({"serviceName": "support-bot", "image": "ghcr.io/acme/agent:1.0"});
    let created = request("POST", "/v1/agents", &alice, &[], Some(create));
    let (status, agent) = parts(create_agent::handle(s, s, integration_tests::MODE, created).await);
    assert_eq!(status, 201, "{agent}");
    let set = json!({"name": "alice-env", "isImagePullSecret": false,
        "secretKey": "OPENAI_API_KEY", "secretValue": "alice-marker-1"});
    let put = request(
        "PUT",
        "/v1/secrets/alice-env",
        &alice,
        &[("setName", "alice-env")],
        Some(set),
    );
    let put_status =
        parts(put_secret_set::handle(s, &FakeKms::default(), s, "us-east-1", put).await).0;
    assert!(put_status == 200 || put_status == 201, "{put_status}");

    // She reads her own.
    let own = request(
        "GET",
        "/v1/agents/support-bot",
        &alice,
        &[("agentName", "support-bot")],
        None,
    );
    assert_eq!(parts(get_agent::handle(s, s, own).await).0, 200);
    let (status, listed) = parts(
        list_agents::handle(
            s,
            s,
            &CURSOR_KEY,
            request("GET", "/v1/agents", &alice, &[], None),
        )
        .await,
    );
    assert_eq!(status, 200);
    assert!(listed.to_string().contains("support-bot"), "{listed}");

    // Bob, with his own token: 404 on her agent, its deployments, sessions and her set; his list
    // holds nothing of hers.
    let agent_params = [("agentName", "support-bot")];
    let (status, _) = parts(
        get_agent::handle(
            s,
            s,
            request("GET", "/v1/agents/support-bot", &bob, &agent_params, None),
        )
        .await,
    );
    assert_eq!(status, 404);
    let deployments = request(
        "GET",
        "/v1/agents/support-bot/deployments",
        &bob,
        &agent_params,
        None,
    );
    assert_eq!(
        parts(list_deployments::handle(s, s, &CURSOR_KEY, deployments).await).0,
        404
    );
    let sessions = request(
        "GET",
        "/v1/agents/support-bot/sessions",
        &bob,
        &agent_params,
        None,
    );
    assert_eq!(
        parts(list_sessions::handle(s, s, s, &CURSOR_KEY, sessions).await).0,
        404
    );
    let set = request(
        "GET",
        "/v1/secrets/alice-env",
        &bob,
        &[("setName", "alice-env")],
        None,
    );
    assert_eq!(
        parts(get_secret_set::handle(s, s, "us-east-1", set).await).0,
        404
    );
    let (status, listed) = parts(
        list_agents::handle(
            s,
            s,
            &CURSOR_KEY,
            request("GET", "/v1/agents", &bob, &[], None),
        )
        .await,
    );
    assert_eq!(status, 200);
    let text = listed.to_string();
    assert!(!text.contains("support-bot"), "{text}");
    assert!(
        !text.contains(agent["activeDeploymentId"].as_str().unwrap()),
        "{text}"
    );
    let logs = request(
        "GET",
        "/v1/agents/support-bot/logs",
        &bob,
        &agent_params,
        None,
    );
    let logs = agent_logs::handle(s, s, s, integration_tests::LOGS_SETTINGS, logs).await;
    assert_eq!(parts(logs).0, 404);
    let sets = request("GET", "/v1/secrets", &bob, &[], None);
    let (status, sets) =
        parts(list_secret_sets::handle(s, s, &CURSOR_KEY, "us-east-1", sets).await);
    assert_eq!(status, 200);
    assert!(!sets.to_string().contains("alice-env"), "{sets}");
    // Her own list holds her set: the 404s above are tenancy, not absence.
    let sets = request("GET", "/v1/secrets", &alice, &[], None);
    let (_, sets) = parts(list_secret_sets::handle(s, s, &CURSOR_KEY, "us-east-1", sets).await);
    assert!(sets.to_string().contains("alice-env"), "{sets}");
}

#[tokio::test]
async fn expired_forged_id_other_client_and_unknown_persons_tokens_are_401_on_every_family() {
    let store = two_accounts().await;
    let s = &store;
    let issuer = TestIssuer::global();
    for bad in [
        issuer.expired_token("p-alice"),
        issuer.forged_token("p-alice"),
        issuer.id_token("p-alice"),
        issuer.other_client_token("p-alice"),
        issuer.access_token("p-nobody"),
    ] {
        let agents = request("GET", "/v1/agents", &bad, &[], None);
        let sets = request("GET", "/v1/secrets", &bad, &[], None);
        let params = [("agentName", "support-bot")];
        let sessions = request(
            "GET",
            "/v1/agents/support-bot/sessions",
            &bad,
            &params,
            None,
        );
        let start = request("POST", "/v1/public/support-bot/start", &bad, &params, None);
        for (family, response) in [
            (
                "agents",
                list_agents::handle(s, s, &CURSOR_KEY, agents).await,
            ),
            (
                "secrets",
                list_secret_sets::handle(s, s, &CURSOR_KEY, "us-east-1", sets).await,
            ),
            (
                "sessions",
                list_sessions::handle(s, s, s, &CURSOR_KEY, sessions).await,
            ),
            (
                "start",
                start_session::handle(s, s, s, StartWait(std::time::Duration::ZERO), start).await,
            ),
        ] {
            let www = response.headers().get("www-authenticate").cloned();
            let (status, body) = parts(response);
            assert_eq!(status, 401, "{family}: {body}");
            assert_eq!(body["code"], "UNAUTHORIZED", "{family}");
            assert_eq!(
                www.as_ref().map(|v| v.to_str().unwrap()),
                Some("Bearer"),
                "{family}"
            );
        }
    }
}
