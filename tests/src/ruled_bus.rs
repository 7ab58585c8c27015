//! moto's EventBridge as the judge of event patterns: a bus whose rules each send what they match
//! to a queue of their own, so that which queues an event reached is which patterns matched it,
//! as EventBridge's own matching (moto's `EventPattern`, code the service does not share) decides.
//!
//! moto's `TestEventPattern` would be the direct question, but moto (5.2.5) does not implement
//! it: it answers 200 with an empty body, never a `Result`. A rule's delivery runs the matching
//! that `TestEventPattern` would.

use std::time::Duration;

use serde_json::Value;

use crate::bounded::{Bound, Try, until};
use crate::emulators::Moto;

/// A bus of moto's and its rules, each with its queue.
pub struct RuledBus {
    pub name: String,
    events: aws_sdk_eventbridge::Client,
    sqs: aws_sdk_sqs::Client,
    /// Rule name, its queue's URL.
    queues: Vec<(String, String)>,
}

/// An EventBridge client of moto's, once its EventBridge answers (moto loads a service on its
/// first request, which can outlast the client's bound on a busy machine).
pub async fn eventbridge(moto: &Moto) -> aws_sdk_eventbridge::Client {
    let events = shared::aws::eventbridge_client(Some(&moto.endpoint)).unwrap();
    let bound = Bound::new(5, Duration::from_secs(60));
    until("moto's EventBridge", bound, || async {
        match events.list_event_buses().send().await {
            Ok(_) => Try::Done(()),
            Err(error) => Try::Again {
                why: format!("{error:?}"),
                wait: Duration::ZERO,
            },
        }
    })
    .await;
    events
}

impl RuledBus {
    /// A new bus `name` with one rule per (rule name, pattern), each to a queue of its own.
    pub async fn new(moto: &Moto, name: &str, rules: &[(String, Value)]) -> Self {
        let events = eventbridge(moto).await;
        events.create_event_bus().name(name).send().await.unwrap();
        let mut bus = RuledBus {
            name: name.to_owned(),
            events,
            sqs: moto.sqs(),
            queues: Vec::new(),
        };
        for (rule, pattern) in rules {
            bus.add_rule(rule, pattern).await;
        }
        bus
    }

    pub fn events(&self) -> &aws_sdk_eventbridge::Client {
        &self.events
    }

    async fn add_rule(&mut self, rule: &str, pattern: &Value) {
        let queue = self
            .sqs
            .create_queue()
            .queue_name(format!("{}-{rule}", self.name))
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let arn = self
            .sqs
            .get_queue_attributes()
            .queue_url(&queue)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
            .clone();
        self.events
            .put_rule()
            .event_bus_name(&self.name)
            .name(rule)
            .event_pattern(pattern.to_string())
            .send()
            .await
            .unwrap_or_else(|error| panic!("{rule}: EventBridge refuses {pattern}: {error:?}"));
        let target = aws_sdk_eventbridge::types::Target::builder()
            .id("queue")
            .arn(arn)
            .build()
            .unwrap();
        self.events
            .put_targets()
            .event_bus_name(&self.name)
            .rule(rule)
            .targets(target)
            .send()
            .await
            .unwrap();
        self.queues.push((rule.to_owned(), queue));
    }

    /// Puts one event on the bus: the rules it reached, by name, in the order they were made.
    /// Every delivery so far is taken off the queues.
    pub async fn reached(&self, source: &str, detail_type: &str, detail: &Value) -> Vec<String> {
        let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
            .event_bus_name(&self.name)
            .source(source)
            .detail_type(detail_type)
            .detail(detail.to_string())
            .build();
        let put = self
            .events
            .put_events()
            .entries(entry)
            .send()
            .await
            .unwrap();
        assert_eq!(put.failed_entry_count, 0, "{put:?}");
        let mut reached = Vec::new();
        // moto delivers to a rule's queue within PutEvents: what a queue lacks now never comes.
        for (rule, _) in &self.queues {
            if !self.take(rule).await.is_empty() {
                reached.push(rule.clone());
            }
        }
        reached
    }

    /// The events delivered to `rule`'s queue and not yet taken, taken off it.
    pub async fn take(&self, rule: &str) -> Vec<Value> {
        let (_, queue) = self
            .queues
            .iter()
            .find(|(name, _)| name == rule)
            .unwrap_or_else(|| panic!("no rule {rule}"));
        let mut pages = Bound::new(100, Duration::from_secs(60)).start(format!("{rule}'s queue"));
        let mut taken = Vec::new();
        loop {
            pages.spend();
            let received = self
                .sqs
                .receive_message()
                .queue_url(queue)
                .max_number_of_messages(10)
                .send()
                .await
                .unwrap()
                .messages
                .unwrap_or_default();
            if received.is_empty() {
                return taken;
            }
            for message in received {
                taken.push(serde_json::from_str(message.body.as_deref().unwrap()).unwrap());
                self.sqs
                    .delete_message()
                    .queue_url(queue)
                    .receipt_handle(message.receipt_handle.unwrap())
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
}
