//! The data plane's inbox (src/service/inbox.rs) against moto's SQS: an inbox queue with a
//! redrive policy to a dead-letter queue (maxReceiveCount 5, as the template's), the events
//! delivered as EventBridge delivers them, a plane that records what it is handed.

// This suite uses moto's start and SDK configuration alone.
#[allow(dead_code)]
mod moto_server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use data_plane::events::ControlEvent;
use data_plane::service::inbox::{Inbox, InboxError, Plane};
use moto_server::MotoServer;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

const CLUSTER: &str = "agent-hosting";
const MAX_RECEIVE_COUNT: u32 = 5;
/// Bounds of the waits below (never asserted as timings).
const WAIT: Duration = Duration::from_secs(60);
const PAUSE: Duration = Duration::from_millis(100);

/// What the inbox handed over.
#[derive(Default)]
struct Recorded {
    taken: Mutex<Vec<ControlEvent>>,
    settled: AtomicUsize,
}

impl Plane for Recorded {
    async fn take(&self, event: ControlEvent) {
        self.taken.lock().unwrap().push(event);
    }

    async fn settle(&self) {
        self.settled.fetch_add(1, Ordering::SeqCst);
    }
}

impl Recorded {
    fn taken(&self) -> Vec<ControlEvent> {
        self.taken.lock().unwrap().clone()
    }

    fn settled(&self) -> usize {
        self.settled.load(Ordering::SeqCst)
    }
}

/// An inbox queue and its dead-letter queue, the inbox's loop running over them.
struct Setup {
    _moto: MotoServer,
    sqs: aws_sdk_sqs::Client,
    inbox: String,
    dead_letters: String,
    plane: Arc<Recorded>,
    stop: watch::Sender<bool>,
    running: JoinHandle<Result<(), InboxError>>,
}

impl Setup {
    async fn start() -> Self {
        let moto = MotoServer::start();
        let sqs = aws_sdk_sqs::Client::new(&moto.sdk_config());
        let dead_letters = create_queue(&sqs, "data-plane-inbox-dlq", &[]).await;
        let dlq_arn = sqs
            .get_queue_attributes()
            .queue_url(&dead_letters)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap()[&QueueAttributeName::QueueArn]
            .clone();
        let redrive = json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVE_COUNT});
        let inbox = create_queue(
            &sqs,
            "data-plane-inbox",
            &[
                (QueueAttributeName::RedrivePolicy, redrive.to_string()),
                // A malformed message comes back after a second, not the default 30.
                (QueueAttributeName::VisibilityTimeout, "1".into()),
            ],
        )
        .await;
        let plane = Arc::new(Recorded::default());
        let (stop, mut stopped) = watch::channel(false);
        let running = tokio::spawn({
            let inbox = Inbox::new(sqs.clone(), inbox.clone(), CLUSTER);
            let plane = plane.clone();
            async move {
                let shutdown = async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                };
                inbox.run(&*plane, shutdown).await
            }
        });
        Setup {
            _moto: moto,
            sqs,
            inbox,
            dead_letters,
            plane,
            stop,
            running,
        }
    }

    async fn send(&self, body: &str) {
        self.sqs
            .send_message()
            .queue_url(&self.inbox)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }

    /// The messages in `queue`, visible or being handled.
    async fn count(&self, queue: &str) -> usize {
        MotoServer::messages_in(&self.sqs, queue).await
    }

    /// Waits (bounded) until `done` holds.
    async fn until<F: Future<Output = bool>>(&self, what: &str, mut done: impl FnMut() -> F) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !done().await {
            assert!(tokio::time::Instant::now() < deadline, "never: {what}");
            tokio::time::sleep(PAUSE).await;
        }
    }

    /// Waits (bounded) until the inbox holds no message, visible or being handled.
    async fn until_inbox_empty(&self) {
        self.until("the inbox is empty", || async {
            self.count(&self.inbox).await == 0
        })
        .await;
    }

    /// The loop ends when it is told to, without an error.
    async fn stop(self) {
        self.stop.send_replace(true);
        self.running.await.unwrap().unwrap();
    }
}

async fn create_queue(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    attributes: &[(QueueAttributeName, String)],
) -> String {
    let mut create = sqs.create_queue().queue_name(name);
    for (name, value) in attributes {
        create = create.attributes(name.clone(), value);
    }
    create.send().await.unwrap().queue_url.unwrap()
}

/// A `Deployment Requested` as the bus delivers it (the stream publisher's event; the unit
/// tests of src/service/inbox.rs hold the fixture to the publisher's shape).
fn deployment_requested() -> Value {
    serde_json::from_str(include_str!(
        "../../events/data-plane-inbox-deployment-requested.json"
    ))
    .unwrap()
}

/// events/'s Task State Change (AWS's documented shape), of `cluster`.
fn task_state_change(cluster: &str) -> Value {
    let mut event: Value = serde_json::from_str(include_str!(
        "../../events/ecs-task-state-change-running.json"
    ))
    .unwrap();
    event["detail"]["clusterArn"] = json!(format!(
        "arn:aws:ecs:us-east-1:123456789012:cluster/{cluster}"
    ));
    event
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deployment_requested_is_taken_then_deleted() {
    let setup = Setup::start().await;
    let event = deployment_requested();
    setup.send(&event.to_string()).await;
    setup
        .until("the event is taken", || async {
            !setup.plane.taken().is_empty()
        })
        .await;
    setup.until_inbox_empty().await;
    assert_eq!(
        setup.plane.taken(),
        [ControlEvent::from_bus(&event).unwrap().unwrap()]
    );
    assert_eq!(setup.count(&setup.dead_letters).await, 0);
    assert_eq!(setup.plane.settled(), 0);
    setup.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_of_another_detail_type_is_deleted_untaken() {
    let setup = Setup::start().await;
    let mut report = deployment_requested();
    report["detail-type"] = json!("Deployment Status");
    report["source"] = json!("agent-hosting.data-plane");
    setup.send(&report.to_string()).await;
    setup.until_inbox_empty().await;
    // Deleted, not moved: the dead-letter queue is empty too.
    assert_eq!(setup.count(&setup.dead_letters).await, 0);
    assert!(setup.plane.taken().is_empty());
    assert_eq!(setup.plane.settled(), 0);
    setup.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_state_change_settles_for_this_cluster_only() {
    let setup = Setup::start().await;
    setup
        .send(&task_state_change("another-stack").to_string())
        .await;
    setup.until_inbox_empty().await;
    assert_eq!(setup.count(&setup.dead_letters).await, 0);
    assert_eq!(setup.plane.settled(), 0);

    setup.send(&task_state_change(CLUSTER).to_string()).await;
    setup
        .until("a reconcile pass", || async { setup.plane.settled() > 0 })
        .await;
    setup.until_inbox_empty().await;
    assert_eq!(setup.count(&setup.dead_letters).await, 0);
    assert_eq!(setup.plane.settled(), 1);
    assert!(setup.plane.taken().is_empty());
    setup.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_event_is_never_deleted_and_ends_in_the_dead_letter_queue() {
    let setup = Setup::start().await;
    let mut malformed = deployment_requested();
    malformed["detail"]
        .as_object_mut()
        .unwrap()
        .remove("manifest");
    let body = malformed.to_string();
    setup.send(&body).await;
    setup
        .until("the message is in the dead-letter queue", || async {
            setup.count(&setup.dead_letters).await == 1
        })
        .await;
    assert_eq!(setup.count(&setup.inbox).await, 0);
    let dead = setup
        .sqs
        .receive_message()
        .queue_url(&setup.dead_letters)
        .message_system_attribute_names(
            aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
        )
        .send()
        .await
        .unwrap();
    let [message] = dead.messages() else {
        panic!("one dead letter: {dead:?}");
    };
    assert_eq!(message.body(), Some(body.as_str()));
    let received: u32 = message.attributes().unwrap()
        [&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount]
        .parse()
        .unwrap();
    assert!(received >= MAX_RECEIVE_COUNT, "received {received} times");
    assert!(setup.plane.taken().is_empty());
    assert_eq!(setup.plane.settled(), 0);
    setup.stop().await;
}
