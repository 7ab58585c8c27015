//! The anchor's CLI, whole (issue 34; docs/testing.md, the anchor's CLI suite), end to end: PyPI
//! pipecatcloud 1.4.0 unchanged, pointed at the stack with docs/anchor-cli.md's variables, the
//! stack's data plane on the Docker Engine running the example agent's image (`EXAMPLE_IMAGE`,
//! built by scripts/e2e.sh). Each command's exit status and the lines it prints are what a user
//! of the anchor's CLI reads: deploy, update, status, deployments, a crash loop, scale, start,
//! sessions, logs, stop, list, delete; the members this service refuses, each with its sentence;
//! krispViva, region and architecture accepted.

mod anchor_cli_support;

use anchor_cli_support::{Cli, ORG, docker, until_no_container};
use integration_tests::people::Pool;
use integration_tests::stack::Stack;
use reqwest::Method;
use serde_json::Value;
use shared::auth::KeyKind;

/// The example agent's image, which the stack's data plane runs.
fn example_image() -> String {
    std::env::var("EXAMPLE_IMAGE").expect("EXAMPLE_IMAGE: scripts/e2e.sh builds the example agent")
}

/// A second name of the same image: an update the data plane needs no registry for.
const V2: &str = "agent-hosting.local/example-agent:v2";

const SUCCESS: &str = "ᓚᘏᗢ Success";
const ERROR: &str = "ᓚᘏᗢ Error";

async fn agent(stack: &Stack, key: &shared::auth::ApiKey, name: &str) -> Value {
    let answer = stack.get(key, name).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

/// Rows 1 to 13 of section 6, in order, as one user of one account would run them.
#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn the_cli_deploys_updates_inspects_runs_a_session_lists_and_deletes_an_agent() {
    let stack = Stack::from_env();
    let (caller, key) = stack.account("cli").await;
    let public = stack.key_of(&caller.account_id, KeyKind::Public).await;
    let cli = Cli::new(&stack, &key);
    let image = example_image();

    // 1. A first deploy: created, polled until the data plane reports it ready.
    cli.run(&["deploy", "voice", &image, "--yes"])
        .exits(0)
        .has_line("Pushing deployment for agent 'voice'")
        .line_starting(&format!(
            "{SUCCESS} - Deployment complete: Agent deployment 'voice' is ready"
        ));

    // 2. An update (PUT /v1/agents), polled until the new deployment has settled.
    docker(&["tag", &image, V2]);
    cli.run(&["deploy", "voice", V2, "--yes"])
        .exits(0)
        .has_line("Updating deployment for agent 'voice'")
        .line_starting(&format!(
            "{SUCCESS} - Update complete: Agent deployment 'voice' is ready"
        ));
    let updated = agent(&stack, &key, "voice").await;
    assert_eq!(updated["deployment"]["manifest"]["spec"]["image"], V2);
    assert_eq!(updated["activeDeploymentReady"], true, "{updated}");

    // 3. Its status, plain and as JSON.
    cli.run(&["agent", "status", "voice"])
        .exits(0)
        .has_line("Ready: True")
        .has_line("Deployment Phase: Ready")
        .has_line(&format!("Image: {V2}"))
        .has_line("Krisp VIVA: Disabled");
    let status = cli
        .run(&["--output", "json", "agent", "status", "voice"])
        .exits(0)
        .json();
    assert_eq!(
        status["currentRevision"]["deploymentID"], status["activeDeploymentId"],
        "{status}"
    );

    // 4. Its deployments, newest first.
    let deployments = cli.run(&["agent", "deployments", "voice"]);
    deployments
        .exits(0)
        .has_line("Deployments for agent: voice")
        .has_line("ID\tNode Type\tImage / Build\tCreated At\tUpdated At");
    let rows = deployments.rows_after("ID\tNode Type\tImage / Build\tCreated At\tUpdated At");
    assert_eq!(rows.len(), 2, "{deployments}");
    assert_eq!(rows[0][0], status["activeDeploymentId"], "{deployments}");
    assert_eq!((rows[0][1], rows[0][2]), ("arm", V2), "{deployments}");
    assert_eq!((rows[1][1], rows[1][2]), ("arm", image.as_str()));

    // 5. An agent whose container exits 3 at every start: the deploy fails with the crash loop.
    cli.run(&[
        "secrets",
        "set",
        "crash-env",
        "EXAMPLE_EXIT_AT_START=3",
        "--skip",
    ])
    .exits(0);
    cli.run(&[
        "deploy",
        "crasher",
        &image,
        "--secrets",
        "crash-env",
        "--yes",
    ])
    .exits(1)
    .line_starting(&format!(
        "{ERROR} - CRASH_LOOP: Agent deployment failed: the container exited with code 3"
    ));

    // 6. Its status: failed, the error with the container's last lines, the health behind it.
    let crashed = cli.run(&["agent", "status", "crasher"]);
    crashed
        .exits(0)
        .has_line("Ready: False")
        .has_line("Deployment Phase: Failed");
    crashed.line_starting("Error: CRASH_LOOP the container exited with code 3");
    assert!(
        crashed.stdout.contains("exiting at start with code 3"),
        "the last lines: {crashed}"
    );
    let health = cli
        .run(&["--output", "json", "agent", "status", "crasher"])
        .exits(0)
        .json()["currentRevision"]["health"]
        .clone();
    assert_eq!(health["state"], "failed", "{health}");
    assert_eq!(health["reason"], "CRASH_LOOP", "{health}");
    assert_eq!(health["lastExitCode"], 3, "{health}");
    assert!(health["restartCount"].as_u64() >= Some(2), "{health}");

    // 7. `agent scale` sends nothing; scaling is a deploy with the bounds.
    cli.run(&["agent", "scale"])
        .exits(0)
        .has_line(&format!("{ERROR}: Not implemented"));
    let scale = ["--min-agents", "1", "--max-agents", "2", "--yes"];
    cli.run(&[&["deploy", "voice", V2][..], &scale[..]].concat())
        .exits(0);
    cli.run(&["agent", "status", "voice"])
        .exits(0)
        .has_line("Min Agents: 1")
        .has_line("Max Agents: 2");

    // 8. A session started with the public key.
    let started = cli.run(&[
        "agent",
        "start",
        "voice",
        "--force",
        "--api-key",
        public.expose(),
        "--data",
        r#"{"durationSeconds": 60}"#,
    ]);
    started
        .exits(0)
        .has_line(&format!("{SUCCESS}: Agent 'voice' started successfully"));
    let session = started
        .line_starting("Session ID: ")
        .trim_start_matches("Session ID: ")
        .to_owned();
    assert!(uuid::Uuid::parse_str(&session).is_ok(), "{started}");

    // 9. Listed, active.
    let sessions = cli.run(&["agent", "sessions", "voice"]);
    let row = sessions.exits(0).line_starting(&format!("{session}\t"));
    assert_eq!(row.split('\t').nth(4), Some("Active"), "{sessions}");

    // 10. Its own lines, as the agent wrote them, once shipped.
    let logs = cli.run_until(
        &["agent", "logs", "voice", "--session-id", &session],
        |run| run.code == 0 && run.stdout.contains("session started"),
    );
    let line = (logs.lines().find(|line| line.contains("session started")))
        .expect("the line the agent wrote at the session's start");
    let (stamp, text) = line.split_at(19);
    assert!(
        time::PrimitiveDateTime::parse(
            stamp,
            time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]")
        )
        .is_ok(),
        "YYYY-MM-DD HH:MM:SS then the line: {logs}"
    );
    assert!(
        text.starts_with(' ') && text.contains(&session),
        "its own line, with the session's id: {logs}"
    );

    // 11. Stopped: the API shows it ended, terminated.
    cli.run(&[
        "agent",
        "stop",
        "voice",
        "--session-id",
        &session,
        "--force",
    ])
    .exits(0)
    .has_line(&format!(
        "{SUCCESS}: Session '{session}' stopped successfully"
    ));
    let path = format!("/agents/voice/sessions/{session}");
    let ended = stack
        .read_until(
            &key,
            &path,
            (
                integration_tests::bounded::Bound::new(120, std::time::Duration::from_secs(30)),
                std::time::Duration::from_millis(250),
            ),
            |s| s["status"] == "ended",
        )
        .await;
    assert_eq!(ended["completionStatus"], "terminated", "{ended}");

    // 12. The account's agents, each in the stack's region.
    let region = shared::config::region();
    let listed = cli.run(&["agent", "list"]);
    listed
        .exits(0)
        .has_line(&format!("Agents for organization: {ORG} (2 results)"));
    listed.line_starting(&format!("voice\t{region}\t"));
    listed.line_starting(&format!("crasher\t{region}\t"));

    // 13. Deleted, then no such agent; its containers are gone.
    cli.run(&["agent", "delete", "voice", "--force"])
        .exits(0)
        .has_line(&format!("{SUCCESS}: Agent 'voice' deleted successfully"));
    cli.run(&["agent", "delete", "voice", "--force"])
        .exits(1)
        .has_line(&format!(
            "{ERROR}: Agent 'voice' not found in organization '{ORG}'"
        ));
    until_no_container(&caller.namespace, "voice");
    // The crash loop's replicas go with their agent too.
    cli.run(&["agent", "delete", "crasher", "--force"]).exits(0);
    until_no_container(&caller.namespace, "crasher");
}

/// Row 14: what the anchor offers and this service does not is refused with its sentence, which
/// the CLI prints (it never prints `field`).
#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn the_members_this_service_does_not_offer_are_refused_with_their_sentences() {
    let stack = Stack::from_env();
    let (_, key) = stack.account("cli-refused").await;
    let cli = Cli::new(&stack, &key);
    let image = example_image();
    let deploy = ["deploy", "x", image.as_str(), "--yes"];
    let refused = |args: &[&str], sentence: &str| {
        cli.run(args).exits(1).has_line(&format!(
            "{ERROR} - GENERIC_BAD_REQUEST: API Error: {sentence}"
        ));
    };
    let with = |flags: &[&'static str]| {
        let mut args = deploy.to_vec();
        args.extend_from_slice(flags);
        args
    };
    refused(
        &with(&["--architecture", "amd64"]),
        "architecture must be 'arm64', the architecture of nodeType 'arm' (the only node type), \
         or be left out",
    );
    refused(
        &with(&["--resources", "cpu=1,memory=2Gi"]),
        "resources (explicit cpu and memory) is for the anchor's self-hosted regions, which this \
         service does not have; size the agent with agentProfile: 'agent-1x' or 'agent-2x'",
    );
    refused(
        &with(&["--build-id", "b1"]),
        "buildId (the anchor's cloud builds) is not offered by this service; build and push an \
         image and deploy it by image",
    );
    // Without an image: the CLI itself refuses a repository beside an image.
    refused(
        &[
            "deploy", "x", "--repo", "acme/a", "--branch", "main", "--yes",
        ],
        "git (building the agent from a GitHub repository) is not offered by this service; build \
         and push an image and deploy it by image",
    );
    std::fs::write(cli.deploy_config(), "websocket_auth = \"token\"\n").unwrap();
    refused(
        &deploy,
        "websocketAuth 'token' is not offered: this service has no public WebSocket path to a \
         replica on which to check a token yet; leave it out or send 'none'",
    );
    let none = stack.send_as(&key, Method::GET, "/agents/x", None).await;
    assert_eq!(none.status, 404, "nothing was made: {:?}", none.body);
}

/// Row 15: the anchor's region, architecture and krispViva, accepted for what they mean here.
#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn region_arm64_and_a_krisp_viva_filter_are_accepted() {
    let stack = Stack::from_env();
    let (caller, key) = stack.account("cli-krisp").await;
    let cli = Cli::new(&stack, &key);
    let region = shared::config::region();
    cli.run(&[
        "deploy",
        "k",
        &example_image(),
        "--yes",
        "--region",
        &region,
        "--architecture",
        "arm64",
        "--krisp-viva-audio-filter",
        "tel",
    ])
    .exits(0)
    .line_starting(&format!(
        "{SUCCESS} - Deployment complete: Agent deployment 'k' is ready"
    ));
    cli.run(&["agent", "status", "k"])
        .exits(0)
        .has_line("Krisp VIVA: Enabled (tel)");
    let k = agent(&stack, &key, "k").await;
    assert_eq!(k["noiseViva"]["audioFilter"], "tel", "{k}");
    cli.run(&["agent", "delete", "k", "--force"]).exits(0);
    until_no_container(&caller.namespace, "k");
}

/// `organizations keys` (contract 13): with a person's access token as PIPECAT_TOKEN, `create
/// --default` makes a public key and keeps it as the config's default, `list` shows it by name,
/// and `agent start` without `--api-key` starts a session with it. An API key as PIPECAT_TOKEN
/// is refused on the keys routes (403), which the CLI reports as an error.
#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn organizations_keys_list_and_create_with_a_persons_token_and_start_with_the_new_key() {
    let stack = Stack::from_env();
    let person = Pool::from_env().invite("cli-keys").await;
    let cli = Cli::with_token(&stack, &person.token);

    let created = cli.run(&[
        "organizations",
        "keys",
        "create",
        "--name",
        "web",
        "--default",
    ]);
    created.exits(0);
    let key = created.rows_after("Name\tKey\tOrganization ID")[0][1].to_owned();
    assert!(
        key.starts_with("ahp_"),
        "a public key, shown once: {created}"
    );
    let listed = cli.run(&["organizations", "keys", "list"]);
    listed.exits(0);
    let row = listed.rows_after("Name\tKey\tCreated At\tStatus");
    assert!(
        row.iter()
            .any(|row| row[0] == "web" && row.last() == Some(&"Active")),
        "{listed}"
    );
    assert!(
        !listed.stdout.contains(&key),
        "a key is never shown again: {listed}"
    );

    cli.run(&["deploy", "keys", &example_image(), "--yes"])
        .exits(0);
    cli.run(&["agent", "start", "keys", "--force"])
        .exits(0)
        .has_line(&format!("{SUCCESS}: Agent 'keys' started successfully"));
    cli.run(&["agent", "delete", "keys", "--force"]).exits(0);

    let (_, api_key) = stack.account("cli-keys-by-key").await;
    let refused = Cli::new(&stack, &api_key).run(&["organizations", "keys", "list"]);
    let sentence = shared::error::ApiError::KeysNeedAPerson.to_string();
    refused
        .exits(1)
        .has_line(&format!("{ERROR} - FORBIDDEN: API Error: {sentence}"));
}
