//! Store faults DynamoDB Local cannot produce, injected with aws-smithy-mocks: each becomes the
//! contract's status (409 for a failed condition, 503 for throttling, 500 for the rest), never
//! a panic or an error the runtime would see.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ErrorMetadata;
use aws_sdk_dynamodb::operation::get_item::GetItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::CancellationReason;
use aws_sdk_dynamodb::types::error::{
    InternalServerError, ProvisionedThroughputExceededException, TransactionCanceledException,
};
use aws_smithy_mocks::{RuleMode, mock, mock_client};
use shared::ApiError;
use shared::StoreError;
use shared::agent::{AgentRecord, AgentStore, ConfigChanges, CreateOutcome};
use shared::auth::{ApiKey, KeyStore, Principal};
use shared::config::TableNames;
use shared::store::dynamodb::DynamoStore;

fn store(client: Client) -> DynamoStore {
    DynamoStore::new(
        client,
        TableNames {
            agents: "agents".into(),
            accounts: "accounts".into(),
            logs: "logs".into(),
        },
    )
}

fn owner() -> Principal {
    Principal {
        account_id: "acme".into(),
        namespace: "ns".into(),
    }
}

fn agent() -> AgentRecord {
    let (name, config) =
        ConfigChanges::from_json(serde_json::json!({"serviceName": "bot", "image": "agent"}))
            .unwrap()
            .into_new_agent()
            .unwrap();
    AgentRecord::new(&owner(), &name, config, "2026-11-22T00:00:00.000Z")
}

fn cancelled(codes: &[&str]) -> TransactWriteItemsError {
    let reasons = codes
        .iter()
        .map(|code| CancellationReason::builder().code(*code).build())
        .collect();
    TransactWriteItemsError::TransactionCanceledException(
        TransactionCanceledException::builder()
            .set_cancellation_reasons(Some(reasons))
            .meta(
                ErrorMetadata::builder()
                    .code("TransactionCanceledException")
                    .build(),
            )
            .build(),
    )
}

#[tokio::test]
async fn a_failed_name_condition_is_name_taken() {
    let rule = mock!(Client::transact_write_items)
        .then_error(|| cancelled(&["ConditionalCheckFailed", "None"]));
    let store = store(mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, &[&rule]));
    assert_eq!(
        store.create_agent(&agent(), None).await.unwrap(),
        CreateOutcome::NameTaken
    );
}

#[tokio::test]
async fn a_lost_race_is_retried_then_succeeds() {
    let rule = mock!(Client::transact_write_items)
        .sequence()
        .error(|| cancelled(&["TransactionConflict", "None"]))
        .times(2)
        .output(|| {
            aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsOutput::builder()
                .build()
        })
        .build();
    let store = store(mock_client!(
        aws_sdk_dynamodb,
        RuleMode::Sequential,
        &[&rule]
    ));
    assert_eq!(
        store.create_agent(&agent(), None).await.unwrap(),
        CreateOutcome::Created
    );
    assert_eq!(rule.num_calls(), 3);
}

/// Paused time: the races' waits pass at once, and so does their deadline.
#[tokio::test(start_paused = true)]
async fn a_race_lost_every_time_is_a_503() {
    let rule = mock!(Client::transact_write_items)
        .then_error(|| cancelled(&["TransactionConflict", "None"]));
    let store = store(mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, &[&rule]));
    assert_eq!(
        store.create_agent(&agent(), None).await.unwrap(),
        CreateOutcome::Raced
    );
    let changes =
        ConfigChanges::from_json(serde_json::json!({"serviceName": "bot", "image": "agent"}))
            .unwrap();
    let error = shared::agent::lifecycle::create(&store, &owner(), changes, None)
        .await
        .unwrap_err();
    assert_eq!(error.status(), 503, "{error:?}");
}

#[tokio::test]
async fn throttling_is_a_503_with_retry_after() {
    let rule = mock!(Client::transact_write_items).then_error(|| {
        TransactWriteItemsError::ProvisionedThroughputExceededException(
            ProvisionedThroughputExceededException::builder()
                .message("Rate of requests exceeds the allowed throughput for table agents-prod")
                .meta(
                    ErrorMetadata::builder()
                        .code("ProvisionedThroughputExceededException")
                        .build(),
                )
                .build(),
        )
    });
    let store = store(mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, &[&rule]));
    let error = ApiError::from(store.create_agent(&agent(), None).await.unwrap_err());
    assert_eq!(error.status().as_u16(), 503);
    assert_eq!(error.retry_after(), Some(1));
    let response = shared::http::error_response(&error);
    assert_eq!(response.headers()["retry-after"], "1");
    let body = String::from_utf8(response.body().to_vec()).unwrap();
    assert!(
        !body.contains("agents-prod") && !body.contains("Rate of requests"),
        "{body}"
    );
}

#[tokio::test]
async fn an_unexpected_service_error_is_a_500_without_its_text() {
    let rule = mock!(Client::get_item).then_error(|| {
        GetItemError::InternalServerError(
            InternalServerError::builder()
                .message("internal failure on table accounts-prod")
                .meta(ErrorMetadata::builder().code("InternalServerError").build())
                .build(),
        )
    });
    let store = store(mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, &[&rule]));
    let error = store
        .find_key(&ApiKey::generate().hash())
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Unexpected(_)), "{error:?}");
    let error = ApiError::from(error);
    assert_eq!(error.status().as_u16(), 500);
    let response = shared::http::error_response(&error);
    let body = String::from_utf8(response.body().to_vec()).unwrap();
    assert_eq!(
        body,
        r#"{"error":"Internal server error","code":"INTERNAL_SERVER_ERROR"}"#
    );
}

/// A create is one DynamoDB request (a TransactWriteItems), with or without an idempotency
/// record: the mock answers nothing else, so any other call would fail the create.
#[tokio::test]
async fn a_create_is_one_request() {
    for idempotency in [
        None,
        Some(shared::idempotency::IdempotencyRecord {
            key_digest: "0".repeat(64),
            fingerprint: "f".into(),
            status: 201,
            body: "{}".into(),
            created_at: "2026-11-22T00:00:00.000Z".into(),
            expires_at: 1_800_000_000,
            agent: "bot".into(),
        }),
    ] {
        let rule = mock!(Client::transact_write_items).then_output(|| {
            aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsOutput::builder()
                .build()
        });
        let store = store(mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, &[&rule]));
        assert_eq!(
            store
                .create_agent(&agent(), idempotency.as_ref())
                .await
                .unwrap(),
            CreateOutcome::Created
        );
        assert_eq!(rule.num_calls(), 1);
    }
}

/// A retry with a used Idempotency-Key is answered from the failed condition's own item: still
/// one request, no read after it.
#[tokio::test]
async fn a_used_key_is_found_in_the_cancellation_itself() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let stored = std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S("NS#ns".into())),
        (
            "sk".to_owned(),
            AttributeValue::S(format!("IDEMPOTENCY#{}", "0".repeat(64))),
        ),
        ("fingerprint".to_owned(), AttributeValue::S("f".into())),
        ("status".to_owned(), AttributeValue::N("201".into())),
        (
            "body".to_owned(),
            AttributeValue::S("{\"name\":\"bot\"}".into()),
        ),
        (
            "createdAt".to_owned(),
            AttributeValue::S("2026-11-22T00:00:00.000Z".into()),
        ),
        (
            "expiresAt".to_owned(),
            AttributeValue::N("1800000000".into()),
        ),
    ]);
    let rule = mock!(Client::transact_write_items).then_error(move || {
        let reasons = vec![
            CancellationReason::builder()
                .code("ConditionalCheckFailed")
                .build(),
            CancellationReason::builder().code("None").build(),
            CancellationReason::builder()
                .code("ConditionalCheckFailed")
                .set_item(Some(stored.clone()))
                .build(),
        ];
        TransactWriteItemsError::TransactionCanceledException(
            TransactionCanceledException::builder()
                .set_cancellation_reasons(Some(reasons))
                .meta(
                    ErrorMetadata::builder()
                        .code("TransactionCanceledException")
                        .build(),
                )
                .build(),
        )
    });
    let store = store(mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, &[&rule]));
    let record = shared::idempotency::IdempotencyRecord {
        key_digest: "0".repeat(64),
        fingerprint: "f".into(),
        status: 201,
        body: "{}".into(),
        created_at: "2026-11-22T00:00:00.000Z".into(),
        expires_at: 1_800_000_000,
        agent: "bot".into(),
    };
    match store.create_agent(&agent(), Some(&record)).await.unwrap() {
        CreateOutcome::KeyUsed(found) => {
            assert_eq!(found.body, "{\"name\":\"bot\"}");
            assert_eq!(found.status, 201);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(rule.num_calls(), 1);
}
