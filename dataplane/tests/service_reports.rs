//! The data plane's reports on AWS (`service::reports::AwsReports`) against moto's server:
//! `Deployment Status` and `Session Status` onto the agents bus as the status functions'
//! rules take them, a replica's lines into section 5's log group and stream, the group set
//! up for the ingest function, within PutLogEvents' bounds; lines a restarted data plane sends
//! again (read again from an adopted replica's start) stored once.

mod moto_server;

use data_plane::ports::{LineBatch, Reports, SessionStatus};
use data_plane::service::reports::{AwsReports, ReportSettings};
use moto_server::MotoServer;
use serde_json::Value;
use shared::agent::{DeploymentError, DeploymentState, StatusReport};
use shared::testing::requests::Requests;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

const BUS: &str = "agents";
const GROUP: &str = "/agent-hosting/tiny-ferret-1/voice-bot";

struct Stack {
    moto: MotoServer,
    reports: AwsReports,
    settings: ReportSettings,
    /// What the reports' CloudWatch Logs client sent.
    logs_requests: Requests,
}

/// moto with the agents bus and the ingest function; the reports on it, keeping lines
/// `retention_days`.
async fn stack(retention_days: u32) -> Stack {
    let moto = MotoServer::start();
    let config = moto.sdk_config();
    let eventbridge = aws_sdk_eventbridge::Client::new(&config);
    eventbridge
        .create_event_bus()
        .name(BUS)
        .send()
        .await
        .unwrap();
    let ingest_function_arn = moto.lambda_function("ingest-logs");
    let logs_requests = Requests::default();
    let logs = aws_sdk_cloudwatchlogs::Client::from_conf(
        aws_sdk_cloudwatchlogs::config::Builder::from(&config)
            .interceptor(logs_requests.clone())
            .build(),
    );
    let settings = ReportSettings {
        bus_name: BUS.into(),
        ingest_function_arn,
        log_retention_days: retention_days,
    };
    Stack {
        reports: AwsReports::new(eventbridge, logs, settings.clone()),
        moto,
        settings,
        logs_requests,
    }
}

impl Stack {
    /// The number of events of each PutLogEvents call the reports made since the last look.
    fn put_log_events_calls(&self) -> Vec<usize> {
        self.logs_requests
            .take()
            .iter()
            .filter(|sent| sent.header("x-amz-target") == Some("Logs_20140328.PutLogEvents"))
            .map(|sent| {
                let body: Value = serde_json::from_str(&sent.body).unwrap();
                body["logEvents"].as_array().map_or(0, Vec::len)
            })
            .collect()
    }

    /// The reports of a data plane started again (the service's task replaced): nothing
    /// ensured yet in its process.
    fn restarted(&self) -> AwsReports {
        let config = self.moto.sdk_config();
        AwsReports::new(
            aws_sdk_eventbridge::Client::new(&config),
            aws_sdk_cloudwatchlogs::Client::new(&config),
            self.settings.clone(),
        )
    }

    fn logs(&self) -> aws_sdk_cloudwatchlogs::Client {
        aws_sdk_cloudwatchlogs::Client::new(&self.moto.sdk_config())
    }

    /// An SQS queue the bus's rule for the data plane's reports delivers to.
    async fn reports_queue(&self) -> String {
        let config = self.moto.sdk_config();
        let sqs = aws_sdk_sqs::Client::new(&config);
        let url = sqs
            .create_queue()
            .queue_name("reports")
            .send()
            .await
            .unwrap();
        let url = url.queue_url().unwrap().to_owned();
        let arn = sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap();
        let arn =
            arn.attributes().unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn].clone();
        let eventbridge = aws_sdk_eventbridge::Client::new(&config);
        eventbridge
            .put_rule()
            .event_bus_name(BUS)
            .name("data-plane-reports")
            .event_pattern(r#"{"source": ["agent-hosting.data-plane"]}"#)
            .send()
            .await
            .unwrap();
        let target = aws_sdk_eventbridge::types::Target::builder()
            .id("queue")
            .arn(arn)
            .build()
            .unwrap();
        eventbridge
            .put_targets()
            .event_bus_name(BUS)
            .rule("data-plane-reports")
            .targets(target)
            .send()
            .await
            .unwrap();
        url
    }

    /// The one event the queue holds (a bounded wait).
    async fn delivered(&self, queue_url: &str) -> Value {
        let sqs = aws_sdk_sqs::Client::new(&self.moto.sdk_config());
        for _ in 0..5 {
            let received = sqs
                .receive_message()
                .queue_url(queue_url)
                .wait_time_seconds(1)
                .send()
                .await
                .unwrap();
            if let [message] = received.messages() {
                return serde_json::from_str(message.body().unwrap()).unwrap();
            }
            assert!(received.messages().is_empty(), "{received:?}");
        }
        panic!("no report reached the queue");
    }

    /// Every message of the stream, oldest first (pages followed, a bounded number).
    async fn stream_messages(&self, stream: &str) -> Vec<String> {
        let logs = self.logs();
        let mut messages = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..10 {
            let page = logs
                .get_log_events()
                .log_group_name(GROUP)
                .log_stream_name(stream)
                .start_from_head(true)
                .set_next_token(token.clone())
                .send()
                .await
                .unwrap();
            messages.extend(
                page.events()
                    .iter()
                    .map(|e| e.message().unwrap().to_owned()),
            );
            if page.events().is_empty() || page.next_forward_token() == token.as_deref() {
                return messages;
            }
            token = page.next_forward_token().map(str::to_owned);
        }
        panic!("the stream's pages did not end");
    }
}

/// `detail` is `sent`'s JSON but for `observedAt`, stamped when sent (at or after `before`).
fn assert_detail(detail: &Value, sent: &impl serde::Serialize, before: OffsetDateTime) {
    let mut detail = detail.clone();
    let mut sent = serde_json::to_value(sent).unwrap();
    let observed = detail["observedAt"].take();
    let observed = OffsetDateTime::parse(observed.as_str().unwrap(), &Rfc3339).unwrap();
    assert!(observed >= before, "{observed} before {before}");
    sent["observedAt"] = Value::Null;
    assert_eq!(detail, sent);
}

#[tokio::test]
async fn a_deployments_report_reaches_the_agents_bus_as_the_data_planes() {
    let stack = stack(30).await;
    let queue = stack.reports_queue().await;
    let report = StatusReport {
        namespace: "tiny-ferret-1".into(),
        agent: "voice-bot".into(),
        deployment_id: "dep-1".into(),
        state: DeploymentState::Failed,
        ready_replicas: 0,
        active_session_count: 0,
        restart_count: 2,
        replicas_started: 3,
        last_exit_code: Some(3),
        error: Some(DeploymentError {
            code: "ImagePullFailed".into(),
            message: "the image could not be pulled".into(),
        }),
        observed_at: OffsetDateTime::UNIX_EPOCH,
    };
    let before = OffsetDateTime::now_utc();
    stack.reports.deployment(report.clone()).await;
    let event = stack.delivered(&queue).await;
    assert_eq!(event["source"], "agent-hosting.data-plane");
    assert_eq!(event["detail-type"], "Deployment Status");
    assert_eq!(event["detail"]["state"], "failed");
    assert_detail(&event["detail"], &report, before);
}

#[tokio::test]
async fn a_sessions_report_reaches_the_agents_bus_as_the_data_planes() {
    let stack = stack(30).await;
    let queue = stack.reports_queue().await;
    let report = SessionStatus {
        namespace: "tiny-ferret-1".into(),
        agent: "voice-bot".into(),
        session_id: "sess-1".into(),
        state: "started",
        ws_url: None,
        daily_room: Some("https://acme.daily.co/room".into()),
        daily_token: Some("eyJ-room-token".into()),
        completion_status: None,
        bot_start_seconds: Some(0.25),
        cold_start: Some(true),
        observed_at: OffsetDateTime::UNIX_EPOCH,
    };
    let before = OffsetDateTime::now_utc();
    stack.reports.session(report.clone()).await;
    let event = stack.delivered(&queue).await;
    assert_eq!(event["source"], "agent-hosting.data-plane");
    assert_eq!(event["detail-type"], "Session Status");
    assert_eq!(event["detail"]["sessionId"], "sess-1");
    assert_eq!(event["detail"]["dailyToken"], "eyJ-room-token");
    assert_detail(&event["detail"], &report, before);
}

fn now_millis() -> i64 {
    i64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap()
}

/// A CRI line of `text` at Unix milliseconds `millis`, with a new event id.
fn cri(millis: i64, text: &str) -> (String, i64, String) {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .unwrap()
        .format(&Rfc3339)
        .unwrap();
    (
        format!("id-{millis}-{text}"),
        millis,
        format!("{at} stdout F {text}"),
    )
}

/// A batch of the session's (of the deployment's when `None`) lines.
fn lines_of(session_id: Option<&str>, events: Vec<(String, i64, String)>) -> LineBatch {
    LineBatch {
        namespace: "tiny-ferret-1".into(),
        agent: "voice-bot".into(),
        deployment_id: "dep-1".into(),
        session_id: session_id.map(str::to_owned),
        events,
    }
}

/// `count` CRI lines of the session from line `first`, line `i` at `start` + `i` milliseconds.
fn batch_from(start: i64, session_id: Option<&str>, first: usize, count: usize) -> LineBatch {
    let events = (first..first + count)
        .map(|i| cri(start + i as i64, &format!("line {i}  ünïcode\t")))
        .collect();
    lines_of(session_id, events)
}

/// `count` CRI lines of the session, a millisecond apart from now.
fn batch(session_id: Option<&str>, first: usize, count: usize) -> LineBatch {
    batch_from(now_millis(), session_id, first, count)
}

fn messages(batch: &LineBatch) -> Vec<String> {
    batch
        .events
        .iter()
        .map(|(_, _, message)| message.clone())
        .collect()
}

#[tokio::test]
async fn lines_land_in_their_sessions_stream_unchanged_and_in_order() {
    let stack = stack(30).await;
    let lines = batch(Some("sess-1"), 0, 3);
    stack.reports.lines(lines.clone()).await;
    assert_eq!(
        stack.stream_messages("dep-1/sess-1").await,
        messages(&lines)
    );
    let before_session = batch(None, 0, 2);
    stack.reports.lines(before_session.clone()).await;
    assert_eq!(
        stack.stream_messages("dep-1").await,
        messages(&before_session)
    );
}

#[tokio::test]
async fn the_group_keeps_lines_as_long_as_asked_and_is_subscribed_by_the_ingest_function() {
    // 31 days is no retention CloudWatch Logs takes: the next longer one is, 60.
    let stack = stack(31).await;
    stack.reports.lines(batch(None, 0, 1)).await;
    let logs = stack.logs();
    let groups = logs
        .describe_log_groups()
        .log_group_name_prefix(GROUP)
        .send()
        .await
        .unwrap();
    let [group] = groups.log_groups() else {
        panic!("{groups:?}");
    };
    assert_eq!(group.log_group_name(), Some(GROUP));
    assert_eq!(group.retention_in_days(), Some(60));
    let filters = logs
        .describe_subscription_filters()
        .log_group_name(GROUP)
        .send()
        .await
        .unwrap();
    let [filter] = filters.subscription_filters() else {
        panic!("{filters:?}");
    };
    assert_eq!(filter.filter_name(), Some("agent-hosting-ingest"));
    assert_eq!(filter.filter_pattern(), Some(""));
    assert_eq!(
        filter.destination_arn(),
        Some(stack.settings.ingest_function_arn.as_str())
    );
}

#[tokio::test]
async fn a_second_batch_to_the_same_stream_lands_after_the_first() {
    let stack = stack(30).await;
    let first = batch(Some("sess-1"), 0, 2);
    let second = batch(Some("sess-1"), 2, 2);
    stack.reports.lines(first.clone()).await;
    stack.reports.lines(second.clone()).await;
    let mut both = messages(&first);
    both.extend(messages(&second));
    assert_eq!(stack.stream_messages("dep-1/sess-1").await, both);
    assert_eq!(stack.put_log_events_calls(), vec![2, 2]);
}

#[tokio::test]
async fn lines_out_of_order_are_put_in_chronological_order() {
    let stack = stack(30).await;
    let mut lines = batch(Some("sess-1"), 0, 3);
    lines.events.reverse();
    stack.reports.lines(lines.clone()).await;
    let mut sorted = messages(&lines);
    sorted.reverse();
    assert_eq!(stack.stream_messages("dep-1/sess-1").await, sorted);
}

#[tokio::test]
async fn a_batch_beyond_ten_thousand_lines_is_split_into_calls_putlogevents_takes() {
    let stack = stack(30).await;
    let lines = batch(Some("sess-1"), 0, 10_001);
    stack.reports.lines(lines.clone()).await;
    assert_eq!(stack.put_log_events_calls(), vec![10_000, 1]);
    assert_eq!(
        stack.stream_messages("dep-1/sess-1").await,
        messages(&lines)
    );
}

#[tokio::test]
async fn a_restarted_data_plane_writes_into_the_group_and_stream_an_earlier_one_made() {
    let stack = stack(30).await;
    let first = batch(Some("sess-1"), 0, 2);
    stack.reports.lines(first.clone()).await;
    let second = batch(Some("sess-1"), 2, 2);
    stack.restarted().lines(second.clone()).await;
    let mut both = messages(&first);
    both.extend(messages(&second));
    assert_eq!(stack.stream_messages("dep-1/sess-1").await, both);
}

#[tokio::test]
async fn lines_after_their_group_was_deleted_land_in_the_group_made_again() {
    // An agent deleted (its group with it) and created again under its name, in one process.
    let stack = stack(30).await;
    stack.reports.lines(batch(Some("sess-1"), 0, 2)).await;
    let logs = stack.logs();
    logs.delete_log_group()
        .log_group_name(GROUP)
        .send()
        .await
        .unwrap();
    let again = batch(Some("sess-1"), 2, 2);
    stack.reports.lines(again.clone()).await;
    assert_eq!(
        stack.stream_messages("dep-1/sess-1").await,
        messages(&again)
    );
    let filters = logs
        .describe_subscription_filters()
        .log_group_name(GROUP)
        .send()
        .await
        .unwrap();
    assert_eq!(filters.subscription_filters().len(), 1, "{filters:?}");
}

#[tokio::test]
async fn a_restarted_data_plane_sending_shipped_lines_again_writes_only_the_new_ones_in_order() {
    // The restarted data plane's shipper reads the adopted replica's lines from its start.
    let stack = stack(30).await;
    let start = now_millis();
    stack
        .reports
        .lines(batch_from(start, Some("sess-1"), 0, 3))
        .await;
    let restarted = stack.restarted();
    let again = batch_from(start, Some("sess-1"), 0, 5);
    restarted.lines(again.clone()).await;
    assert_eq!(
        stack.stream_messages("dep-1/sess-1").await,
        messages(&again)
    );
    let later = batch_from(start, Some("sess-1"), 5, 2);
    restarted.lines(later.clone()).await;
    let mut all = messages(&again);
    all.extend(messages(&later));
    assert_eq!(stack.stream_messages("dep-1/sess-1").await, all);
}

#[tokio::test]
async fn a_batch_sharing_the_streams_last_millisecond_keeps_its_new_lines_of_that_millisecond() {
    // awslogs dates lines to the millisecond: several share one, some alike.
    let stack = stack(30).await;
    let t = now_millis();
    let shipped = vec![cri(t, "a"), cri(t + 1, "b"), cri(t + 1, "x")];
    stack.reports.lines(lines_of(Some("sess-1"), shipped)).await;
    let again = lines_of(
        Some("sess-1"),
        vec![
            cri(t, "a"),
            cri(t + 1, "b"),
            cri(t + 1, "x"),
            cri(t + 1, "x"),
            cri(t + 1, "c"),
            cri(t + 2, "d"),
        ],
    );
    stack.restarted().lines(again.clone()).await;
    assert_eq!(
        stack.stream_messages("dep-1/sess-1").await,
        messages(&again)
    );
}

#[tokio::test]
async fn a_replica_that_lagged_behind_another_in_the_deployments_stream_loses_no_line() {
    // Two replicas write `dep-1`: one's lines were shipped, more of them than the tail read
    // back holds; two of the other's, of the tail's time, not yet when the data plane stopped.
    // After the restart both are read again from their start.
    let stack = stack(30).await;
    let t = now_millis();
    let one = |i: i64| cri(t + 2 * i, &format!("one {i}"));
    let shipped = 1_010;
    let one_shipped: Vec<_> = (0..shipped).map(one).collect();
    stack.reports.lines(lines_of(None, one_shipped)).await;
    let restarted = stack.restarted();
    let two = vec![
        cri(t + 2 * 1_005 + 1, "two a"),
        cri(t + 2 * 1_007 + 1, "two b"),
    ];
    restarted.lines(lines_of(None, two.clone())).await;
    restarted
        .lines(lines_of(None, (0..=shipped).map(one).collect()))
        .await;
    let mut expected: Vec<_> = (0..=shipped).map(one).chain(two).collect();
    expected.sort_by_key(|(_, at, _)| *at);
    let expected: Vec<String> = expected
        .into_iter()
        .map(|(_, _, message)| message)
        .collect();
    let stored = stack.stream_messages("dep-1").await;
    assert!(
        stored == expected,
        "{} lines stored, {} expected; the last stored: {:?}",
        stored.len(),
        expected.len(),
        &stored[stored.len().saturating_sub(8)..]
    );
}

#[tokio::test]
async fn a_restarted_data_plane_sending_more_lines_again_than_the_tail_holds_stores_none_twice() {
    // More shipped lines than the tail read back: those older than it are taken as stored.
    let stack = stack(30).await;
    let start = now_millis();
    let shipped = 1_500;
    stack
        .reports
        .lines(batch_from(start, Some("sess-1"), 0, shipped))
        .await;
    let again = batch_from(start, Some("sess-1"), 0, shipped + 1);
    stack.restarted().lines(again.clone()).await;
    let stored = stack.stream_messages("dep-1/sess-1").await;
    assert!(
        stored == messages(&again),
        "{} lines stored, {} sent",
        stored.len(),
        again.events.len()
    );
}
