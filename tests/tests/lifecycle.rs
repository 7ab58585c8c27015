//! An agent's whole life against DynamoDB Local, through the real handlers (contract sections 6
//! and 7): read, update, delete and list, the data plane's reports, and a deploy tool's flow.
//! The concurrent updates are in races.rs.

use integration_tests::{
    TestStore, call, create_named_agent, ingest, log_data, read_logs, report, update,
};
use serde_json::{Value, json};
use shared::agent::{AgentStore, ReportOutcome};

const SETTINGS: agent_logs::Settings = integration_tests::LOGS_SETTINGS;

/// A report of `state` for a deployment of `agent`, observed `second` seconds into a run.
fn reported(namespace: &str, agent: &str, deployment: &str, state: &str, second: u32) -> Value {
    let mut detail = json!({
        "namespace": namespace, "agent": agent, "deploymentId": deployment, "state": state,
        "readyReplicas": u32::from(state == "ready"), "activeSessionCount": second % 3,
        "observedAt": format!("2026-11-23T10:00:{second:02}Z"),
    });
    if state == "failed" {
        detail["error"] = json!({"code": "CrashLoopBackOff", "message": "exit code 1"});
    }
    detail
}

fn active(agent: &Value) -> String {
    agent["activeDeploymentId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_deploy_tools_flow_creates_waits_for_ready_updates_and_deploys_the_same_again_for_nothing()
 {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let ns = owner.namespace.as_str();

    // GET 404 means "create".
    let (status, _, body) = call(&store, &key, "GET", "voice-bot", None).await;
    assert_eq!((status, &body["code"]), (404, &json!("NOT_FOUND")));
    let created = create_named_agent(&store, &key, "voice-bot").await;
    let first = active(&created);

    // Polled until (ready and activeDeploymentReady): false until the data plane reports.
    let (_, _, agent) = call(&store, &key, "GET", "voice-bot", None).await;
    assert_eq!(
        (
            agent["ready"].clone(),
            agent["activeDeploymentReady"].clone()
        ),
        (json!(false), json!(false))
    );
    assert_eq!(
        report(&store, reported(ns, "voice-bot", &first, "ready", 1)).await,
        ReportOutcome::Applied
    );
    let (_, etag_ready, agent) = call(&store, &key, "GET", "voice-bot", None).await;
    assert_eq!(
        (
            agent["ready"].clone(),
            agent["activeDeploymentReady"].clone()
        ),
        (json!(true), json!(true))
    );

    // A new image: a new active deployment, not ready yet, while the first still serves.
    let (status, updated) = update(
        &store,
        &key,
        "voice-bot",
        &json!({"image": "ghcr.io/acme/agent:2.0"}),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    let second = active(&updated);
    assert_ne!(second, first);
    assert_eq!(
        updated["deployment"]["manifest"]["spec"]["image"],
        "ghcr.io/acme/agent:2.0"
    );
    assert_eq!(
        (
            updated["ready"].clone(),
            updated["activeDeploymentReady"].clone()
        ),
        (json!(true), json!(false))
    );
    assert_eq!(
        report(&store, reported(ns, "voice-bot", &second, "ready", 2)).await,
        ReportOutcome::Applied
    );
    let (_, _, agent) = call(&store, &key, "GET", "voice-bot", None).await;
    assert_eq!(agent["activeDeploymentReady"], true);
    assert_eq!(active(&agent), second);

    // The same configuration again: success, and nothing new written.
    let items = store.item_count(&store.agents_table).await;
    let (_, before, _) = call(&store, &key, "GET", "voice-bot", None).await;
    let (status, again) = update(
        &store,
        &key,
        "voice-bot",
        &json!({"serviceName": "voice-bot", "image": "ghcr.io/acme/agent:2.0"}),
    )
    .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(active(&again), second);
    assert_eq!(
        store.item_count(&store.agents_table).await,
        items,
        "nothing written"
    );
    let (_, after, _) = call(&store, &key, "GET", "voice-bot", None).await;
    assert_eq!(after["etag"], before["etag"], "the version is unchanged");
    assert_ne!(after["etag"], etag_ready["etag"]);

    // Another account sees 404 everywhere, and no agent in its list.
    let (_, bob_key) = store.account_with_key("bob").await;
    for (method, body) in [
        ("GET", None),
        ("POST", Some(json!({"image": "ghcr.io/bob/x:1"}))),
        ("DELETE", None),
    ] {
        let (status, _, answer) = call(&store, &bob_key, method, "voice-bot", body.as_ref()).await;
        assert_eq!(status, 404, "{method}: {answer}");
        assert_eq!(
            answer,
            json!({"error": "No agent of that name in this account", "code": "NOT_FOUND"})
        );
    }
    let (status, _, list) = call(&store, &bob_key, "GET", "", None).await;
    assert_eq!((status, list), (200, json!({"services": []})));
    let (_, _, agent) = call(&store, &key, "GET", "voice-bot", None).await;
    assert_eq!(active(&agent), second, "alice's agent is as it was");
}

#[tokio::test]
async fn an_update_merges_and_if_match_pins_the_version() {
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    create_named_agent(&store, &key, "bot").await;
    let (status, agent) = update(
        &store,
        &key,
        "bot",
        &json!({"autoScaling": {"minAgents": 2, "maxAgents": 8}, "agentProfile": "agent-2x"}),
    )
    .await;
    assert_eq!(status, 200, "{agent}");
    // Left out: kept. Given: replaced. null: the default. Inside autoScaling too.
    let (_, agent) = update(
        &store,
        &key,
        "bot",
        &json!({"autoScaling": {"maxAgents": 10}, "agentProfile": null}),
    )
    .await;
    assert_eq!(
        agent["autoScaling"],
        json!({"minReplicas": 2, "maxReplicas": 10})
    );
    assert_eq!(agent["agentProfile"], "agent-1x");
    assert_eq!(
        agent["deployment"]["manifest"]["spec"]["image"],
        "ghcr.io/acme/agent:1.0"
    );
    // A merged result that breaks a rule is a 400 and writes nothing.
    let items = store.item_count(&store.agents_table).await;
    let (status, error) = update(
        &store,
        &key,
        "bot",
        &json!({"autoScaling": {"minAgents": 11}}),
    )
    .await;
    assert_eq!(
        (status, error["field"].clone()),
        (400, json!("autoScaling.minAgents"))
    );
    assert_eq!(store.item_count(&store.agents_table).await, items);

    // If-Match: the current ETag applies, another is a 412 that writes nothing.
    let (_, headers, _) = call(&store, &key, "GET", "bot", None).await;
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let with_if_match = |tag: &str, image: &str| {
        let mut request =
            integration_tests::agent_request("POST", &key, "bot", Some(&json!({"image": image})));
        request
            .headers_mut()
            .insert("if-match", tag.parse().unwrap());
        request
    };
    let response = update_agent::handle(
        &store.store,
        &store.store,
        integration_tests::MODE,
        with_if_match("\"1\"", "ghcr.io/acme/agent:9.0"),
    )
    .await;
    let (status, error) = integration_tests::parts(response);
    assert_eq!(
        (status, error["code"].clone()),
        (412, json!("PRECONDITION_FAILED"))
    );
    assert_eq!(store.item_count(&store.agents_table).await, items);
    let response = update_agent::handle(
        &store.store,
        &store.store,
        integration_tests::MODE,
        with_if_match(&etag, "ghcr.io/acme/agent:3.0"),
    )
    .await;
    assert_ne!(response.headers()["etag"].to_str().unwrap(), etag);
    let (status, agent) = integration_tests::parts(response);
    assert_eq!(status, 200);
    assert_eq!(
        agent["deployment"]["manifest"]["spec"]["image"],
        "ghcr.io/acme/agent:3.0"
    );
    // That ETag is now stale.
    let response = update_agent::handle(
        &store.store,
        &store.store,
        integration_tests::MODE,
        with_if_match(&etag, "ghcr.io/acme/agent:4.0"),
    )
    .await;
    assert_eq!(response.status(), 412);
}

#[tokio::test]
async fn an_idempotent_update_replays_and_the_key_is_refused_for_another_request() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    create_named_agent(&store, &key, "bot").await;
    let keyed = |body: Value| {
        let mut request = integration_tests::agent_request("POST", &key, "bot", Some(&body));
        request
            .headers_mut()
            .insert("idempotency-key", "deploy-7".parse().unwrap());
        request
    };
    let first = update_agent::handle(
        &store.store,
        &store.store,
        integration_tests::MODE,
        keyed(json!({"image": "ghcr.io/acme/agent:7.0"})),
    )
    .await;
    let items = store.namespace_items(&owner.namespace).await;
    let replay = update_agent::handle(
        &store.store,
        &store.store,
        integration_tests::MODE,
        keyed(json!({"image": "ghcr.io/acme/agent:7.0"})),
    )
    .await;
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(
        replay.body().as_ref(),
        first.body().as_ref(),
        "byte for byte"
    );
    assert_eq!(
        store.namespace_items(&owner.namespace).await,
        items,
        "nothing written again"
    );
    let (status, body) = integration_tests::parts(
        update_agent::handle(
            &store.store,
            &store.store,
            integration_tests::MODE,
            keyed(json!({"image": "ghcr.io/acme/agent:8.0"})),
        )
        .await,
    );
    assert_eq!(
        (status, body["code"].clone()),
        (422, json!("IDEMPOTENCY_KEY_REUSED"))
    );
}

#[tokio::test]
async fn agents_are_listed_by_name_a_page_at_a_time() {
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    let names: Vec<String> = (0..7).map(|i| format!("agent-{}", 6 - i)).collect();
    for name in &names {
        create_named_agent(&store, &key, name).await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = integration_tests::bounded::Bound::new(10, std::time::Duration::from_secs(60))
        .start("the list's last page");
    loop {
        pages.spend();
        let mut query = vec![("limit", "3".to_owned())];
        query.extend(cursor.take().map(|cursor| ("cursor", cursor)));
        let (status, page) = list_page(&store, &key, &query).await;
        assert_eq!(status, 200, "{page}");
        for agent in page["services"].as_array().unwrap() {
            assert!(
                agent["id"]
                    .as_str()
                    .is_some_and(|id| uuid::Uuid::parse_str(id).is_ok())
            );
            seen.push(agent["name"].as_str().unwrap().to_owned());
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(seen, expected, "every agent once, by name");

    // A cursor the service did not sign (the unsigned shape of earlier versions, naming an agent
    // of the caller's choice) is a 400, as a forged logs cursor is.
    use base64::Engine;
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("a1.agent-3");
    let (status, body) = list_page(&store, &key, &[("cursor", forged)]).await;
    assert_eq!((status, &body["field"]), (400, &json!("cursor")), "{body}");
}

/// GET /v1/agents with `query`, through the list handler.
async fn list_page(
    store: &TestStore,
    key: &shared::auth::ApiKey,
    query: &[(&str, String)],
) -> (u16, Value) {
    let mut request = integration_tests::agent_request("GET", key, "", None);
    *request.uri_mut() = "https://api.example.com/v1/agents".parse().unwrap();
    let query: std::collections::HashMap<String, String> = query
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.clone()))
        .collect();
    let request = lambda_http::RequestExt::with_query_string_parameters(request, query);
    integration_tests::parts(
        list_agents::handle(
            &store.store,
            &store.store,
            &integration_tests::CURSOR_KEY,
            request,
        )
        .await,
    )
}

#[tokio::test]
async fn reports_out_of_order_duplicated_or_not_the_agents_change_nothing_but_the_newest() {
    let store = TestStore::new().await;
    let (alice, alice_key) = store.account_with_key("alice").await;
    let (bob, bob_key) = store.account_with_key("bob").await;
    let ns = alice.namespace.as_str();
    let first = active(&create_named_agent(&store, &alice_key, "bot").await);
    let bobs = active(&create_named_agent(&store, &bob_key, "bot").await);
    let bob_before = store
        .store
        .get_agent(&bob.namespace, "bot")
        .await
        .unwrap()
        .unwrap();

    // Reports of one deployment arriving out of order and twice: the newest one wins.
    for (state, second, outcome) in [
        ("ready", 5, ReportOutcome::Applied),
        ("pending", 3, ReportOutcome::Stale),
        ("ready", 5, ReportOutcome::Stale),
        ("failed", 7, ReportOutcome::Applied),
        ("ready", 6, ReportOutcome::Stale),
    ] {
        assert_eq!(
            report(&store, reported(ns, "bot", &first, state, second)).await,
            outcome,
            "{state} at {second}"
        );
    }
    let (_, _, agent) = call(&store, &alice_key, "GET", "bot", None).await;
    assert_eq!(agent["ready"], false, "the newest report says failed");
    assert_eq!(
        agent["errors"],
        json!([{"code": "CrashLoopBackOff", "message": "exit code 1"}])
    );

    // Another account's deployment named under alice's agent, and alice's deployment under bob's
    // namespace: dropped, nothing of either agent changes.
    let alice_before = store.store.get_agent(ns, "bot").await.unwrap().unwrap();
    assert_eq!(
        report(&store, reported(ns, "bot", &bobs, "ready", 9)).await,
        ReportOutcome::UnknownDeployment
    );
    assert_eq!(
        report(&store, reported(&bob.namespace, "bot", &first, "ready", 9)).await,
        ReportOutcome::UnknownDeployment
    );
    assert_eq!(
        store.store.get_agent(ns, "bot").await.unwrap().unwrap(),
        alice_before
    );
    assert_eq!(
        store
            .store
            .get_agent(&bob.namespace, "bot")
            .await
            .unwrap()
            .unwrap(),
        bob_before
    );

    // A superseded deployment's late report changes nothing.
    let (_, updated) = update(
        &store,
        &alice_key,
        "bot",
        &json!({"image": "ghcr.io/acme/agent:2.0"}),
    )
    .await;
    let second = active(&updated);
    assert_eq!(
        report(&store, reported(ns, "bot", &second, "ready", 10)).await,
        ReportOutcome::Applied
    );
    let settled = store.store.get_agent(ns, "bot").await.unwrap().unwrap();
    assert_eq!(
        report(&store, reported(ns, "bot", &first, "ready", 11)).await,
        ReportOutcome::Superseded
    );
    assert_eq!(
        store.store.get_agent(ns, "bot").await.unwrap().unwrap(),
        settled
    );

    // The history keeps every deployment's last status.
    let history = store
        .store
        .get_deployment(ns, &settled.service_id, &second)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(history.status, settled.active.status);

    // A deleted agent's reports are dropped.
    let (status_code, _, _) = call(&store, &alice_key, "DELETE", "bot", None).await;
    assert_eq!(status_code, 200);
    assert_eq!(
        report(&store, reported(ns, "bot", &second, "ready", 12)).await,
        ReportOutcome::UnknownAgent
    );
    assert!(store.store.get_agent(ns, "bot").await.unwrap().is_none());
}

#[tokio::test]
async fn deleting_an_agent_takes_its_deployments_and_records_and_a_new_one_starts_with_no_lines() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let group = format!("/agent-hosting/{}/bot", owner.namespace);
    // The old agent: a keyed create, two deployments, lines in both.
    let mut request = integration_tests::direct_create(
        Some(&integration_tests::bearer(&key)),
        &json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"}),
    );
    request
        .headers_mut()
        .insert("idempotency-key", "create-bot".parse().unwrap());
    let (_, old) = integration_tests::parts(
        create_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await,
    );
    let (_, old_updated) = update(
        &store,
        &key,
        "bot",
        &json!({"image": "ghcr.io/acme/agent:2.0"}),
    )
    .await;
    let old_deployments = [active(&old), active(&old_updated)];
    let now = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
    for (d, deployment) in old_deployments.iter().enumerate() {
        let events: Vec<(String, i64, String)> = (0..5)
            .map(|i| {
                (
                    format!("{d}{i:055}"),
                    now - 10_000 + i,
                    format!("old line {d}-{i}"),
                )
            })
            .collect();
        let report = ingest(
            &store,
            30,
            log_data(&group, &format!("{deployment}/s-1"), &events),
        )
        .await;
        assert_eq!(report.stored, 5);
    }
    let (_, page) = read_logs(&store, &key, SETTINGS, "bot", &[("limit", "3".into())]).await;
    let old_cursor = page["nextCursor"].as_str().unwrap().to_owned();
    assert_eq!(
        store.namespace_items(&owner.namespace).await,
        4,
        "agent, 2 deployments, 1 record"
    );

    let (status, _, body) = call(&store, &key, "DELETE", "bot", None).await;
    assert_eq!((status, body), (200, json!({"status": "OK"})));
    assert_eq!(
        store.namespace_items(&owner.namespace).await,
        0,
        "nothing of it is left"
    );
    let (status, _, _) = call(&store, &key, "GET", "bot", None).await;
    assert_eq!(status, 404);
    let (status, _) = read_logs(&store, &key, SETTINGS, "bot", &[]).await;
    assert_eq!(status, 404);

    // The same name again: a new service, with none of the old lines by any filter or cursor...
    let mut request = integration_tests::direct_create(
        Some(&integration_tests::bearer(&key)),
        &json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"}),
    );
    request
        .headers_mut()
        .insert("idempotency-key", "create-bot".parse().unwrap());
    let response =
        create_agent::handle(&store.store, &store.store, integration_tests::MODE, request).await;
    assert!(
        !response.headers().contains_key("idempotent-replayed"),
        "the old key's record went with the agent"
    );
    let (status, new) = integration_tests::parts(response);
    assert_eq!(status, 201);
    assert_ne!(
        new["deployment"]["serviceId"],
        old["deployment"]["serviceId"]
    );
    for params in [
        vec![],
        vec![("deploymentId", old_deployments[0].clone())],
        vec![("deploymentId", old_deployments[1].clone())],
        vec![("sessionId", "s-1".to_owned())],
        vec![("query", "old line".to_owned())],
        vec![("order", "asc".to_owned()), ("startTime", "0".to_owned())],
    ] {
        let (status, page) = read_logs(&store, &key, SETTINGS, "bot", &params).await;
        assert_eq!(
            (status, page["total"].clone()),
            (200, json!({"value": 0, "relation": "eq"})),
            "{params:?}"
        );
    }
    let (status, body) = read_logs(
        &store,
        &key,
        SETTINGS,
        "bot",
        &[("limit", "3".into()), ("cursor", old_cursor)],
    )
    .await;
    assert_eq!((status, body["field"].clone()), (400, json!("cursor")));

    // ...and the old deployments' late lines are not taken for it.
    let late = vec![("9".repeat(56), now, "old line, late".to_owned())];
    let report = ingest(
        &store,
        30,
        log_data(&group, &format!("{}/s-1", old_deployments[1]), &late),
    )
    .await;
    assert_eq!((report.stored, report.dropped_unknown_deployment), (0, 1));
    let (_, page) = read_logs(&store, &key, SETTINGS, "bot", &[]).await;
    assert_eq!(page["total"]["value"], 0);
}
