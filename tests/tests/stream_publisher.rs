//! The stream publisher against moto's EventBridge (contract sections 7 and 11): the fixture's
//! batch of stream records through the function's handler, its events put on a bus and read
//! back from a rule's queue as EventBridge delivers them; a bus that is not there answers every
//! record as failed, by its sequence number, for Lambda to retry.

use integration_tests::emulators::Moto;
use serde_json::Value;
use shared::store::eventbridge::EventBridgeBus;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../events/stream-publisher.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// An EventBridge client of moto's, once its EventBridge answers (moto loads a service on its
/// first request, which can outlast the client's 4 s bound on a busy machine).
async fn eventbridge(moto: &Moto) -> aws_sdk_eventbridge::Client {
    let events = shared::aws::eventbridge_client(Some(&moto.endpoint)).unwrap();
    for _ in 0..5 {
        if events.list_event_buses().send().await.is_ok() {
            break;
        }
    }
    events
}

/// A bus of moto's with a rule sending what the control plane publishes to a queue: the queue's
/// URL.
async fn bus_with_a_queue(moto: &Moto, bus: &str) -> String {
    let events = eventbridge(moto).await;
    events.create_event_bus().name(bus).send().await.unwrap();
    let sqs = moto.sqs();
    let queue = sqs
        .create_queue()
        .queue_name("published")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&queue)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
        .clone();
    events
        .put_rule()
        .event_bus_name(bus)
        .name("to-the-data-plane")
        .event_pattern(r#"{"source": ["agent-hosting"]}"#)
        .send()
        .await
        .unwrap();
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("queue")
        .arn(arn)
        .build()
        .unwrap();
    events
        .put_targets()
        .event_bus_name(bus)
        .rule("to-the-data-plane")
        .targets(target)
        .send()
        .await
        .unwrap();
    queue
}

#[tokio::test]
async fn a_batch_s_events_reach_the_bus_s_rules_with_the_contract_s_detail() {
    let moto = Moto::start();
    let queue = bus_with_a_queue(&moto, "agents").await;
    let bus = EventBridgeBus::new(eventbridge(&moto).await, "agents");

    let answer = stream_publisher::handle(&bus, fixture()).await;
    assert_eq!(answer.batch_item_failures, [], "every event published");

    let mut delivered: Vec<Value> = Vec::new();
    for _ in 0..10 {
        let received = moto
            .sqs()
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        for message in received.messages.unwrap_or_default() {
            delivered.push(serde_json::from_str(message.body.as_deref().unwrap()).unwrap());
        }
        if delivered.len() >= 4 {
            break;
        }
    }
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
