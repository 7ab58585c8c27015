//! No line is lost (contract section 8): a batch the ingest function fails on reaches its failure
//! queue, from which the operator command replays it, idempotently. SQS is moto's server (an
//! emulator of the real API); the store is DynamoDB Local, killed in the middle of a batch and
//! started again. What runs on AWS and not here: Lambda's two retries of an asynchronous
//! invocation and its delivery of the destination record, whose documented shape
//! ([`destination_record`]) the test sends itself.

use std::time::Duration;

use agent_hosting_admin::replay::{ReplayReport, replay_ingest_failures};
use aws_lambda_events::cloudwatch_logs::LogData;
use integration_tests::bounded::{Bound, Try, until};
use integration_tests::emulators::{DiskDynamoDb, Moto};
use integration_tests::{
    LOGS_SETTINGS, TestStore, create_named_agent, log_data, read_logs, subscription_event,
};
use serde_json::{Value, json};
use shared::auth::ApiKey;

const RETENTION_DAYS: u32 = 30;

/// What Lambda sends a failure destination after the last retry of an asynchronous invocation.
fn destination_record(data: &LogData) -> String {
    json!({
        "version": "1.0",
        "timestamp": "2026-11-23T10:00:00.000Z",
        "requestContext": {
            "requestId": uuid::Uuid::new_v4().to_string(),
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:IngestLogsFunction:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3
        },
        "requestPayload": subscription_event(data),
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorType": "StoreError", "errorMessage": "the store is unavailable"}
    })
    .to_string()
}

async fn queue(sqs: &aws_sdk_sqs::Client) -> String {
    let name = format!("ingest-failures-{}", uuid::Uuid::new_v4().simple());
    let created = sqs.create_queue().queue_name(name).send().await.unwrap();
    created.queue_url.unwrap()
}

async fn send(sqs: &aws_sdk_sqs::Client, queue_url: &str, body: String) {
    sqs.send_message()
        .queue_url(queue_url)
        .message_body(body)
        .send()
        .await
        .unwrap();
}

async fn replay(store: &TestStore, sqs: &aws_sdk_sqs::Client, queue_url: &str) -> ReplayReport {
    replay_ingest_failures(
        sqs,
        queue_url,
        &store.store,
        &store.store,
        RETENTION_DAYS,
        100,
        5,
    )
    .await
    .unwrap()
}

async fn messages_left(sqs: &aws_sdk_sqs::Client, queue_url: &str) -> usize {
    let attributes = sqs
        .get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(
            aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        )
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default();
    attributes
        .values()
        .map(|count| count.parse::<usize>().unwrap())
        .sum()
}

/// Every line of the agent, oldest first, by cursor.
async fn all_lines(store: &TestStore, key: &ApiKey, agent: &str) -> Vec<Value> {
    let mut lines = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = Bound::new(100, Duration::from_secs(120))
        .start(format!("the last page of {agent}'s lines"));
    loop {
        pages.spend();
        let mut params = vec![("order", "asc".to_owned()), ("limit", "1000".to_owned())];
        if let Some(cursor) = &cursor {
            params.push(("cursor", cursor.clone()));
        }
        let (status, page) = read_logs(store, key, LOGS_SETTINGS, agent, &params).await;
        assert_eq!(status, 200, "{page}");
        lines.extend(page["logs"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return lines,
        }
    }
}

/// A batch of `count` lines of the agent's deployment, ids `{first..}`.
async fn batch(store: &TestStore, account: &str, count: usize) -> (ApiKey, LogData) {
    let (owner, key) = store.account_with_key(account).await;
    let agent = create_named_agent(store, &key, "bot").await;
    let deployment = agent["activeDeploymentId"].as_str().unwrap();
    let now = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
    let events: Vec<(String, i64, String)> = (0..count)
        .map(|i| {
            (
                format!("{i:08}"),
                now - 60_000 + i as i64,
                format!("line {i}"),
            )
        })
        .collect();
    let group = format!("/agent-hosting/{}/bot", owner.namespace);
    (
        key,
        log_data(&group, &format!("{deployment}/call-1"), &events),
    )
}

#[tokio::test]
async fn replay_stores_each_failed_batch_once_and_leaves_what_it_cannot() {
    let store = TestStore::new().await;
    let moto = Moto::start();
    let sqs = moto.sqs();
    let queue_url = queue(&sqs).await;
    let (key, data) = batch(&store, "acme", 60).await;
    // The same failed batch twice (a redelivery), and a message that is no destination record.
    send(&sqs, &queue_url, destination_record(&data)).await;
    send(&sqs, &queue_url, destination_record(&data)).await;
    send(&sqs, &queue_url, "{\"not\": \"a record\"}".to_owned()).await;

    let report = replay(&store, &sqs, &queue_url).await;
    assert_eq!(report.replayed, 2, "{report:?}");
    assert_eq!(
        report.ingested.stored, 120,
        "both replays wrote, the same items"
    );
    assert_eq!(report.not_replayed.len(), 1, "{report:?}");
    assert!(report.not_replayed[0].1.contains("not a failure record"));
    let lines = all_lines(&store, &key, "bot").await;
    assert_eq!(lines.len(), 60, "each line once");

    // Once more: nothing left to replay but the bad message, which stays; nothing changes.
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    let again = replay(&store, &sqs, &queue_url).await;
    assert_eq!(
        (again.replayed, again.not_replayed.len()),
        (0, 1),
        "{again:?}"
    );
    assert_eq!(all_lines(&store, &key, "bot").await, lines);
    assert_eq!(messages_left(&sqs, &queue_url).await, 1);
}

#[tokio::test]
async fn a_batch_failed_while_the_store_was_down_is_readable_exactly_once_after_replay() {
    let mut dynamodb = DiskDynamoDb::start();
    let store = TestStore::on(&dynamodb.endpoint).await;
    let moto = Moto::start();
    let sqs = moto.sqs();
    let queue_url = queue(&sqs).await;
    const LINES: usize = 5_000;
    let (key, data) = batch(&store, "acme", LINES).await;

    // The ingest function on the batch, and the store killed once some of it is written.
    let ingest = {
        let (data, dynamo) = (data.clone(), store.store.clone());
        tokio::spawn(async move {
            shared::logs::intake::ingest(
                &dynamo,
                &dynamo,
                &shared::logs::intake::KnownDeployments::default(),
                RETENTION_DAYS,
                data,
            )
            .await
        })
    };
    let bound = Bound::new(12_000, Duration::from_secs(60));
    let written = until("the batch's first lines in the store", bound, || async {
        let written = store
            .client
            .scan()
            .table_name(&store.logs_table)
            .select(aws_sdk_dynamodb::types::Select::Count)
            .send()
            .await
            .map(|output| output.count as usize);
        match written {
            Ok(written) if written > 0 => Try::Done(written),
            other => Try::Again {
                why: format!("{other:?}"),
                wait: Duration::from_millis(5),
            },
        }
    })
    .await;
    assert!(
        written < LINES,
        "killed before the batch was whole ({written})"
    );
    dynamodb.kill();
    let failed = ingest.await.unwrap();
    assert!(failed.is_err(), "the invocation fails: {failed:?}");

    // Lambda's retries fail as well (the store is still down); the record lands in the queue.
    send(&sqs, &queue_url, destination_record(&data)).await;
    dynamodb.restart();
    let report = replay(&store, &sqs, &queue_url).await;
    assert_eq!(
        (report.replayed, report.ingested.stored),
        (1, LINES),
        "{report:?}"
    );
    assert_eq!(messages_left(&sqs, &queue_url).await, 0);

    let lines = all_lines(&store, &key, "bot").await;
    let texts: Vec<String> = lines
        .iter()
        .map(|line| line["log"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (0..LINES).map(|i| format!("line {i}")).collect();
    assert_eq!(texts, expected, "every line exactly once, in order");
}
