//! Secret values in the clear, looked for everywhere (contract section 10), on a stack of its own
//! (scripts/e2e.sh watch plaintext): the anchor's CLI (`pipecat cloud secrets`, PyPI pipecatcloud)
//! drives the secrets routes unchanged; values planted through it and through the API, bad
//! input included, are then looked for in every answer, in every file under .local/ (DynamoDB
//! Local's data on disk, every log of the stack: the functions', the data plane's, moto's) and
//! found nowhere, while the development data plane shows it opened them (it logs key names).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use integration_tests::contains;
use integration_tests::stack::{Answer, Stack, bearer};
use reqwest::Method;
use serde_json::{Value, json};
use shared::auth::ApiKey;

/// The anchor's CLI, pointed at the stack with the variables its users set.
struct Cli {
    bin: String,
    host: String,
    token: String,
    config: PathBuf,
}

impl Cli {
    fn new(stack: &Stack, key: &ApiKey) -> Self {
        let config = std::env::temp_dir().join(format!("pcc-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(&config, "").unwrap();
        Cli {
            bin: std::env::var("PIPECAT_BIN")
                .expect("PIPECAT_BIN: scripts/e2e.sh installs the CLI"),
            // The CLI appends PIPECAT_SECRETS_PATH (/v1/secrets) to the host.
            host: stack.api.trim_end_matches("/v1").to_owned(),
            token: key.expose().to_owned(),
            config,
        }
    }

    /// `pipecat cloud secrets ARGS...` with JSON output: exit status, stdout, stderr.
    fn secrets(&self, args: &[&str]) -> (i32, String, String) {
        let output = Command::new(&self.bin)
            .args(["cloud", "secrets"])
            .args(args)
            .env("PIPECAT_API_HOST", &self.host)
            .env("PIPECAT_SECRETS_PATH", "/v1/secrets")
            .env("PIPECAT_TOKEN", &self.token)
            .env("PIPECAT_ORG", "e2e")
            .env("PIPECAT_CONFIG_PATH", &self.config)
            .env("PIPECAT_OUTPUT", "json")
            .env("NO_COLOR", "1")
            .output()
            .expect("the anchor's CLI runs");
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        (
            output.status.code().unwrap_or(-1),
            text(&output.stdout),
            text(&output.stderr),
        )
    }

    /// A command that must succeed; its JSON output, when it printed some.
    fn ok(&self, args: &[&str]) -> Option<Value> {
        let (status, stdout, stderr) = self.secrets(args);
        assert_eq!(
            status, 0,
            "pipecat cloud secrets {args:?}: {stdout} {stderr}"
        );
        serde_json::from_str(stdout.trim()).ok()
    }
}

async fn call(
    stack: &Stack,
    key: &ApiKey,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Answer {
    stack
        .call(method, path, Some(&bearer(key)), |request| match body {
            Some(body) => request.json(&body),
            None => request,
        })
        .await
}

/// The keys of a set as the API lists them (what the CLI's writes are checked against: it does
/// not tell a refused connection from a success).
async fn keys_of(stack: &Stack, key: &ApiKey, set: &str) -> Vec<String> {
    let answer = call(stack, key, Method::GET, &format!("/secrets/{set}"), None).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["fieldName"].as_str().unwrap().to_owned())
        .collect()
}

/// The anchor's CLI round trip: set two keys, list, list the set (names, no values), unset one,
/// an image pull secret, delete.
async fn cli_round_trip(stack: &Stack, key: &ApiKey, planted: &str) -> Vec<String> {
    let cli = Cli::new(stack, key);
    let mut printed = Vec::new();
    let first = format!("OPENAI_API_KEY={planted}-openai");
    let second = format!("DEEPGRAM_API_KEY={planted}-deepgram");
    cli.ok(&["set", "cli-keys", &first, &second, "--skip"]);
    assert_eq!(
        keys_of(stack, key, "cli-keys").await,
        ["DEEPGRAM_API_KEY", "OPENAI_API_KEY"]
    );

    let listed = cli.ok(&["list"]).expect("JSON");
    let sets = listed["secretSets"].as_array().expect("the CLI's list");
    assert!(
        sets.iter()
            .any(|set| set["name"] == "cli-keys" && set["type"] == "secret"),
        "{listed}"
    );
    let shown = cli.ok(&["list", "cli-keys"]).expect("JSON");
    let names: Vec<&str> = shown["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["fieldName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["DEEPGRAM_API_KEY", "OPENAI_API_KEY"], "{shown}");
    printed.extend([listed.to_string(), shown.to_string()]);

    cli.ok(&["unset", "cli-keys", "OPENAI_API_KEY", "--skip"]);
    assert_eq!(keys_of(stack, key, "cli-keys").await, ["DEEPGRAM_API_KEY"]);
    let (status, stdout, stderr) = cli.secrets(&["unset", "cli-keys", "OPENAI_API_KEY", "--skip"]);
    assert_eq!(status, 1, "a key no longer there: {stdout} {stderr}");
    printed.extend([stdout, stderr]);

    let credentials = format!("robot:{planted}-registry");
    cli.ok(&[
        "image-pull-secret",
        "cli-pull",
        "ghcr.io",
        &credentials,
        "--skip",
    ]);
    let pull = call(stack, key, Method::GET, "/secrets/cli-pull", None).await;
    assert_eq!(
        (pull.body["type"].as_str(), pull.body["host"].as_str()),
        (Some("imagePullSecret"), Some("ghcr.io")),
        "{:?}",
        pull.body
    );
    let listed = cli.ok(&["list"]).expect("JSON");
    assert!(
        listed["secretSets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|set| set["name"] == "cli-pull" && set["type"] == "imagePullSecret"),
        "{listed}"
    );
    printed.push(listed.to_string());

    cli.ok(&["delete", "cli-pull", "--skip"]);
    let gone = call(stack, key, Method::GET, "/secrets/cli-pull", None).await;
    assert_eq!(gone.status, 404);
    printed
}

/// Waits until the data plane's log has a line with `text`.
async fn data_plane_logged(text: &str) -> String {
    let log = std::env::var("STACK_DATA_PLANE_LOG").expect("the stack runs a data plane");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = logged.lines().find(|line| line.contains(text)) {
            return line.to_owned();
        }
        assert!(Instant::now() < deadline, "no '{text}' in {log}:\n{logged}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_planted_value_is_found_nowhere_in_the_clear_and_the_anchors_cli_round_trips() {
    let stack = Stack::from_env();
    let (_, key) = stack.account("plaintext").await;
    let planted = format!("sk-planted-{}", uuid::Uuid::new_v4().simple());
    let mut answers: Vec<String> = cli_round_trip(&stack, &key, &planted).await;

    // Through the API: a set for an agent, and bad input carrying the value, each refused.
    let value = format!("{planted}-api");
    let made = call(
        &stack,
        &key,
        Method::PUT,
        "/secrets/voice-keys",
        Some(json!({"secretKey": "ELEVENLABS_API_KEY", "secretValue": value})),
    )
    .await;
    assert_eq!(made.status, 200, "{:?}", made.body);
    for (path, body) in [
        (
            "/secrets/voice-keys",
            json!({"secretKey": "bad key", "secretValue": value}),
        ),
        (
            "/secrets/voice-keys",
            json!({"name": "other", "secretKey": "A", "secretValue": value}),
        ),
        (
            "/secrets/voice-keys",
            json!({"secretKey": "A", "secretValue": value, "region": value}),
        ),
        (
            "/secrets/voice-keys",
            json!({"secretKey": "A", "secretValue": value, "extra": value}),
        ),
        (
            "/secrets/Voice-Keys",
            json!({"secretKey": "A", "secretValue": value}),
        ),
        (
            "/secrets/voice-keys",
            json!({"isImagePullSecret": true, "host": "ghcr.io", "secretValue": value}),
        ),
        (
            "/secrets/voice-keys",
            json!({"secrets": [{"secretKey": "A", "secretValue": value},
            {"secretKey": "A", "secretValue": value}]}),
        ),
    ] {
        let refused = call(&stack, &key, Method::PUT, path, Some(body.clone())).await;
        assert!(
            (400..500).contains(&refused.status),
            "{body}: {:?}",
            refused.body
        );
        answers.push(refused.body.to_string());
    }
    assert_eq!(
        keys_of(&stack, &key, "voice-keys").await,
        ["ELEVENLABS_API_KEY"]
    );

    // An agent naming both sets: the data plane opens them for its deployment.
    let agent = call(&stack, &key, Method::POST, "/agents", Some(json!({
        "serviceName": "plaintext-bot", "image": "ghcr.io/acme/bot:1.0", "secretSet": "voice-keys"
    }))).await;
    assert_eq!(agent.status, 201, "{:?}", agent.body);
    let deployment = agent.body["activeDeploymentId"]
        .as_str()
        .unwrap()
        .to_owned();
    let received = data_plane_logged(&format!("deployment {deployment} receives")).await;
    assert!(
        received.contains("secret set voice-keys: keys ELEVENLABS_API_KEY"),
        "{received}"
    );
    for path in [
        "/secrets",
        "/secrets/voice-keys",
        "/secrets/cli-keys",
        "/agents/plaintext-bot",
    ] {
        answers.push(
            call(&stack, &key, Method::GET, path, None)
                .await
                .body
                .to_string(),
        );
    }

    for answer in &answers {
        assert!(
            !answer.contains(&planted[..20]),
            "a value in an answer: {answer}"
        );
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.local");
    let files = integration_tests::stack::local_files(&root);
    let data = root.join("e2e-dynamodb");
    assert!(
        files.iter().any(|file| file.starts_with(&data)),
        "DynamoDB Local's files are among those searched"
    );
    let (mut bytes, mut key_names_found) = (0, false);
    for file in &files {
        let content = std::fs::read(file).unwrap_or_default();
        bytes += content.len();
        // The control: what is kept in the clear (a key's name) is found where it is kept.
        key_names_found |= file.starts_with(&data) && contains(&content, b"ELEVENLABS_API_KEY");
        assert!(
            !contains(&content, &planted.as_bytes()[..20]),
            "a value in the clear in {}",
            file.display()
        );
    }
    assert!(key_names_found, "the search reads DynamoDB Local's data");
    println!(
        "a planted value in none of {} answers and {} files ({} bytes) under .local/",
        answers.len(),
        files.len(),
        bytes
    );
}
