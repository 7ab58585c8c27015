//! The agents table's stream, published (contract sections 7 and 11), on DynamoDB Local: an
//! agent created, updated (once for nothing), reported on and deleted, a session started, asked
//! twice to stop and ended, all through the real handlers; the stream's records through the
//! template's own event source mapping filters (as moto's EventBridge matches them) and the
//! publisher's code (shared::stream_events), which agree on every record. Exactly one
//! `Deployment Requested` a new deployment, one `Agent Deleted`, one `Session Requested` and one
//! `Session Stop Requested`, each with the contract's detail; nothing for the other writes.

use std::time::Duration;

use dev_data_plane::{rules, stream};
use integration_tests::bounded::Bound;
use integration_tests::emulators::Moto;
use integration_tests::ruled_bus::RuledBus;
use integration_tests::{TestStore, call, create_named_agent, report, template, update};
use serde_json::{Value, json};

/// The agents table's stream, read from its oldest record.
async fn stream_of(store: &TestStore) -> stream::StreamReader {
    stream::StreamReader::open(
        stream::LocalStreams::new(&std::env::var(shared::config::DYNAMODB_ENDPOINT).unwrap()),
        &store.agents_table,
    )
    .await
    .unwrap()
}

/// The records the stream holds past the reader's place, once it has given some and then none.
async fn drained(reader: &mut stream::StreamReader) -> Vec<stream::StreamRecord> {
    let mut records = Vec::new();
    let mut polls =
        Bound::new(20, Duration::from_secs(60)).start("the stream to give and then none");
    loop {
        polls.spend();
        let batch = reader.poll().await.unwrap();
        let empty = batch.is_empty();
        records.extend(batch);
        if empty && !records.is_empty() {
            return records;
        }
        polls.note(format!("{} records so far", records.len()));
    }
}

/// What the publisher puts on the bus for the records, in order: the records the template's
/// mapping lets through, each its event; the publisher's code and the filters agree on each.
///
/// Lambda applies an event source mapping's filters to each stream record's JSON with
/// EventBridge's pattern syntax and matching, so EventBridge's own matching is the judge: moto's
/// rules, each a filter under `detail`, with the record as the detail of an event put on the bus
/// (a pattern's members are paths into the record; nested under `detail` they name the same
/// leaves, and the envelope's members are named by no filter). A rule's delivery stands in for
/// `TestEventPattern`, which moto does not implement (integration_tests::ruled_bus) and which on
/// AWS wants that envelope too. The data plane's matcher (devplane/src/rules.rs) is what runs
/// these filters locally: it is not its own judge.
async fn published_by_the_publisher(records: &[stream::StreamRecord]) -> Vec<Value> {
    let moto = Moto::start();
    let filters: Vec<(String, Value)> = template::stream_filters(&template::template())
        .into_iter()
        .map(|(name, filter)| (name, json!({ "detail": filter })))
        .collect();
    let bus = RuledBus::new(&moto, "stream-filters", &filters).await;
    let mut published = Vec::new();
    for record in records {
        let passed = !bus
            .reached("aws.dynamodb", "Stream Record", &record.record)
            .await
            .is_empty();
        let event = shared::stream_events::event_of(&record.record).unwrap();
        assert_eq!(
            passed,
            event.is_some(),
            "the mapping's filters and the publisher disagree on {:#}",
            record.record
        );
        published.extend(event.map(|event| rules::as_delivered(&event)));
    }
    published
}

#[tokio::test]
async fn each_new_deployment_and_each_deleted_agent_is_published_once_with_the_contracts_detail() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let created = create_named_agent(&store, &key, "bot").await;
    let (_, updated) = update(
        &store,
        &key,
        "bot",
        &json!({"image": "ghcr.io/acme/agent:2.0"}),
    )
    .await;
    let (status, _) = update(
        &store,
        &key,
        "bot",
        &json!({"image": "ghcr.io/acme/agent:2.0"}),
    )
    .await;
    assert_eq!(status, 200, "an update that changes nothing");
    let mut keyed = integration_tests::agent_request(
        "POST",
        &key,
        "bot",
        Some(&json!({"agentProfile": "agent-2x"})),
    );
    keyed
        .headers_mut()
        .insert("idempotency-key", "k-1".parse().unwrap());
    let (status, keyed) = integration_tests::parts(
        update_agent::handle(&store.store, &store.store, integration_tests::MODE, keyed).await,
    );
    assert_eq!(status, 200);
    let outcome = report(&store, json!({
        "namespace": owner.namespace, "agent": "bot", "deploymentId": keyed["activeDeploymentId"],
        "state": "ready", "readyReplicas": 1, "activeSessionCount": 0, "observedAt": "2026-11-23T10:00:00Z"
    })).await;
    assert_eq!(outcome, shared::agent::ReportOutcome::Applied);
    let (status, _, _) = call(&store, &key, "DELETE", "bot", None).await;
    assert_eq!(status, 200);

    // Every record the table's stream holds, as the mapping reads it.
    let mut reader = stream_of(&store).await;
    let records = drained(&mut reader).await;
    // create (agent, deployment), update (agent, deployment), keyed update (agent, deployment,
    // record), report (agent, deployment), delete (3 deployments, the record, the agent).
    assert_eq!(records.len(), 2 + 2 + 3 + 2 + 5, "{records:#?}");
    let published = published_by_the_publisher(&records).await;
    let kinds: Vec<&str> = published
        .iter()
        .map(|event| event["detail-type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Deployment Requested",
            "Deployment Requested",
            "Deployment Requested",
            "Agent Deleted"
        ]
    );

    let service_id = created["deployment"]["serviceId"].as_str().unwrap();
    for (event, answered) in published[..3].iter().zip([&created, &updated, &keyed]) {
        assert_eq!(event["source"], "agent-hosting");
        let detail = &event["detail"];
        assert_eq!(detail["namespace"], owner.namespace.as_str());
        assert_eq!(detail["agentName"], "bot");
        assert_eq!(detail["serviceId"], service_id);
        assert_eq!(detail["deploymentId"], answered["activeDeploymentId"]);
        // The manifest comes in DynamoDB's typed JSON; decoded, it is the one the API answered.
        assert_eq!(
            shared::stream_events::untyped(&detail["manifest"]),
            answered["deployment"]["manifest"]
        );
    }
    let deleted = &published[3]["detail"];
    assert_eq!(
        (
            deleted["namespace"].clone(),
            deleted["agentName"].clone(),
            deleted["serviceId"].clone(),
            deleted["deploymentId"].clone()
        ),
        (
            json!(owner.namespace),
            json!("bot"),
            json!(service_id),
            keyed["activeDeploymentId"].clone()
        )
    );
    assert_eq!(
        shared::stream_events::untyped(&deleted["manifest"]),
        keyed["deployment"]["manifest"]
    );
}

/// A session started, asked twice to stop and ended: one `Session Requested` with the start's
/// request, one `Session Stop Requested`, and nothing for the other writes.
#[tokio::test]
async fn each_session_is_requested_once_and_its_stop_once() {
    use shared::agent::AgentStore;
    use shared::session::{SessionState, SessionStore};

    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    integration_tests::ready_agent(
        &store,
        &owner,
        &key,
        "talker",
        json!({"image": "ghcr.io/acme/a:1"}),
    )
    .await;
    let mut reader = stream_of(&store).await;
    let _creation = reader.poll().await.unwrap();

    let body = r#"{"createDailyRoom": true, "dailyRoomProperties": {"exp": 1800000000},
                   "body": {"user": "Ada"}, "transport": "daily"}"#;
    let (status, started) = integration_tests::parts(
        integration_tests::start_session(&store, &key, "talker", Some(body)).await,
    );
    assert_eq!(status, 200, "{started}");
    let id = started["sessionId"].as_str().unwrap();
    for _ in 0..2 {
        let request = integration_tests::session_request("DELETE", &key, "talker", id);
        let response =
            stop_session::handle(&store.store, &store.store, &store.store, request).await;
        assert_eq!(response.status(), 200);
    }
    let agent = store
        .store
        .get_agent(&owner.namespace, "talker")
        .await
        .unwrap()
        .unwrap();
    let session = store
        .store
        .get_session(&owner.namespace, &agent.service_id, id)
        .await
        .unwrap()
        .unwrap();
    let ended = session.ended(SessionState::Ended, "completed", "2026-11-25T11:00:00.000Z");
    store.store.write_session(&session, &ended).await.unwrap();

    let records = drained(&mut reader).await;
    let published = published_by_the_publisher(&records).await;
    let kinds: Vec<&str> = published
        .iter()
        .map(|event| event["detail-type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["Session Requested", "Session Stop Requested"],
        "{records:#?}"
    );

    for event in &published {
        let detail = &event["detail"];
        assert_eq!(detail["namespace"], owner.namespace.as_str());
        assert_eq!(detail["agentName"], "talker");
        assert_eq!(detail["serviceId"], agent.service_id.as_str());
        assert_eq!(detail["deploymentId"], started["deploymentId"]);
        assert_eq!(detail["sessionId"], id);
    }
    let request = shared::stream_events::untyped(&published[0]["detail"]["request"]);
    assert_eq!(request["createDailyRoom"], true);
    assert_eq!(request["transport"], "daily");
    let handed: Value = serde_json::from_str(request["body"].as_str().unwrap()).unwrap();
    assert_eq!(handed, json!({"user": "Ada"}), "the body as given");
    let properties: Value =
        serde_json::from_str(request["dailyRoomProperties"].as_str().unwrap()).unwrap();
    assert_eq!(properties, json!({"exp": 1_800_000_000_u64}));
}

/// What the publisher logs of a record it cannot publish is what the template's alarm counts.
#[test]
fn the_alarm_counts_the_message_an_unpublishable_record_is_logged_with() {
    let template = integration_tests::template::template();
    let filter = &template["Resources"]["StreamUnpublishableMetricFilter"]["Properties"];
    assert_eq!(
        filter["FilterPattern"].as_str().unwrap(),
        format!(
            "{{ $.message = \"{}\" }}",
            shared::stream_events::UNPUBLISHABLE
        )
    );
}
