//! Every fixture in events/ through `sam local invoke`, as docs/fixtures.md shows it: the function of
//! the template that the fixture is for, in its container, on tables of its own in the stack's
//! DynamoDB Local; each answer checked (status and code, the authorizer's verdict, the lines
//! stored). `scripts/e2e.sh sam invoke` builds the functions and runs this file; `make test`
//! runs it.
//!
//! Besides the stack's variables (tests/src/stack.rs), it reads `STACK_SAM_ARCH` and
//! `STACK_CONTAINER_DYNAMODB_ENDPOINT` and `STACK_CONTAINER_KMS_ENDPOINT` (DynamoDB Local and
//! moto (KMS, Secrets Manager) as the functions' containers reach them), `SECRETS_KEY_ID` and
//! `CURSOR_SECRET_ID`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use integration_tests::workspace;
use serde_json::{Value, json};
use shared::config::TableNames;
use shared::store::dynamodb::DynamoStore;
use shared::store::tables;
use shared::testing::seed_fixture_agents;

/// What a fixture's function answers.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// An HTTP answer: status, and the error code when it is an error.
    Http(u16, Option<&'static str>),
    /// The authorizer's verdict.
    Authorized(bool),
    /// The ingest function's report: lines stored.
    Stored(usize),
    /// The status function's outcome.
    Report(&'static str),
    /// The sweeper's: sessions it ended.
    Swept(usize),
    /// The stream publisher's: the records it asks Lambda to retry.
    Retried(usize),
    /// A Cognito trigger's: the event of the fixture named, unchanged (Cognito's rule).
    Echoed(&'static str),
}

use Expect::*;

/// Each fixture, the template's function it is an event of, and the answer, in chains: the
/// fixtures of a chain run in order (they change what the next one finds), the chains
/// concurrently. The agents they name are made first (shared::testing): `demo-agent` (read,
/// reported on, logged to), `video-bot` (updated), `old-bot` (deleted), in `dev-local`.
const FIXTURES: &[&[(&str, &str, Expect)]] = &[
    &[("create-agent.json", "CreateAgentFunction", Http(201, None))],
    &[(
        "create-agent-full.json",
        "CreateAgentFunction",
        Http(201, None),
    )],
    &[(
        "create-agent-idempotent.json",
        "CreateAgentFunction",
        Http(201, None),
    )],
    &[(
        "create-agent-invalid.json",
        "CreateAgentFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "create-agent-unknown-set.json",
        "CreateAgentFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "create-agent-unknown-member.json",
        "CreateAgentFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "create-agent-duplicate-member.json",
        "CreateAgentFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "create-agent-repeated-idempotency-key.json",
        "CreateAgentFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "create-agent-form-content-type.json",
        "CreateAgentFunction",
        Http(415, Some("UNSUPPORTED_MEDIA_TYPE")),
    )],
    &[(
        "create-agent-no-key.json",
        "CreateAgentFunction",
        Http(401, Some("UNAUTHORIZED")),
    )],
    &[(
        "create-agent-not-utf8.json",
        "CreateAgentFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "create-agent-wrong-method.json",
        "CreateAgentFunction",
        Http(405, Some("METHOD_NOT_ALLOWED")),
    )],
    &[("get-agent.json", "GetAgentFunction", Http(200, None))],
    &[(
        "get-agent-unknown.json",
        "GetAgentFunction",
        Http(404, Some("NOT_FOUND")),
    )],
    &[(
        "get-agent-public-key.json",
        "GetAgentFunction",
        Http(403, Some("FORBIDDEN")),
    )],
    // The session fixtures' agent, in order: a start (nothing reports under `sam local invoke`:
    // it answers `starting` once its wait passed), the seeded session read, stopped twice and
    // ended by a report delivered twice; then a sweep ahead of every deadline ends what is left
    // active: the start's session, still starting.
    &[
        (
            "start-session.json",
            "StartSessionFunction",
            Http(200, None),
        ),
        ("get-session.json", "GetSessionFunction", Http(200, None)),
        ("stop-session.json", "StopSessionFunction", Http(200, None)),
        // Asked once; the second is answered the same.
        ("stop-session.json", "StopSessionFunction", Http(200, None)),
        (
            "session-status.json",
            "SessionStatusFunction",
            Report("applied"),
        ),
        // EventBridge delivers at least once: the same report again moves nothing.
        (
            "session-status.json",
            "SessionStatusFunction",
            Report("settled"),
        ),
        ("session-sweeper.json", "SessionSweeperFunction", Swept(1)),
    ],
    &[(
        "start-session-not-ready.json",
        "StartSessionFunction",
        Http(503, Some("AGENT_NOT_READY")),
    )],
    &[(
        "start-session-invalid.json",
        "StartSessionFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "get-session-unknown.json",
        "GetSessionFunction",
        Http(404, Some("NOT_FOUND")),
    )],
    &[(
        "get-session-wrong-method.json",
        "GetSessionFunction",
        Http(405, Some("METHOD_NOT_ALLOWED")),
    )],
    &[(
        "list-sessions.json",
        "ListSessionsFunction",
        Http(200, None),
    )],
    &[(
        "list-sessions-bad-filter.json",
        "ListSessionsFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "list-sessions-wrong-method.json",
        "ListSessionsFunction",
        Http(405, Some("METHOD_NOT_ALLOWED")),
    )],
    &[(
        "session-status-other-account.json",
        "SessionStatusFunction",
        Report("unknownAgent"),
    )],
    &[(
        "get-agent-wrong-method.json",
        "GetAgentFunction",
        Http(405, Some("METHOD_NOT_ALLOWED")),
    )],
    &[
        ("update-agent.json", "UpdateAgentFunction", Http(200, None)),
        // The same configuration again: nothing to deploy, still a 200.
        ("update-agent.json", "UpdateAgentFunction", Http(200, None)),
        // The same agent updated as the anchor's CLI does: PUT /v1/agents naming it.
        (
            "update-agent-collection.json",
            "UpdateAgentFunction",
            Http(200, None),
        ),
    ],
    &[(
        "update-agent-collection-no-name.json",
        "UpdateAgentFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "update-agent-stale-if-match.json",
        "UpdateAgentFunction",
        Http(412, Some("PRECONDITION_FAILED")),
    )],
    &[(
        "update-agent-rename.json",
        "UpdateAgentFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "update-agent-unknown.json",
        "UpdateAgentFunction",
        Http(404, Some("NOT_FOUND")),
    )],
    &[
        ("delete-agent.json", "DeleteAgentFunction", Http(200, None)),
        (
            "delete-agent.json",
            "DeleteAgentFunction",
            Http(404, Some("NOT_FOUND")),
        ),
    ],
    &[("list-agents.json", "ListAgentsFunction", Http(200, None))],
    &[(
        "list-agents-bad-limit.json",
        "ListAgentsFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "list-deployments.json",
        "ListDeploymentsFunction",
        Http(200, None),
    )],
    &[(
        "list-deployments-unknown-agent.json",
        "ListDeploymentsFunction",
        Http(404, Some("NOT_FOUND")),
    )],
    &[(
        "list-deployments-unknown-parameter.json",
        "ListDeploymentsFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "list-deployments-wrong-method.json",
        "ListDeploymentsFunction",
        Http(405, Some("METHOD_NOT_ALLOWED")),
    )],
    &[(
        "account-info-properties.json",
        "AccountInfoFunction",
        Http(200, None),
    )],
    &[(
        "account-info-regions.json",
        "AccountInfoFunction",
        Http(200, None),
    )],
    &[(
        "account-info-organizations.json",
        "AccountInfoFunction",
        Http(200, None),
    )],
    &[(
        "account-info-public-key.json",
        "AccountInfoFunction",
        Http(403, Some("FORBIDDEN")),
    )],
    &[(
        "account-info-wrong-method.json",
        "AccountInfoFunction",
        Http(405, Some("METHOD_NOT_ALLOWED")),
    )],
    // A person of the dev account (shared::testing::seed_fixture_person): the list, a key made,
    // the seeded key revoked, another method.
    &[
        ("keys-list.json", "KeysFunction", Http(200, None)),
        ("keys-create.json", "KeysFunction", Http(201, None)),
        ("keys-revoke.json", "KeysFunction", Http(200, None)),
        (
            "keys-wrong-method.json",
            "KeysFunction",
            Http(405, Some("METHOD_NOT_ALLOWED")),
        ),
    ],
    &[("agent-logs.json", "AgentLogsFunction", Http(200, None))],
    &[(
        "agent-logs-filtered.json",
        "AgentLogsFunction",
        Http(200, None),
    )],
    &[(
        "agent-logs-milliseconds.json",
        "AgentLogsFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "agent-logs-unknown-agent.json",
        "AgentLogsFunction",
        Http(404, Some("NOT_FOUND")),
    )],
    &[("ingest-logs.json", "IngestLogsFunction", Stored(7))],
    &[
        (
            "deployment-status.json",
            "DeploymentStatusFunction",
            Report("applied"),
        ),
        (
            "deployment-status.json",
            "DeploymentStatusFunction",
            Report("stale"),
        ),
        (
            "deployment-status-failed.json",
            "DeploymentStatusFunction",
            Report("applied"),
        ),
    ],
    &[(
        "deployment-status-unknown.json",
        "DeploymentStatusFunction",
        Report("unknownDeployment"),
    )],
    &[(
        "deployment-status-zero-time.json",
        "DeploymentStatusFunction",
        Report("refused"),
    )],
    &[(
        "put-secret-set.json",
        "PutSecretSetFunction",
        Http(200, None),
    )],
    &[(
        "put-secret-set-invalid.json",
        "PutSecretSetFunction",
        Http(400, Some("GENERIC_BAD_REQUEST")),
    )],
    &[(
        "put-image-pull-secret.json",
        "PutSecretSetFunction",
        Http(200, None),
    )],
    &[(
        "list-secret-sets.json",
        "ListSecretSetsFunction",
        Http(200, None),
    )],
    &[(
        "get-secret-set.json",
        "GetSecretSetFunction",
        Http(200, None),
    )],
    &[(
        "get-secret-set-unknown.json",
        "GetSecretSetFunction",
        Http(404, Some("NOT_FOUND")),
    )],
    &[(
        "get-secret-set-wrong-method.json",
        "GetSecretSetFunction",
        Http(405, Some("METHOD_NOT_ALLOWED")),
    )],
    &[
        (
            "delete-secret.json",
            "DeleteSecretFunction",
            Http(200, None),
        ),
        (
            "delete-secret.json",
            "DeleteSecretFunction",
            Http(404, Some("NOT_FOUND")),
        ),
    ],
    &[
        (
            "delete-secret-set.json",
            "DeleteSecretSetFunction",
            Http(200, None),
        ),
        (
            "delete-secret-set.json",
            "DeleteSecretSetFunction",
            Http(404, Some("NOT_FOUND")),
        ),
    ],
    // The four writes' events put on the stack's bus (moto's EventBridge): nothing to retry.
    &[(
        "stream-publisher.json",
        "StreamPublisherFunction",
        Retried(0),
    )],
    &[("authorizer.json", "AuthorizerFunction", Authorized(false))],
    // SelfSignUp's trigger (a conditional function: sam local ignores the condition): a new
    // account, then Cognito's retry, which finds it.
    &[
        (
            "people-signup.json",
            "PeopleSignupFunction",
            Echoed("people-signup.json"),
        ),
        (
            "people-signup.json",
            "PeopleSignupFunction",
            Echoed("people-signup.json"),
        ),
    ],
    &[(
        "authorizer-malformed.json",
        "AuthorizerFunction",
        Authorized(false),
    )],
];

/// Files in events/ that are not events (a readable copy of another fixture's payload).
/// Fixtures of events/ that no function is invoked with: the decoded form of a subscription's
/// batch, and what reaches the data plane's inbox (a service on Fargate, not a function; its
/// tests read them: dataplane/tests/service_inbox.rs, dataplane/src/ecs/events/tests.rs).
const NOT_EVENTS: &[&str] = &[
    "ingest-logs.decoded.json",
    "data-plane-inbox-deployment-requested.json",
    "ecs-task-state-change-exited.json",
    "ecs-task-state-change-oom-killed.json",
    "ecs-task-state-change-pull-failed.json",
    "ecs-task-state-change-running.json",
    // The gateway-keys function's event: sam local has no usage plans; tests/tests/gateway_keys.rs
    // sends it to moto's.
    "gateway-keys.json",
];

/// Concurrent `sam local invoke`s (each is a process and a container).
const WORKERS: usize = 2;

fn variable(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: run scripts/e2e.sh sam invoke"))
}

/// Tables of this run, with the fixtures' account and demo agent in them, and the --env-vars
/// file that points the functions' containers at them.
async fn prepare() -> (DynamoStore, PathBuf) {
    let client =
        shared::aws::dynamodb_client(Some(&variable(shared::config::DYNAMODB_ENDPOINT))).unwrap();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let names = TableNames {
        agents: format!("invoke-agents-{suffix}"),
        accounts: format!("invoke-accounts-{suffix}"),
        logs: format!("invoke-logs-{suffix}"),
    };
    tables::create_all(&client, &names).await.unwrap();
    let store = DynamoStore::new(client, names.clone());
    seed_fixture_agents(&store).await.unwrap();
    shared::testing::seed_fixture_sets(&store).await.unwrap();
    shared::testing::seed_fixture_person(&store).await.unwrap();

    let env_file = workspace().join(format!(".local/sam-invoke-env-{suffix}.json"));
    let env = json!({"Parameters": {
        "DYNAMODB_ENDPOINT": variable("STACK_CONTAINER_DYNAMODB_ENDPOINT"),
        "AGENTS_TABLE": names.agents,
        "ACCOUNTS_TABLE": names.accounts,
        "LOGS_TABLE": names.logs,
        "CURSOR_SECRET_ID": variable("CURSOR_SECRET_ID"),
        "SECRETS_MANAGER_ENDPOINT": variable("STACK_CONTAINER_KMS_ENDPOINT"),
        "KMS_ENDPOINT": variable("STACK_CONTAINER_KMS_ENDPOINT"),
        "SECRETS_KEY_ID": variable("SECRETS_KEY_ID"),
        "EVENTBRIDGE_ENDPOINT": variable("STACK_CONTAINER_KMS_ENDPOINT"),
        "EVENT_BUS_NAME": variable("EVENT_BUS_NAME"),
        "SESSION_START_WAIT_SECONDS": "1",
        // The sweeper's fixture is dated ahead of every deadline.
        "SESSION_SWEEP_AT_EVENT_TIME": "true",
    }});
    std::fs::write(&env_file, env.to_string()).unwrap();
    (store, env_file)
}

/// The function's answer to the event in `fixture`, through `sam local invoke`: the last line of
/// its standard output.
fn sam_invoke(function: &str, event: &Path, env_file: &Path) -> Value {
    let output = Command::new(workspace().join(".local/tools-venv/bin/sam"))
        .current_dir(workspace())
        .env("SAM_CLI_TELEMETRY", "0")
        // Given credentials (the dummies DynamoDB Local is signed with), sam asks AWS whose they
        // are and waits for that to time out; the functions sign with dummies of their own.
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_SESSION_TOKEN")
        .args(["local", "invoke", function, "--config-env", "local"])
        .arg("--event")
        .arg(event)
        .arg("--parameter-overrides")
        .arg(format!("Architecture={}", variable("STACK_SAM_ARCH")))
        .arg("--env-vars")
        .arg(env_file)
        .output()
        .expect("sam runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().rev().find(|line| !line.trim().is_empty());
    match last.map(serde_json::from_str::<Value>) {
        Some(Ok(answer)) => answer,
        _ => panic!(
            "sam local invoke {function} -e {}: no JSON answer (exit {:?})\nstdout: {stdout}\nstderr: {}",
            event.display(),
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

/// Whether `answer` is what `expect` says; the reason when not.
fn check(answer: &Value, expect: Expect) -> Result<(), String> {
    let fail = |what: &str| Err(format!("{what}, got {answer}"));
    match expect {
        Http(status, code) => {
            if answer["statusCode"] != status {
                return fail(&format!("status {status}"));
            }
            let body: Value = answer["body"]
                .as_str()
                .and_then(|body| serde_json::from_str(body).ok())
                .unwrap_or(Value::Null);
            match code {
                Some(code) if body["code"] != code => fail(&format!("code {code}")),
                None if body.get("code").is_some() => fail("a success body"),
                _ => Ok(()),
            }
        }
        Authorized(verdict) => {
            let effect = if verdict { "Allow" } else { "Deny" };
            match answer["policyDocument"]["Statement"][0]["Effect"] == effect {
                true if !verdict
                    && (answer.get("context").is_some()
                        || answer.get("usageIdentifierKey").is_some()) =>
                {
                    fail("no context and no usage-plan key")
                }
                true => Ok(()),
                false => fail(&format!("a policy that says {effect}")),
            }
        }
        Stored(lines) => match answer["stored"] == lines {
            true => Ok(()),
            false => fail(&format!("{lines} lines stored")),
        },
        Report(outcome) => match *answer == json!(outcome) {
            true => Ok(()),
            false => fail(&format!("the outcome {outcome}")),
        },
        Swept(ended) => match answer["ended"] == ended {
            true => Ok(()),
            false => fail(&format!("{ended} sessions ended")),
        },
        Retried(records) => match answer["batchItemFailures"].as_array().map(Vec::len) {
            Some(count) if count == records => Ok(()),
            _ => fail(&format!("{records} records to retry")),
        },
        Echoed(fixture) => {
            let path = workspace().join("events").join(fixture);
            let event: Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            match *answer == event {
                true => Ok(()),
                false => fail(&format!("events/{fixture} unchanged")),
            }
        }
    }
}

#[test]
fn every_fixture_in_events_has_an_expected_answer() {
    let mut listed: Vec<&str> = FIXTURES
        .iter()
        .flat_map(|chain| chain.iter().map(|(name, _, _)| *name))
        .collect();
    listed.extend(NOT_EVENTS);
    listed.sort_unstable();
    listed.dedup();
    let mut present: Vec<String> = std::fs::read_dir(workspace().join("events"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    present.sort_unstable();
    assert_eq!(
        present, listed,
        "a fixture of events/ without its expected answer here"
    );
}

#[test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
fn every_fixture_answers_as_expected_through_sam_local_invoke() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (store, env_file) = runtime.block_on(prepare());
    let queue = Mutex::new(FIXTURES.iter());
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap().next();
                    let Some(chain) = next else {
                        return;
                    };
                    for (fixture, function, expect) in chain.iter() {
                        let event = workspace().join("events").join(fixture);
                        let started = std::time::Instant::now();
                        let answer = sam_invoke(function, &event, &env_file);
                        let verdict = check(&answer, *expect);
                        eprintln!(
                            "sam local invoke {function} -e events/{fixture} ({:.1} s): {}",
                            started.elapsed().as_secs_f64(),
                            match &verdict {
                                Ok(()) => format!("{expect:?} as expected"),
                                Err(why) => format!("FAILED: expected {why}"),
                            }
                        );
                        if let Err(why) = verdict {
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("{fixture}: expected {why}"));
                        }
                    }
                }
            });
        }
    });

    // The authorizer allows a key that is issued, with its account in the context.
    let (key, _) = runtime.block_on(async {
        shared::account::ensure_account(&store, "invoke-acme", None)
            .await
            .unwrap();
        shared::account::issue_key(&store, "invoke-acme", shared::auth::KeyKind::Private)
            .await
            .unwrap()
    });
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("events/authorizer.json")).unwrap(),
    )
    .unwrap();
    let header = format!("Bearer {}", key.expose());
    event["headers"]["authorization"] = json!(header);
    event["multiValueHeaders"]["authorization"] = json!([header]);
    let issued = env_file.with_extension("authorizer.json");
    std::fs::write(&issued, event.to_string()).unwrap();
    let answer = sam_invoke("AuthorizerFunction", &issued, &env_file);
    let _ = std::fs::remove_file(&issued);
    let _ = std::fs::remove_file(&env_file);
    assert_eq!(
        answer["policyDocument"]["Statement"][0]["Effect"], "Allow",
        "{answer}"
    );
    assert_eq!(answer["context"]["accountId"], "invoke-acme");
    assert_eq!(
        answer["usageIdentifierKey"],
        shared::auth::usage_plan_key_value("abc123", "invoke-acme")
    );

    // The sign-up trigger's two invocations made one account, its one person the fixture's.
    let sub = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f";
    let (person, people) = runtime.block_on(async {
        use shared::account::AccountStore;
        use shared::auth::KeyStore;
        let person = store.find_person(sub).await.unwrap();
        let people = match &person {
            Some(person) => store.list_people(&person.account_id).await.unwrap(),
            None => Vec::new(),
        };
        (person, people)
    });
    let person = person.expect("the signed-up person is tied to an account");
    assert!(person.account_id.starts_with("acct-"), "{person:?}");
    assert_eq!(
        people.len(),
        1,
        "one person in the account made: {people:?}"
    );
    assert_eq!(person.email, "new-person@example.com");

    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{failures:#?}");
}
