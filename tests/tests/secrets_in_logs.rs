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
    shared::account::revoke_key_text(&store.store, &revoked)
        .await
        .unwrap();

    // Authorizer: allowed, and denied (revoked).
    for (candidate, allowed) in [(&key, true), (&revoked, false)] {
        let event = integration_tests::authorizer_event(&bearer(candidate));
        let verdict = authorizer::authorize(&store.store, event).await.unwrap();
        assert_eq!(verdict.is_allowed(), allowed);
    }
    // Every answer of the cycle, each the one the contract gives: the capture saw what it was
    // meant to see, and no answer carries a key either.
    let mut answers: Vec<(u16, serde_json::Value)> = Vec::new();
    // Create: 201, 400, 409, 401 (revoked).
    for (auth, body, expected) in [
        (
            &key,
            json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"}),
            201,
        ),
        (&key, json!({"serviceName": "Bad"}), 400),
        (
            &key,
            json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"}),
            409,
        ),
        (
            &revoked,
            json!({"serviceName": "bot2", "image": "ghcr.io/acme/agent:1.0"}),
            401,
        ),
    ] {
        let answer = parts(
            create_agent::handle(
                &store.store,
                &store.store,
                direct_create(Some(&bearer(auth)), &body),
            )
            .await,
        );
        assert_eq!(answer.0, expected, "{body}: {}", answer.1);
        answers.push(answer);
    }
    // Logs: 200 and 404.
    for (agent, expected) in [("bot", 200), ("ghost", 404)] {
        let request = integration_tests::logs_request(&key, agent, &[]);
        let answer = parts(
            agent_logs::handle(
                &store.store,
                &store.store,
                &store.store,
                integration_tests::LOGS_SETTINGS,
                request,
            )
            .await,
        );
        assert_eq!(answer.0, expected, "{agent}: {}", answer.1);
        answers.push(answer);
    }
    let answered = serde_json::to_string(&answers).unwrap();

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.lines().count() > 20,
        "the capture saw the request cycle: {} lines",
        logs.lines().count()
    );
    for secret in [&key, &revoked] {
        assert!(!logs.contains(secret.expose()), "a key reached a log line");
        assert!(
            !answered.contains(&secret.expose()[4..24]),
            "part of a key reached an answer"
        );
        // Nor its random part alone (a key split or re-encoded by a log field).
        assert!(
            !logs.contains(&secret.expose()[4..24]),
            "part of a key reached a log line"
        );
    }
}
