//! Store faults DynamoDB Local cannot produce, injected with aws-smithy-mocks: each becomes the
//! contract's status (409 for a failed condition; 503 with `Retry-After` for a store throttling,
//! timing out or failing on its side; 500 only for a request it refused, a bug), never a panic
//! or an error the runtime would see.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::ErrorMetadata;
use aws_sdk_dynamodb::operation::get_item::GetItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::CancellationReason;
use aws_sdk_dynamodb::types::error::{
    InternalServerError, ProvisionedThroughputExceededException, TransactionCanceledException,
};
use aws_smithy_mocks::{RuleMode, mock, mock_client};
use aws_smithy_types::body::SdkBody;
use shared::ApiError;
use shared::StoreError;
use shared::agent::{AgentRecord, AgentStore, ConfigChanges, CreateOutcome};
use shared::auth::{ApiKey, KeyStore, Principal};
use shared::config::TableNames;
use shared::manifest::DeploymentMode;
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
    AgentRecord::new(
        &owner(),
        &name,
        config,
        DeploymentMode::Simulated,
        "2026-11-22T00:00:00.000Z",
    )
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
    let error = shared::agent::lifecycle::create(
        &store,
        DeploymentMode::Simulated,
        &owner(),
        changes,
        None,
    )
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

/// DynamoDB's answer of `status` with the error `code`, as it sends it (awsJson 1.0).
fn answer(status: u16, code: &str) -> HttpResponse {
    let body = format!(
        r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{code}","message":"failure on table accounts-prod"}}"#
    );
    let mut response = HttpResponse::new(status.try_into().unwrap(), SdkBody::from(body));
    response
        .headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    response
}

/// A key check on a store answering `status` and `code` to every GetItem, the SDK retrying as
/// the functions' clients do (without the backoff's wait): the error, and how many requests
/// were sent.
async fn key_check_answered(status: u16, code: &'static str) -> (StoreError, usize) {
    let rule = mock!(Client::get_item).then_http_response(move || answer(status, code));
    let retry = shared::aws::retry_config().with_initial_backoff(std::time::Duration::ZERO);
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, &[&rule], |config| {
        config.retry_config(retry.clone())
    });
    let error = store(client)
        .find_key(&ApiKey::generate().hash())
        .await
        .unwrap_err();
    (error, rule.num_calls())
}

#[tokio::test]
async fn a_server_error_after_retries_is_a_503_with_retry_after_and_without_its_text() {
    // DynamoDB's InternalServerError, DynamoDB Local's InternalFailure, an unavailable endpoint.
    for (status, code) in [
        (500, "InternalServerError"),
        (500, "InternalFailure"),
        (503, "ServiceUnavailable"),
    ] {
        let (error, requests) = key_check_answered(status, code).await;
        assert!(
            matches!(error, StoreError::Unavailable(_)),
            "{code}: {error:?}"
        );
        assert_eq!(
            requests,
            shared::aws::MAX_ATTEMPTS as usize,
            "{code}: retried"
        );
        let response = shared::http::error_response(&ApiError::from(error));
        assert_eq!(response.status(), 503, "{code}");
        assert_eq!(response.headers()["retry-after"], "1");
        let body = String::from_utf8(response.body().to_vec()).unwrap();
        assert_eq!(
            body,
            r#"{"error":"The service is busy; retry after 1 second(s)","code":"SERVICE_UNAVAILABLE"}"#
        );
    }
}

#[tokio::test]
async fn a_write_that_meets_a_transaction_in_flight_is_a_503() {
    let (error, _) = key_check_answered(400, "TransactionConflictException").await;
    assert!(matches!(error, StoreError::Throttled(_)), "{error:?}");
    assert_eq!(ApiError::from(error).status().as_u16(), 503);
}

#[tokio::test]
async fn a_request_the_store_refuses_is_a_bug_a_500_without_its_text() {
    let (error, requests) = key_check_answered(400, "ValidationException").await;
    assert!(matches!(error, StoreError::Unexpected(_)), "{error:?}");
    assert_eq!(requests, 1, "not retried");
    let error = ApiError::from(error);
    assert_eq!(error.status().as_u16(), 500);
    let response = shared::http::error_response(&error);
    let body = String::from_utf8(response.body().to_vec()).unwrap();
    assert_eq!(
        body,
        r#"{"error":"Internal server error","code":"INTERNAL_SERVER_ERROR"}"#
    );
}

#[tokio::test]
async fn a_modeled_internal_server_error_is_a_503() {
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
    assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
}

#[tokio::test]
async fn a_transaction_cancelled_for_throttling_is_a_503() {
    for reason in ["ThrottlingError", "ProvisionedThroughputExceeded"] {
        let rule =
            mock!(Client::transact_write_items).then_error(move || cancelled(&["None", reason]));
        let store = store(mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, &[&rule]));
        let error = store.create_agent(&agent(), None).await.unwrap_err();
        assert!(
            matches!(error, StoreError::Throttled(_)),
            "{reason}: {error:?}"
        );
        assert_eq!(ApiError::from(error).retry_after(), Some(1));
    }
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
