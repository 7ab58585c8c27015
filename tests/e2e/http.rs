//! The API over HTTP, end to end, against a running stack: cargo lambda watch (the functions
//! alone) or sam local (the template as deployed: the gateway, its Lambda authorizer and the
//! context it hands the functions, each function in its container with the template's
//! environment). `scripts/e2e.sh watch http` and `scripts/e2e.sh sam http` start the stack and
//! run this file; `make test` runs both.
//!
//! Log lines enter as they do in production, through the ingest function (CloudWatch Logs
//! subscription batches sent to the stack's Lambda Invoke API); accounts and keys are made and
//! revoked in the stack's tables, as the operator command does.

mod secrets;

use integration_tests::bounded::{self, Bound, Try};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use integration_tests::stack::{Answer, Denial, Stack, bearer};
use reqwest::Method;
use serde_json::{Value, json};
use shared::auth::ApiKey;

fn stack() -> Stack {
    Stack::from_env()
}

fn agent_body(name: &str) -> Value {
    json!({"serviceName": name, "image": "ghcr.io/acme/agent:1.0"})
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn create_answers_201_with_the_resolved_agent_then_409_for_the_same_name() {
    let stack = stack();
    let (alice, key) = stack.account("alice").await;

    let created = stack.create(&key, &agent_body("voice-bot")).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.header("content-type"), Some("application/json"));
    let agent = &created.body;
    assert_eq!(agent["name"], "voice-bot");
    assert_eq!(agent["ready"], false);
    assert_eq!(agent["activeDeploymentReady"], false);
    assert_eq!(agent["activeDeploymentId"], agent["deployment"]["id"]);
    let manifest = &agent["deployment"]["manifest"];
    assert_eq!(manifest["metadata"]["namespace"], alice.namespace.as_str());
    assert_eq!(manifest["spec"]["image"], "ghcr.io/acme/agent:1.0");
    assert_eq!(
        manifest["spec"]["resources"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );

    let again = stack.create(&key, &agent_body("voice-bot")).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["code"], "CONFLICT");
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn an_idempotency_key_replays_the_first_answer_through_the_gateway() {
    let stack = stack();
    let (_, key) = stack.account("retry").await;
    let authorization = bearer(&key);
    let send = || {
        stack.call(Method::POST, "/agents", Some(&authorization), |request| {
            request
                .header("idempotency-key", "e2e-retry-0001")
                .json(&agent_body("retry-bot"))
        })
    };
    let first = send().await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    assert_eq!(first.header("idempotent-replayed"), None);
    let replay = send().await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.body, first.body);
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn bad_creates_get_the_contracts_error_and_write_nothing() {
    let stack = stack();
    let (_, key) = stack.account("careless").await;
    let authorization = bearer(&key);
    let post = |body: String, content_type: &'static str| {
        stack.call(
            Method::POST,
            "/agents",
            Some(&authorization),
            move |request| request.header("content-type", content_type).body(body),
        )
    };

    let invalid = post(agent_body("My_Agent").to_string(), "application/json").await;
    assert_eq!(invalid.status, 400);
    assert_eq!(invalid.body["code"], "GENERIC_BAD_REQUEST");
    assert_eq!(invalid.body["field"], "serviceName");

    let mut typo = agent_body("typo-bot");
    typo["enableNoize"] = json!(true);
    let unknown = post(typo.to_string(), "application/json").await;
    assert_eq!(unknown.status, 400);
    assert_eq!(unknown.body["field"], "enableNoize");

    let form = post(
        "serviceName=form-bot".to_owned(),
        "application/x-www-form-urlencoded",
    )
    .await;
    assert_eq!(form.status, 415);
    assert_eq!(form.body["code"], "UNSUPPORTED_MEDIA_TYPE");

    let mut large = agent_body("large-bot");
    large["image"] = json!("x".repeat(70 * 1024));
    let too_large = post(large.to_string(), "application/json").await;
    assert_eq!(too_large.status, 413);
    assert_eq!(too_large.body["code"], "PAYLOAD_TOO_LARGE");

    // PUT on the collection is the anchor CLI's update: of an agent that does not exist, a 404.
    let put = stack
        .call(Method::PUT, "/agents", Some(&bearer(&key)), |request| {
            request.json(&agent_body("put-bot"))
        })
        .await;
    assert_eq!(put.status, 404);
    let patch = stack
        .call(Method::PATCH, "/agents", Some(&bearer(&key)), |request| {
            request.json(&agent_body("patch-bot"))
        })
        .await;
    assert_eq!(patch.status, 405);
    assert_eq!(patch.header("allow"), Some("GET, POST, PUT"));

    // None of them made an agent: their names have no logs to read.
    for name in ["typo-bot", "large-bot", "put-bot", "patch-bot"] {
        assert_eq!(stack.logs(&key, name, &[]).await.status, 404, "{name}");
    }
}

/// A CloudWatch Logs event: (id, milliseconds, message).
type Event = (String, i64, String);

/// How a line reaches CloudWatch: a plain message, timed by its event's millisecond, or a line
/// in the container runtime's CRI form, timed by its own nanosecond (`n` past the event's).
#[derive(Clone, Copy)]
enum Form {
    Plain,
    Cri(i64),
}

/// A line of the test agent as logged: in deployment `'a'` or `'b'`, in a session or not,
/// `millis` after the first second of the run.
struct Logged {
    id: &'static str,
    deployment: char,
    session: Option<&'static str>,
    millis: i64,
    form: Form,
    text: &'static str,
}

const fn logged(
    id: &'static str,
    deployment: char,
    session: Option<&'static str>,
    millis: i64,
    form: Form,
    text: &'static str,
) -> Logged {
    Logged {
        id,
        deployment,
        session,
        millis,
        form,
        text,
    }
}

/// Deployment A with sessions s1 and s2 and a line outside any session; deployment B with
/// session s3, twenty seconds later. Two lines say "error", in different cases.
const LOGGED: [Logged; 8] = [
    logged("a0-1", 'a', None, 50, Form::Plain, "agent starting"),
    logged("a1-1", 'a', Some("s1"), 100, Form::Cri(1), "call started"),
    logged(
        "a1-2",
        'a',
        Some("s1"),
        200,
        Form::Cri(7),
        "ERROR timeout talking to TTS",
    ),
    logged("a1-3", 'a', Some("s1"), 300, Form::Plain, "call ended"),
    logged("a2-1", 'a', Some("s2"), 150, Form::Plain, "call started"),
    logged(
        "a2-2",
        'a',
        Some("s2"),
        250,
        Form::Plain,
        "Error: caller hung up",
    ),
    logged("b3-1", 'b', Some("s3"), 20_000, Form::Plain, "call started"),
    logged("b3-2", 'b', Some("s3"), 20_100, Form::Cri(0), "all good"),
];

/// The lines of one run: as the ingest function receives them (one batch per log stream), and
/// as the API answers them, ascending.
struct Lines {
    batches: Vec<(String, Vec<Event>)>,
    /// (id, entry), ascending.
    ascending: Vec<(&'static str, Value)>,
    /// The Unix second the lines start in (they run to 21 s later), an hour ago.
    first_second: i64,
    deployment_a: String,
    deployment_b: String,
}

fn lines(deployment_a: &str, deployment_b: &str) -> Lines {
    let first_second = time::OffsetDateTime::now_utc().unix_timestamp() - 3600;
    let mut batches: Vec<(String, Vec<Event>)> = Vec::new();
    let mut ascending = Vec::new();
    for line in &LOGGED {
        let deployment = if line.deployment == 'a' {
            deployment_a
        } else {
            deployment_b
        };
        let stream = match line.session {
            Some(session) => format!("{deployment}/{session}"),
            None => deployment.to_owned(),
        };
        let event_ms = first_second * 1000 + line.millis;
        let (nanos, message) = match line.form {
            Form::Plain => (event_ms * 1_000_000, line.text.to_owned()),
            Form::Cri(past) => {
                let nanos = event_ms * 1_000_000 + past;
                let time = shared::logs::rfc3339_nanos(nanos as u64);
                (nanos, format!("{time} stdout F {}", line.text))
            }
        };
        let event = (line.id.to_owned(), event_ms, message);
        match batches.iter_mut().find(|(name, _)| *name == stream) {
            Some((_, events)) => events.push(event),
            None => batches.push((stream, vec![event])),
        }
        let mut entry = json!({
            "log": line.text,
            "timestamp": shared::logs::rfc3339_nanos(nanos as u64),
            "deploymentId": deployment,
        });
        if let Some(session) = line.session {
            entry["sessionId"] = json!(session);
        }
        ascending.push((nanos, line.id, entry));
    }
    ascending.sort_by_key(|(nanos, _, _)| *nanos);
    Lines {
        batches,
        ascending: ascending
            .into_iter()
            .map(|(_, id, entry)| (id, entry))
            .collect(),
        first_second,
        deployment_a: deployment_a.to_owned(),
        deployment_b: deployment_b.to_owned(),
    }
}

/// An agent of a new account with two deployments (created, then updated to a new image) and
/// the eight lines, ingested through the ingest function.
async fn agent_with_lines(stack: &Stack, account: &str) -> (ApiKey, Lines) {
    let (owner, key) = stack.account(account).await;
    let created = stack.create(&key, &agent_body("chatty")).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let updated = stack
        .update(&key, "chatty", &json!({"image": "ghcr.io/acme/agent:2.0"}))
        .await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    let lines = lines(
        created.body["activeDeploymentId"].as_str().unwrap(),
        updated.body["activeDeploymentId"].as_str().unwrap(),
    );
    for (stream, events) in &lines.batches {
        let report = stack
            .ingest(&owner.namespace, "chatty", stream, events)
            .await;
        assert_eq!(report["stored"], events.len(), "{stream}: {report}");
    }
    (key, lines)
}

/// The entries of the lines with these ids, in this order.
fn entries(lines: &Lines, ids: &[&str]) -> Value {
    Value::Array(
        ids.iter()
            .map(|id| {
                lines
                    .ascending
                    .iter()
                    .find(|(line, _)| line == id)
                    .unwrap_or_else(|| panic!("no line {id}"))
                    .1
                    .clone()
            })
            .collect(),
    )
}

/// Query parameters of a logs request.
type Query = Vec<(&'static str, String)>;

fn params(pairs: &[(&'static str, &str)]) -> Query {
    pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

fn exactly(count: usize) -> Value {
    json!({"value": count, "relation": "eq"})
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn logs_are_filtered_ordered_and_paged_with_an_exact_total() {
    let stack = stack();
    let (key, lines) = agent_with_lines(&stack, "logs").await;
    let all_ascending = [
        "a0-1", "a1-1", "a2-1", "a1-2", "a2-2", "a1-3", "b3-1", "b3-2",
    ];
    let mut all_descending = all_ascending;
    all_descending.reverse();
    let second = |offset: i64| (lines.first_second + offset).to_string();
    let (a, b) = (lines.deployment_a.as_str(), lines.deployment_b.as_str());
    let (start_b, end_after_b, end_at_b) = (second(20), second(30), second(20));

    let cases: Vec<(Query, Vec<&str>)> = vec![
        // Newest first by default; ascending is its exact reverse.
        (params(&[]), all_descending.to_vec()),
        (params(&[("order", "asc")]), all_ascending.to_vec()),
        (
            params(&[("deploymentId", a), ("order", "asc")]),
            vec!["a0-1", "a1-1", "a2-1", "a1-2", "a2-2", "a1-3"],
        ),
        (params(&[("deploymentId", b)]), vec!["b3-2", "b3-1"]),
        (
            params(&[("sessionId", "s1"), ("order", "asc")]),
            vec!["a1-1", "a1-2", "a1-3"],
        ),
        // The text query is a case-insensitive substring.
        (
            params(&[("query", "error"), ("order", "asc")]),
            vec!["a1-2", "a2-2"],
        ),
        (
            params(&[("query", "ERROR"), ("sessionId", "s2")]),
            vec!["a2-2"],
        ),
        (
            params(&[("query", "call"), ("deploymentId", b)]),
            vec!["b3-1"],
        ),
        // startTime is inclusive, endTime exclusive (Unix seconds).
        (
            params(&[
                ("startTime", &start_b),
                ("endTime", &end_after_b),
                ("order", "asc"),
            ]),
            vec!["b3-1", "b3-2"],
        ),
        (
            params(&[("endTime", &end_at_b), ("sessionId", "s3")]),
            vec![],
        ),
        (
            params(&[
                ("startTime", &second(0)),
                ("endTime", &second(1)),
                ("query", "started"),
                ("order", "asc"),
            ]),
            vec!["a1-1", "a2-1"],
        ),
        // limit and offset slice the ordered matches.
        (
            params(&[("order", "asc"), ("limit", "3"), ("offset", "2")]),
            vec!["a2-1", "a1-2", "a2-2"],
        ),
        (params(&[("sessionId", "nobody")]), vec![]),
    ];
    for (query, ids) in cases {
        let answer = stack.logs(&key, "chatty", &query).await;
        assert_eq!(answer.status, 200, "{query:?}: {:?}", answer.body);
        assert_eq!(answer.body["logs"], entries(&lines, &ids), "{query:?}");
        // The total counts every match, not the page; nextCursor says more follow.
        let sliced = query.iter().any(|(name, _)| *name == "limit");
        let total = if sliced {
            all_ascending.len()
        } else {
            ids.len()
        };
        assert_eq!(answer.body["total"], exactly(total), "{query:?}");
        assert_eq!(answer.body.get("nextCursor").is_some(), sliced, "{query:?}");
    }
}

/// Every page of a cursor walk with `query`, until a page has no `nextCursor`.
async fn walk(
    stack: &Stack,
    key: &ApiKey,
    agent: &str,
    query: &[(&'static str, String)],
) -> Vec<Value> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = query.to_vec();
        if let Some(cursor) = &cursor {
            params.push(("cursor", cursor.clone()));
        }
        let answer = stack.logs(key, agent, &params).await;
        assert_eq!(answer.status, 200, "{params:?}: {:?}", answer.body);
        cursor = answer.body["nextCursor"].as_str().map(str::to_owned);
        pages.push(answer.body);
        if cursor.is_none() {
            return pages;
        }
        assert!(pages.len() < 20, "the walk does not end");
    }
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_cursor_walks_every_matching_line_once_in_either_order() {
    let stack = stack();
    let (key, lines) = agent_with_lines(&stack, "cursor").await;

    let pages = walk(&stack, &key, "chatty", &params(&[("limit", "3")])).await;
    assert_eq!(pages.len(), 3);
    let mut seen = Vec::new();
    for page in &pages {
        assert_eq!(page["total"], exactly(8), "every page states the total");
        seen.extend(page["logs"].as_array().unwrap().iter().cloned());
    }
    let descending = [
        "b3-2", "b3-1", "a1-3", "a2-2", "a1-2", "a2-1", "a1-1", "a0-1",
    ];
    assert_eq!(Value::Array(seen), entries(&lines, &descending));

    let a = lines.deployment_a.clone();
    let pages = walk(
        &stack,
        &key,
        "chatty",
        &[
            ("limit", "4".into()),
            ("order", "asc".into()),
            ("deploymentId", a),
        ],
    )
    .await;
    let seen: Vec<Value> = pages
        .iter()
        .flat_map(|page| page["logs"].as_array().unwrap().clone())
        .collect();
    assert_eq!(
        Value::Array(seen),
        entries(&lines, &["a0-1", "a1-1", "a2-1", "a1-2", "a2-2", "a1-3"])
    );

    // A cursor belongs to its filters: with other ones it is refused.
    let first = stack.logs(&key, "chatty", &params(&[("limit", "3")])).await;
    let cursor = first.body["nextCursor"].as_str().unwrap().to_owned();
    let other = stack
        .logs(
            &key,
            "chatty",
            &[("sessionId", "s1".into()), ("cursor", cursor)],
        )
        .await;
    assert_eq!(other.status, 400);
    assert_eq!(other.body["field"], "cursor");
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn bad_log_queries_are_400_naming_the_parameter_and_unknown_agents_404() {
    let stack = stack();
    let (key, _) = agent_with_lines(&stack, "queries").await;
    for (query, field) in [
        (params(&[("sesionId", "s1")]), "sesionId"),
        (params(&[("limit", "1001")]), "limit"),
        (params(&[("startTime", "1795374000000")]), "startTime"),
        (params(&[("order", "newest")]), "order"),
        (params(&[("cursor", "not-a-cursor")]), "cursor"),
    ] {
        let answer = stack.logs(&key, "chatty", &query).await;
        assert_eq!(answer.status, 400, "{query:?}");
        assert_eq!(answer.body["code"], "GENERIC_BAD_REQUEST");
        assert_eq!(answer.body["field"], field, "{query:?}");
    }
    let unknown = stack.logs(&key, "no-such-agent", &[]).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["code"], "NOT_FOUND");
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn another_account_sees_nothing_of_an_agent_its_lines_or_its_cursors() {
    let stack = stack();
    let (alice_key, lines) = agent_with_lines(&stack, "alice").await;
    let (bob, bob_key) = stack.account("bob").await;

    let nobody = stack.logs(&bob_key, "no-such-agent", &[]).await;
    assert_eq!(nobody.status, 404);
    for query in [
        params(&[]),
        params(&[("deploymentId", &lines.deployment_a)]),
        params(&[("sessionId", "s1"), ("query", "error")]),
    ] {
        let answer = stack.logs(&bob_key, "chatty", &query).await;
        assert_eq!(
            (answer.status, &answer.body),
            (nobody.status, &nobody.body),
            "alice's agent is as absent for bob as one nobody has ({query:?})"
        );
    }

    // Bob's agent of the same name is his own, with none of alice's lines.
    let created = stack.create(&bob_key, &agent_body("chatty")).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(
        created.body["deployment"]["manifest"]["metadata"]["namespace"],
        bob.namespace.as_str()
    );
    let empty = stack.logs(&bob_key, "chatty", &[]).await;
    assert_eq!(empty.body, json!({"total": exactly(0), "logs": []}));

    // Alice's cursor does not open bob's agent.
    let page = stack
        .logs(&alice_key, "chatty", &params(&[("limit", "2")]))
        .await;
    let cursor = page.body["nextCursor"].as_str().unwrap().to_owned();
    let refused = stack
        .logs(
            &bob_key,
            "chatty",
            &[("limit", "2".into()), ("cursor", cursor)],
        )
        .await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["field"], "cursor");
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn each_request_is_answered_for_the_account_of_its_own_key() {
    // Through a gateway the authorizer's verdict and context are kept per key (cached for up to
    // 60 s on AWS); interleaved requests of two accounts must each be served as their own.
    let stack = stack();
    let (alice, alice_key) = stack.account("alice").await;
    let (bob, bob_key) = stack.account("bob").await;
    for round in 0..3 {
        for (owner, key) in [(&alice, &alice_key), (&bob, &bob_key)] {
            let answer = stack
                .create(key, &agent_body(&format!("bot-{round}")))
                .await;
            assert_eq!(answer.status, 201, "{:?}", answer.body);
            assert_eq!(
                answer.body["deployment"]["manifest"]["metadata"]["namespace"],
                owner.namespace.as_str()
            );
        }
    }
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn missing_malformed_unknown_and_revoked_keys_are_refused_on_every_route() {
    let stack = stack();
    let (_, key) = stack.account("denied").await;
    let created = stack.create(&key, &agent_body("guarded")).await;
    assert_eq!(created.status, 201);

    let unknown = bearer(&ApiKey::generate());
    let refused: Vec<(&str, Option<String>, Denial)> = vec![
        ("no Authorization header", None, Denial::MissingKey),
        (
            "a Basic credential",
            Some("Basic dXNlcjpwYXNz".into()),
            Denial::RefusedKey,
        ),
        (
            "a bearer that is not a key",
            Some("Bearer not-a-key".into()),
            Denial::RefusedKey,
        ),
        (
            "a well-formed key never issued",
            Some(unknown),
            Denial::RefusedKey,
        ),
    ];
    for (what, authorization, denial) in &refused {
        let create = stack
            .call(
                Method::POST,
                "/agents",
                authorization.as_deref(),
                |request| request.json(&agent_body("intruder")),
            )
            .await;
        stack.assert_denied(&format!("POST /agents, {what}"), *denial, &create);
        let logs = stack
            .logs_as(authorization.as_deref(), "guarded", &[])
            .await;
        stack.assert_denied(&format!("GET logs, {what}"), *denial, &logs);
    }

    // A revoked key stops working (the gateway on AWS caches a verdict for up to 60 s; sam
    // local and the functions check every request).
    assert_eq!(stack.logs(&key, "guarded", &[]).await.status, 200);
    shared::account::revoke_key_text(&stack.store, &key)
        .await
        .unwrap();
    let create = stack.create(&key, &agent_body("after-revoke")).await;
    stack.assert_denied("POST /agents, a revoked key", Denial::RefusedKey, &create);
    let logs = stack.logs(&key, "guarded", &[]).await;
    stack.assert_denied("GET logs, a revoked key", Denial::RefusedKey, &logs);
}

/// GET of the agent until `done` says it is, as a deploy tool polls (the development data plane
/// reports after DEV_READY_AFTER_MS).
async fn poll(stack: &Stack, key: &ApiKey, name: &str, done: impl Fn(&Value) -> bool) -> Answer {
    let bound = Bound::new(240, std::time::Duration::from_secs(60));
    bounded::until(name, bound, || async {
        let answer = stack.get(key, name).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        match done(&answer.body) {
            true => Try::Done(answer),
            false => Try::Again {
                why: answer.body.to_string(),
                wait: std::time::Duration::from_millis(250),
            },
        }
    })
    .await
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_deploy_tools_flow_through_the_stack_and_its_data_plane() {
    let stack = stack();
    let (_, key) = stack.account("deployer").await;

    // GET 404 means "create"; then poll until (ready and activeDeploymentReady).
    let missing = stack.get(&key, "voice-bot").await;
    assert_eq!(
        (missing.status, &missing.body["code"]),
        (404, &json!("NOT_FOUND"))
    );
    let created = stack.create(&key, &agent_body("voice-bot")).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert!(created.header("etag").is_some());
    let ready = poll(&stack, &key, "voice-bot", |agent| {
        agent["ready"] == true && agent["activeDeploymentReady"] == true
    })
    .await;
    assert_eq!(
        ready.body["activeDeploymentId"],
        created.body["activeDeploymentId"]
    );
    assert_eq!(ready.body["errors"], json!([]));

    // A new image: a new active deployment, ready in its turn.
    let updated = stack
        .update(
            &key,
            "voice-bot",
            &json!({"image": "ghcr.io/acme/agent:2.0"}),
        )
        .await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    let second = updated.body["activeDeploymentId"].clone();
    assert_ne!(second, created.body["activeDeploymentId"]);
    let settled = poll(&stack, &key, "voice-bot", |agent| {
        agent["activeDeploymentId"] == second && agent["activeDeploymentReady"] == true
    })
    .await;

    // The same again: success, and nothing new (the same version and deployment).
    let again = stack
        .update(
            &key,
            "voice-bot",
            &json!({"serviceName": "voice-bot", "image": "ghcr.io/acme/agent:2.0"}),
        )
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["activeDeploymentId"], second);
    assert_eq!(again.header("etag"), settled.header("etag"));

    // An image the development data plane fails (tag ending in -fail): errors show it, and the
    // agent keeps serving from the ready deployment.
    let failing = stack
        .update(
            &key,
            "voice-bot",
            &json!({"image": "ghcr.io/acme/agent:3.0-fail"}),
        )
        .await;
    assert_eq!(failing.status, 200);
    let failed = poll(&stack, &key, "voice-bot", |agent| {
        agent["errors"]
            .as_array()
            .is_some_and(|errors| !errors.is_empty())
    })
    .await;
    assert_eq!(failed.body["errors"][0]["code"], "ImagePullBackOff");
    assert_eq!(
        (
            failed.body["ready"].clone(),
            failed.body["activeDeploymentReady"].clone()
        ),
        (json!(true), json!(false))
    );

    // Another account: 404 on every route of the agent, and not in its list.
    let (_, other) = stack.account("other").await;
    for method in [Method::GET, Method::POST, Method::DELETE] {
        let answer = stack
            .call(
                method.clone(),
                "/agents/voice-bot",
                Some(&bearer(&other)),
                |r| r.json(&json!({"image": "x"})),
            )
            .await;
        assert_eq!(answer.status, 404, "{method}: {:?}", answer.body);
    }
    let listed = stack
        .call(Method::GET, "/agents", Some(&bearer(&other)), |r| r)
        .await;
    assert_eq!(
        (listed.status, listed.body.clone()),
        (200, json!({"services": []}))
    );
    let listed = stack
        .call(Method::GET, "/agents", Some(&bearer(&key)), |r| r)
        .await;
    assert_eq!(listed.body["services"][0]["name"], "voice-bot");

    // Deleted: 404 after, and for its logs.
    let deleted = stack
        .call(
            Method::DELETE,
            "/agents/voice-bot",
            Some(&bearer(&key)),
            |r| r,
        )
        .await;
    assert_eq!(
        (deleted.status, deleted.body),
        (200, json!({"status": "OK"}))
    );
    assert_eq!(stack.get(&key, "voice-bot").await.status, 404);
    assert_eq!(stack.logs(&key, "voice-bot", &[]).await.status, 404);
}

/// Whether the stack's API is the local gateway in front of cargo lambda watch (`make run`):
/// the suites below check what it answers by itself. sam local start-api answers these requests
/// with its own emulation, not the deployed gateway's responses (docs/testing.md).
fn local_gateway(stack: &Stack, test: &str) -> bool {
    let local = stack.gateway == integration_tests::stack::Gateway::None;
    if !local {
        eprintln!("{test}: checked through the local gateway only (cargo lambda watch)");
    }
    local
}

/// A request the suite's client sends as given: any path under the stack's root, any bytes.
async fn raw(
    stack: &Stack,
    method: Method,
    path: &str,
    headers: &[(&str, &[u8])],
    body: &'static [u8],
) -> Answer {
    stack
        .call_root(method, path, |mut request| {
            for (name, value) in headers {
                let value = reqwest::header::HeaderValue::from_bytes(value).unwrap();
                request = request.header(*name, value);
            }
            request.body(body)
        })
        .await
}

/// The contract's error shape (section 1): an `error` sentence and a `code`, as JSON.
fn assert_contract_error(what: &str, answer: &Answer, status: u16, code: &str) {
    assert_eq!(
        (answer.status, &answer.body["code"]),
        (status, &json!(code)),
        "{what}: {:?}",
        answer.body
    );
    assert!(
        answer.body["error"].is_string(),
        "{what}: {:?}",
        answer.body
    );
    assert_eq!(
        answer.header("content-type"),
        Some("application/json"),
        "{what}"
    );
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_path_no_route_has_is_the_contracts_404_on_every_method() {
    let stack = stack();
    if !local_gateway(&stack, "unrouted paths") {
        return;
    }
    let (_, key) = stack.account("unrouted").await;
    let authorization = bearer(&key);
    let auth: &[(&str, &[u8])] = &[("authorization", authorization.as_bytes())];
    for path in [
        "/v1/agents/",
        "//v1/agents",
        "/v1//agents",
        "/v1/agents//logs",
        "/v1/agents/voice-bot/",
        "/v1",
        "/",
        "/agents",
        "/2015-03-31/functions/create-agent/invocations",
    ] {
        for method in [Method::GET, Method::POST, Method::OPTIONS] {
            let answer = raw(&stack, method.clone(), path, auth, b"{}").await;
            assert_contract_error(&format!("{method} {path}"), &answer, 404, "NOT_FOUND");
        }
    }
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn an_options_request_is_answered_by_its_routes_function_and_grants_no_origin() {
    let stack = stack();
    if !local_gateway(&stack, "OPTIONS") {
        return;
    }
    let (_, key) = stack.account("preflight").await;
    let authorization = bearer(&key);
    let preflight: [(&str, &[u8]); 3] = [
        ("origin", b"https://attacker.example"),
        ("access-control-request-method", b"POST"),
        ("access-control-request-headers", b"authorization"),
    ];
    let with_key = [
        preflight.as_slice(),
        &[("authorization", authorization.as_bytes())],
    ]
    .concat();
    for path in ["/v1/agents", "/v1/agents/voice-bot", "/v1/secrets"] {
        let anonymous = raw(&stack, Method::OPTIONS, path, &preflight, b"").await;
        assert_eq!(
            anonymous.denial_parts(),
            Answer::contract_denial().denial_parts(),
            "OPTIONS {path} without a key"
        );
        let keyed = raw(&stack, Method::OPTIONS, path, &with_key, b"").await;
        assert_contract_error(
            &format!("OPTIONS {path}"),
            &keyed,
            405,
            "METHOD_NOT_ALLOWED",
        );
        for answer in [&anonymous, &keyed] {
            let granted: Vec<_> = answer
                .headers
                .iter()
                .filter(|(name, _)| name.starts_with("access-control-"))
                .collect();
            assert!(granted.is_empty(), "OPTIONS {path}: {granted:?}");
        }
    }
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn a_byte_that_is_not_utf8_in_a_body_or_a_header_gets_the_functions_contract_answer() {
    let stack = stack();
    if !local_gateway(&stack, "bytes that are not UTF-8") {
        return;
    }
    let (_, key) = stack.account("not-utf8").await;
    let authorization = bearer(&key);
    let auth = ("authorization", authorization.as_bytes());
    let json_type = ("content-type", b"application/json".as_slice());
    let body = b"{\"serviceName\": \"raw-bot\", \"image\": \"ghcr.io/acme/\xff\xfeagent:1.0\"}";

    let typed = raw(&stack, Method::POST, "/v1/agents", &[auth, json_type], body).await;
    assert_contract_error("a JSON body", &typed, 400, "GENERIC_BAD_REQUEST");
    let untyped = raw(&stack, Method::POST, "/v1/agents", &[auth], body).await;
    assert_contract_error(
        "a body without a type",
        &untyped,
        400,
        "GENERIC_BAD_REQUEST",
    );
    let text = ("content-type", b"text/plain".as_slice());
    let plain = raw(&stack, Method::POST, "/v1/agents", &[auth, text], body).await;
    assert_contract_error("a text body", &plain, 415, "UNSUPPORTED_MEDIA_TYPE");
    let anonymous = raw(&stack, Method::POST, "/v1/agents", &[json_type], body).await;
    assert_eq!(
        anonymous.denial_parts(),
        Answer::contract_denial().denial_parts(),
        "the key is checked first"
    );
    assert_eq!(
        stack.get(&key, "raw-bot").await.status,
        404,
        "nothing written"
    );

    let mut bad_key = b"Bearer ".to_vec();
    bad_key.extend_from_slice(b"\xff\xfe");
    let bad_key: &'static [u8] = bad_key.leak();
    let denied = raw(
        &stack,
        Method::GET,
        "/v1/agents",
        &[("authorization", bad_key)],
        b"",
    )
    .await;
    assert_eq!(
        denied.denial_parts(),
        Answer::contract_denial().denial_parts(),
        "a key that is not UTF-8"
    );
    let idempotency = ("idempotency-key", b"retry-\xff".as_slice());
    let valid = b"{\"serviceName\": \"raw-bot\", \"image\": \"ghcr.io/acme/agent:1.0\"}";
    let keyed = raw(
        &stack,
        Method::POST,
        "/v1/agents",
        &[auth, json_type, idempotency],
        valid,
    )
    .await;
    assert_contract_error("an Idempotency-Key", &keyed, 400, "GENERIC_BAD_REQUEST");
    assert_eq!(keyed.body["field"], "Idempotency-Key");
    let noted = ("x-note", b"caf\xe9".as_slice());
    let listed = raw(&stack, Method::GET, "/v1/agents", &[auth, noted], b"").await;
    assert_eq!(
        (listed.status, listed.body),
        (200, json!({"services": []})),
        "a header no function reads"
    );
}

/// A start of an agent whose simulated start outlasts the start's wait: it answers `starting`
/// after the whole wait, holding what serves it until then.
async fn slow_start(stack: &Stack, key: &ApiKey, agent: &str) -> Answer {
    stack
        .call(
            Method::POST,
            &format!("/public/{agent}/start"),
            Some(&bearer(key)),
            |request| request.json(&json!({"body": {"simulatedStartSeconds": 600}})),
        )
        .await
}

/// `count` slow starts sent at once; `answered` counts those answered.
fn slow_starts(
    stack: &Arc<Stack>,
    key: &ApiKey,
    count: usize,
    answered: &Arc<AtomicUsize>,
) -> tokio::task::JoinSet<Answer> {
    let mut starts = tokio::task::JoinSet::new();
    for _ in 0..count {
        let (stack, key, answered) = (stack.clone(), key.clone(), answered.clone());
        starts.spawn(async move {
            let answer = slow_start(&stack, &key, "slow-bot").await;
            answered.fetch_add(1, Ordering::SeqCst);
            answer
        });
    }
    starts
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack"]
async fn session_starts_waiting_on_their_reports_are_in_flight_together() {
    const AT_ONCE: usize = 4;
    let stack = Arc::new(stack());
    if !local_gateway(&stack, "concurrent starts") {
        return;
    }
    let (_, key) = stack.account("concurrent").await;
    let created = stack.create(&key, &agent_body("slow-bot")).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    poll(&stack, &key, "slow-bot", |agent| agent["ready"] == true).await;
    let recorded = || async {
        let listed = stack
            .call(
                Method::GET,
                "/agents/slow-bot/sessions",
                Some(&bearer(&key)),
                |r| r,
            )
            .await;
        assert_eq!(listed.status, 200, "{:?}", listed.body);
        listed.body["total"]["value"].as_u64().unwrap() as usize
    };
    // The list and the first starts bring their functions' instances up (cargo lambda watch
    // starts one for each request waiting, up to WATCH_CONCURRENCY), so that what follows
    // waits on no instance's start.
    assert_eq!(recorded().await, 0);
    let warming = slow_starts(&stack, &key, AT_ONCE, &Arc::default())
        .join_all()
        .await;
    for answer in warming {
        assert_eq!(
            (answer.status, &answer.body["status"]),
            (200, &json!("starting")),
            "{:?}",
            answer.body
        );
    }
    // Every new start is recorded before any of them answers: they wait together. One at a
    // time, the second is recorded only once the first has answered.
    let answered = Arc::new(AtomicUsize::new(0));
    let starts = slow_starts(&stack, &key, AT_ONCE, &answered);
    let mut all_recorded = false;
    for _ in 0..100 {
        let recorded = recorded().await;
        let done = answered.load(Ordering::SeqCst);
        assert_eq!(
            done,
            0,
            "a start answered with {} of the {AT_ONCE} recorded: one start at a time",
            recorded.saturating_sub(AT_ONCE)
        );
        if recorded == 2 * AT_ONCE {
            all_recorded = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        all_recorded,
        "{AT_ONCE} starts were not all recorded in 10 s"
    );
    let answers = starts.join_all().await;
    assert!(
        answers.iter().all(|answer| answer.status == 200),
        "{answers:?}"
    );
}
