//! The stream publisher against moto's EventBridge (contract sections 7 and 11): the fixture's
//! batch of stream records through the function's handler, its events put on a bus and read
//! back from a rule's queue as EventBridge delivers them; a bus that is not there answers every
//! record as failed, by its sequence number, for Lambda to retry.

use integration_tests::emulators::Moto;
use integration_tests::ruled_bus::{RuledBus, eventbridge};
use serde_json::{Value, json};
use shared::store::eventbridge::EventBridgeBus;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../events/stream-publisher.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A bus of moto's with a rule sending what the control plane publishes to a queue.
async fn bus_with_a_queue(moto: &Moto, bus: &str) -> RuledBus {
    let rule = (
        "to-the-data-plane".to_owned(),
        json!({"source": ["agent-hosting"]}),
    );
    RuledBus::new(moto, bus, &[rule]).await
}

#[tokio::test]
async fn a_batch_s_events_reach_the_bus_s_rules_with_the_contract_s_detail() {
    let moto = Moto::start();
    let ruled = bus_with_a_queue(&moto, "agents").await;
    let bus = EventBridgeBus::new(ruled.events().clone(), "agents");

    let answer = stream_publisher::handle(&bus, fixture()).await;
    assert_eq!(answer.batch_item_failures, [], "every event published");

    // moto delivers to the rule's queue within PutEvents: all there is, is there.
    let delivered = ruled.take("to-the-data-plane").await;
    // At least once, as EventBridge delivers (a retried PutEvents may deliver twice).
    let mut kinds: Vec<&str> = delivered
        .iter()
        .map(|event| event["detail-type"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "Agent Deleted",
            "Deployment Requested",
            "Session Requested",
            "Session Stop Requested"
        ]
    );
    for event in &delivered {
        assert_eq!(event["source"], "agent-hosting");
        let records = fixture()["Records"].as_array().unwrap().clone();
        let expected = records
            .iter()
            .filter_map(|record| shared::stream_events::event_of(record).unwrap())
            .find(|published| published.detail_type.as_str() == event["detail-type"])
            .unwrap();
        assert_eq!(event["detail"], expected.detail, "the detail as made");
    }
}

#[tokio::test]
async fn a_bus_that_is_not_there_fails_every_record_by_its_sequence_number() {
    let moto = Moto::start();
    let bus = EventBridgeBus::new(eventbridge(&moto).await, "no-such-bus");
    let answer = stream_publisher::handle(&bus, fixture()).await;
    let failed: Vec<&str> = answer
        .batch_item_failures
        .iter()
        .map(|failure| failure.item_identifier.as_str())
        .collect();
    let published: Vec<String> = fixture()["Records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|record| shared::stream_events::event_of(record).unwrap().is_some())
        .map(|record| {
            record["dynamodb"]["SequenceNumber"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(failed, published);
}
