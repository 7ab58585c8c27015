//! A store that accepts connections and never answers (a black hole on loopback): every call
//! ends at the client's time bounds, and each handler turns it into the contract's 503 with
//! `Retry-After`; the authorizer reports an error (the gateway answers 500 and caches nothing)
//! rather than a cached denial of a valid key. How long the 503 takes is `make bench`'s figure,
//! not an assertion here.

use integration_tests::{event, parts};
use shared::config::TableNames;
use shared::store::dynamodb::DynamoStore;

/// Accepts connections on a free loopback port and holds them open, silent.
async fn black_hole() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    format!("http://{address}")
}

async fn silent_store() -> DynamoStore {
    let client = shared::aws::dynamodb_client(Some(&black_hole().await)).expect("a client");
    DynamoStore::new(
        client,
        TableNames {
            agents: "agents".into(),
            accounts: "accounts".into(),
            logs: "logs".into(),
        },
    )
}

#[tokio::test]
async fn a_create_that_times_out_is_503_with_retry_after() {
    let store = silent_store().await;
    // The gateway's event: the authorizer already named the caller, so the first store call is
    // the create's transaction.
    let response = create_agent::handle(
        &store,
        &store,
        integration_tests::MODE,
        event("create-agent.json"),
    )
    .await;
    assert_eq!(response.headers()["retry-after"], "1");
    let (status, body) = parts(response);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "SERVICE_UNAVAILABLE");
    assert!(!body.to_string().contains("timeout"), "no SDK text: {body}");
}

#[tokio::test]
async fn a_key_check_that_times_out_is_503_not_401() {
    let store = silent_store().await;
    let key = shared::auth::ApiKey::generate();
    let request = integration_tests::direct_create(
        Some(&integration_tests::bearer(&key)),
        &serde_json::json!({"serviceName": "bot", "image": "a"}),
    );
    let response = create_agent::handle(&store, &store, integration_tests::MODE, request).await;
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(parts(response).0, 503);
}

#[tokio::test]
async fn a_log_read_that_times_out_is_503_with_retry_after() {
    let store = silent_store().await;
    let response = agent_logs::handle(
        &store,
        &store,
        &store,
        integration_tests::LOGS_SETTINGS,
        event("agent-logs.json"),
    )
    .await;
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(parts(response).0, 503);
}

#[tokio::test]
async fn an_authorizer_that_times_out_errs_instead_of_denying() {
    let store = silent_store().await;
    // A well-formed key, so the check reaches the store.
    let key = shared::auth::ApiKey::generate();
    let event = integration_tests::authorizer_event(&integration_tests::bearer(&key));
    let outcome = authorizer::authorize(&store, event).await;
    assert!(
        matches!(outcome, Err(shared::StoreError::Timeout(_))),
        "{outcome:?}"
    );
}
