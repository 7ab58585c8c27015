//! No API key and no secret value ever reaches a log line: every log record of a full request
//! cycle, at TRACE level and including the SDK's (request bodies among them), is captured and
//! searched. Keys: the authorizer, create, logs read, success and failure. Secret values (contract
//! section 10): each secrets route, a create naming the sets, the events the stream publisher
//! makes of it and the data plane opening the sets, on DynamoDB Local and moto's KMS; the
//! values and their data keys are in no log line, answer, event or data plane line, and what
//! travels to the store is the sealed value. (The functions' own subscriber never passes
//! lambda_runtime's TRACE of the raw event: shared::telemetry's tests. The service writes no
//! metrics of its own: CloudWatch's are the only ones.)

use std::io::Write;
use std::sync::{Arc, Mutex};

use integration_tests::emulators::Moto;
use integration_tests::{TestStore, bearer, direct_create, parts, secrets_request, streams};
use serde_json::json;
use shared::secrets::seal::Binding;
use shared::secrets::store::{DataKeyOpener, SecretStore};
use shared::store::kms::{KmsDataKeys, KmsKeyOpener};

const REGION: &str = "us-east-1";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Every event and span of every target at TRACE, as JSON, for as long as the guard lives (on
/// this thread: a current-thread runtime runs the SDK's connections here too).
fn capture_at_trace() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .json()
        .with_writer(move || writer.clone())
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

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
    let (captured, _guard) = capture_at_trace();

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
                integration_tests::MODE,
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

    let logs = captured.text();
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

/// Every form in which a value or a data key could be written down: as is, in base64 (standard
/// and URL-safe) and in hex.
fn written_forms(secret: &[u8]) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let mut forms = vec![
        STANDARD.encode(secret),
        URL_SAFE_NO_PAD.encode(secret),
        secret.iter().map(|byte| format!("{byte:02x}")).collect(),
    ];
    forms.extend(String::from_utf8(secret.to_vec()));
    forms
}

/// The values of `namespace`'s set `name` as stored (sealed), and their data keys opened by
/// KMS: what must travel (the former) and what must never be written (the latter).
async fn sealed_and_keys(
    store: &TestStore,
    kms: &KmsKeyOpener,
    namespace: &str,
    name: &str,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let set = store.store.get_set(namespace, name).await.unwrap().unwrap();
    let mut ciphertexts = Vec::new();
    let mut data_keys = Vec::new();
    for value in store.store.get_values(&set).await.unwrap() {
        let binding = Binding {
            namespace,
            set: name,
            key: &value.key,
        };
        let data_key = kms
            .open_data_key(&value.sealed.encrypted_key, &binding)
            .await
            .unwrap();
        data_keys.push(data_key.to_vec());
        ciphertexts.push(value.sealed.ciphertext);
    }
    (ciphertexts, data_keys)
}

#[tokio::test]
async fn secret_values_are_in_no_log_line_event_or_answer_at_trace() {
    use base64::Engine;
    let moto = Moto::start();
    let data_keys = KmsDataKeys::new(moto.kms(), moto.kms_key().await);
    let opener = KmsKeyOpener::new(moto.kms());
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let namespace = owner.namespace.as_str();
    let (planted_part, token_part) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    let planted = format!("sk-planted-{}", planted_part.simple());
    let token = format!("ghp-planted-{}", token_part.simple());
    let credentials = base64::engine::general_purpose::STANDARD.encode(format!("user:{token}"));

    let (captured, guard) = capture_at_trace();
    let mut answers = Vec::new();
    let puts = [
        (
            "voice",
            json!({"secrets": [{"secretKey": "OPENAI_API_KEY", "secretValue": planted},
                {"secretKey": "SPARE", "secretValue": planted}]}),
            200,
        ),
        (
            "pull",
            json!({"isImagePullSecret": true, "host": "ghcr.io", "secretValue": credentials}),
            200,
        ),
        // Refused input that carries the value: its 400 must not echo it either.
        (
            "voice",
            json!({"secretKey": "bad key!", "secretValue": planted}),
            400,
        ),
    ];
    for (set, body, expected) in puts {
        let request = secrets_request("PUT", &key, &[set], Some(&body));
        let answer = parts(
            put_secret_set::handle(&store.store, &data_keys, &store.store, REGION, request).await,
        );
        assert_eq!(answer.0, expected, "{set}: {}", answer.1);
        answers.push(answer);
    }
    for set in ["voice", "pull"] {
        let request = secrets_request("GET", &key, &[set], None);
        let answer =
            parts(get_secret_set::handle(&store.store, &store.store, REGION, request).await);
        assert_eq!(answer.0, 200, "{set}: {}", answer.1);
        answers.push(answer);
    }
    let request = secrets_request("GET", &key, &[], None);
    let answer = parts(
        list_secret_sets::handle(
            &store.store,
            &store.store,
            &integration_tests::CURSOR_KEY,
            REGION,
            request,
        )
        .await,
    );
    assert_eq!(answer.0, 200, "{}", answer.1);
    answers.push(answer);
    let request = secrets_request("DELETE", &key, &["voice", "SPARE"], None);
    let answer = parts(delete_secret::handle(&store.store, &store.store, request).await);
    assert_eq!(answer.0, 200, "{}", answer.1);
    answers.push(answer);
    // A create that names both sets, its events as the publisher makes them, and what the data
    // plane opens of them for the deployment.
    let body = json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0",
        "secretSet": "voice", "imagePullSecretSet": "pull"});
    let answer = parts(
        create_agent::handle(
            &store.store,
            &store.store,
            integration_tests::MODE,
            direct_create(Some(&bearer(&key)), &body),
        )
        .await,
    );
    assert_eq!(answer.0, 201, "{}", answer.1);
    answers.push(answer);
    let records = streams::drained(&mut streams::reader(&store).await).await;
    let events: Vec<serde_json::Value> = records
        .iter()
        .filter_map(|record| shared::stream_events::event_of(&record.record).unwrap())
        .map(|event| dev_data_plane::rules::as_delivered(&event))
        .collect();
    assert_eq!(events.len(), 1, "one Deployment Requested: {events:#?}");
    let reader = dev_data_plane::secrets::SetReader {
        store: store.store.clone(),
        keys: KmsKeyOpener::new(moto.kms()),
    };
    let received = reader.receive(&events[0]).await;
    drop(guard);

    assert!(
        received[0].contains("keys OPENAI_API_KEY") && received[1].contains("for ghcr.io"),
        "the data plane opened both sets: {received:?}"
    );
    let logs = captured.text();
    // The capture saw the SDK's TRACE, request bodies included: the sealed values travel.
    let (mut ciphertexts, mut opened_keys) =
        sealed_and_keys(&store, &opener, namespace, "voice").await;
    let (pull_ciphertexts, pull_keys) = sealed_and_keys(&store, &opener, namespace, "pull").await;
    ciphertexts.extend(pull_ciphertexts);
    opened_keys.extend(pull_keys);
    assert!(
        logs.contains("transmitting request"),
        "no SDK TRACE captured"
    );
    for ciphertext in &ciphertexts {
        let sent = base64::engine::general_purpose::STANDARD.encode(ciphertext);
        assert!(logs.contains(&sent), "the sealed value is what travels");
    }
    let written = [
        ("the logs", logs),
        ("the answers", serde_json::to_string(&answers).unwrap()),
        ("the events", serde_json::to_string(&events).unwrap()),
        ("the data plane's lines", received.join("\n")),
    ];
    // Each value whole and its random part alone (a value cut or re-encoded by a log field).
    let secrets = [planted, token, credentials]
        .into_iter()
        .chain([planted_part, token_part].map(|part| part.simple().to_string()))
        .map(String::into_bytes)
        .chain(opened_keys);
    for secret in secrets {
        for form in written_forms(&secret) {
            for (place, text) in &written {
                assert!(
                    !text.contains(&form),
                    "a secret value or data key ({} bytes) in {place}",
                    secret.len()
                );
            }
        }
    }
}
