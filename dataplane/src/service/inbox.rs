//! The data plane's inbox on AWS: one SQS queue fed by two EventBridge rules, the control
//! plane's events (agents bus) and ECS's Task State Change events of the stack's cluster (default
//! bus). A message's body is the EventBridge event as delivered. What a message is
//! ([`Message::of`]) is decided apart from the queue, so it is tested without one.
//!
//! A message is deleted once the plane has it: a control event once taken, a Task State Change
//! once a reconcile pass ran after it (the engine's listing stays the truth; the event only makes
//! it prompt), any other event at once. A malformed one is never deleted: after the queue's
//! maxReceiveCount receives its redrive policy moves it to the dead-letter queue. Delivery is at
//! least once (a message is taken again when its delete failed): the plane takes an event twice
//! as it takes it once (deployments and sessions are known by their ids).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message as SqsMessage};
use serde_json::Value;
use shared::secrets::store::{DataKeyOpener, SecretStore};

use crate::ecs::events::DETAIL_TYPE as TASK_STATE_CHANGE;
use crate::engine::Engine;
use crate::events::{ControlEvent, EventError};
use crate::ports::Reports;
use crate::reconciler::DataPlane;

/// SQS's longest long poll: an idle inbox costs three receives a minute.
const WAIT_SECONDS: i32 = 20;
/// SQS's most messages per receive.
const BATCH: i32 = 10;
/// Receives failing this many times in a row end the loop (ECS then replaces the task, which
/// adopts the running replicas): the failures are said, and not retried forever.
const MOST_FAILURES: u32 = 10;
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MOST: Duration = Duration::from_secs(30);

/// What a message of the inbox is.
#[derive(Debug, PartialEq)]
pub enum Message {
    /// A control event the plane takes.
    Control(ControlEvent),
    /// A task of this stack's cluster changed state: a reconcile pass now.
    TaskChanged,
    /// An event the data plane does not take (another detail-type, another cluster's task).
    Ignored,
    /// It cannot be read: left for the dead-letter queue.
    Malformed(MessageError),
}

/// Why a message cannot be read; never carries the body.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum MessageError {
    #[error("the message has no body")]
    NoBody,
    #[error("the body is not a JSON object: {0}")]
    NotJson(String),
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("a Task State Change without detail.clusterArn")]
    NoCluster,
}

impl Message {
    /// What `body` (an EventBridge event) is to the data plane of `cluster` (a name or ARN).
    pub fn of(body: Option<&str>, cluster: &str) -> Self {
        let Some(body) = body else {
            return Message::Malformed(MessageError::NoBody);
        };
        let event: Value = match serde_json::from_str(body) {
            Ok(event @ Value::Object(_)) => event,
            Ok(_) => return Message::Malformed(MessageError::NotJson("not an object".into())),
            Err(error) => return Message::Malformed(MessageError::NotJson(error.to_string())),
        };
        if event["source"] == "aws.ecs" && event["detail-type"] == TASK_STATE_CHANGE {
            return match event["detail"]["clusterArn"].as_str() {
                Some(arn) if is_cluster(arn, cluster) => Message::TaskChanged,
                Some(_) => Message::Ignored,
                None => Message::Malformed(MessageError::NoCluster),
            };
        }
        match ControlEvent::from_bus(&event) {
            Ok(Some(event)) => Message::Control(event),
            Ok(None) => Message::Ignored,
            Err(error) => Message::Malformed(error.into()),
        }
    }
}

/// Whether a task's `clusterArn` is the cluster the stack gave by name or by ARN.
fn is_cluster(arn: &str, cluster: &str) -> bool {
    arn == cluster
        || arn
            .rsplit_once(":cluster/")
            .is_some_and(|(_, name)| name == cluster)
}

/// What the inbox hands messages to: the data plane (tests record instead).
pub trait Plane: Send + Sync {
    fn take(&self, event: ControlEvent) -> impl Future<Output = ()> + Send;
    fn settle(&self) -> impl Future<Output = ()> + Send;
}

impl<E, S, K, R> Plane for Arc<DataPlane<E, S, K, R>>
where
    E: Engine,
    S: SecretStore + 'static,
    K: DataKeyOpener + 'static,
    R: Reports,
{
    async fn take(&self, event: ControlEvent) {
        DataPlane::take(self, event).await;
    }

    async fn settle(&self) {
        DataPlane::settle(self).await;
    }
}

/// Why the inbox stopped before it was asked to.
#[derive(Debug, thiserror::Error)]
#[error("receiving from the inbox failed {MOST_FAILURES} times in a row, the last: {last}")]
pub struct InboxError {
    last: String,
}

/// The queue, and the cluster whose Task State Changes are this data plane's.
pub struct Inbox {
    client: aws_sdk_sqs::Client,
    url: String,
    cluster: String,
}

impl Inbox {
    pub fn new(
        client: aws_sdk_sqs::Client,
        url: impl Into<String>,
        cluster: impl Into<String>,
    ) -> Self {
        Inbox {
            client,
            url: url.into(),
            cluster: cluster.into(),
        }
    }

    /// Receives and hands over messages until `shutdown` completes (a batch being handed over
    /// is finished first, so nothing taken goes undeleted), or receives keep failing.
    pub async fn run<P: Plane>(
        &self,
        plane: &P,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), InboxError> {
        tokio::pin!(shutdown);
        let mut failures = 0;
        loop {
            let received = tokio::select! {
                // A stop asked for while a batch was handed over ends the loop before another.
                biased;
                () = &mut shutdown => return Ok(()),
                received = self.receive() => received,
            };
            match received {
                Ok(messages) => {
                    failures = 0;
                    self.hand_over(plane, messages).await;
                }
                Err(last) => {
                    failures += 1;
                    tracing::warn!(error = %last, failures, "receiving from the inbox failed");
                    if failures >= MOST_FAILURES {
                        return Err(InboxError { last });
                    }
                    let backoff = BACKOFF_FIRST
                        .saturating_mul(1 << (failures - 1).min(5))
                        .min(BACKOFF_MOST);
                    tokio::select! {
                        () = &mut shutdown => return Ok(()),
                        () = tokio::time::sleep(backoff) => {}
                    }
                }
            }
        }
    }

    async fn receive(&self) -> Result<Vec<SqsMessage>, String> {
        let received = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .wait_time_seconds(WAIT_SECONDS)
            .max_number_of_messages(BATCH)
            .send()
            .await
            .map_err(|error| aws_sdk_sqs::error::DisplayErrorContext(error).to_string())?;
        Ok(received.messages.unwrap_or_default())
    }

    /// Each message to the plane; one reconcile pass for the batch's Task State Changes; then
    /// the batch's messages the plane has are deleted.
    async fn hand_over<P: Plane>(&self, plane: &P, messages: Vec<SqsMessage>) {
        let (mut done, mut changed) = (Vec::new(), Vec::new());
        for message in messages {
            let id = message.message_id().unwrap_or_default().to_owned();
            let Some(receipt) = message.receipt_handle().map(str::to_owned) else {
                tracing::warn!(message_id = %id, "a message without a receipt handle");
                continue;
            };
            match Message::of(message.body(), &self.cluster) {
                Message::Control(event) => {
                    plane.take(event).await;
                    done.push(receipt);
                }
                Message::TaskChanged => changed.push(receipt),
                Message::Ignored => {
                    tracing::debug!(message_id = %id, "an event the data plane does not take");
                    done.push(receipt);
                }
                Message::Malformed(error) => tracing::warn!(
                    message_id = %id,
                    %error,
                    "a malformed message, left for the dead-letter queue"
                ),
            }
        }
        if !changed.is_empty() {
            plane.settle().await;
            done.append(&mut changed);
        }
        self.delete(done).await;
    }

    /// Deletes the handled messages (at most a receive's 10: one call); one not deleted comes
    /// back after its visibility timeout and is taken again.
    async fn delete(&self, receipts: Vec<String>) {
        if receipts.is_empty() {
            return;
        }
        let entries = receipts
            .into_iter()
            .enumerate()
            .filter_map(|(index, receipt)| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(index.to_string())
                    .receipt_handle(receipt)
                    .build()
                    .ok()
            })
            .collect();
        let deleted = self
            .client
            .delete_message_batch()
            .queue_url(&self.url)
            .set_entries(Some(entries))
            .send()
            .await;
        match deleted {
            Ok(output) => {
                for failed in output.failed() {
                    tracing::warn!(code = %failed.code(), "deleting a handled message failed");
                }
            }
            Err(error) => tracing::warn!(
                error = %aws_sdk_sqs::error::DisplayErrorContext(error),
                "deleting handled messages failed"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
