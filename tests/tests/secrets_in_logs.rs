//! No API key ever reaches a log line: every log record of a full request cycle (authorizer,
//! create, logs read; success and failure), at TRACE level and including the SDK's, is captured
//! and searched for the key.

use std::io::Write;
use std::sync::{Arc, Mutex};

use integration_tests::{TestStore, bearer, direct_create, parts};
use serde_json::json;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn keys_never_appear_in_any_log_line() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .json()
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    let (_, revoked) = store.account_with_key("other").await;
    store.store.revoke_key_text(&revoked).await.unwrap();

    // Authorizer: allowed and denied (revoked).
    for candidate in [&key, &revoked] {
        let event = integration_tests::authorizer_event(&bearer(candidate));
        authorizer::authorize(&store.store, event).await.unwrap();
    }
    // Create: 201, 400, 409, 401 (revoked).
    for (auth, body) in [
        (
            &key,
            json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"}),
        ),
        (&key, json!({"serviceName": "Bad"})),
        (
            &key,
            json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"}),
        ),
        (
            &revoked,
            json!({"serviceName": "bot2", "image": "ghcr.io/acme/agent:1.0"}),
        ),
    ] {
        parts(
            create_agent::handle(
                &store.store,
                &store.store,
                direct_create(Some(&bearer(auth)), &body),
            )
            .await,
        );
    }
    // Logs: 200 and 404.
    for agent in ["bot", "ghost"] {
        let request = integration_tests::logs_request(&key, agent, &[]);
        parts(
            agent_logs::handle(
                &store.store,
                &store.store,
                &store.store,
                integration_tests::LOGS_SETTINGS,
                request,
            )
            .await,
        );
    }

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.lines().count() > 20,
        "the capture saw the request cycle: {} lines",
        logs.lines().count()
    );
    for secret in [&key, &revoked] {
        assert!(!logs.contains(secret.expose()), "a key reached a log line");
        // Nor its random part alone (a key split or re-encoded by a log field).
        assert!(
            !logs.contains(&secret.expose()[4..24]),
            "part of a key reached a log line"
        );
    }
}
