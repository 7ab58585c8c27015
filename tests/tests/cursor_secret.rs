//! The paged functions' cursor key comes from the stack's secret, read at cold start from
//! Secrets Manager (moto's server here), never from their configuration.

use integration_tests::emulators::Moto;
use shared::cursor::CursorKey;
use shared::store::cursor_secret::cursor_key;

async fn secret(moto: &Moto, value: &str) -> (aws_sdk_secretsmanager::Client, String) {
    let client = shared::aws::secrets_manager_client(Some(&moto.endpoint)).unwrap();
    let created = client
        .create_secret()
        .name(format!("cursor-{}", uuid::Uuid::new_v4().simple()))
        .secret_string(value)
        .send()
        .await
        .unwrap();
    (client, created.arn.unwrap())
}

#[tokio::test]
async fn cursors_are_signed_with_the_key_of_the_stack_secret() {
    let moto = Moto::start();
    let value = "k".repeat(64);
    let (client, arn) = secret(&moto, &value).await;
    assert_eq!(
        cursor_key(&client, &arn).await.unwrap(),
        CursorKey::from_secret(&value).unwrap()
    );
    let (client, other) = secret(&moto, &"j".repeat(64)).await;
    assert_ne!(
        cursor_key(&client, &other).await.unwrap(),
        CursorKey::from_secret(&value).unwrap()
    );
}

#[tokio::test]
async fn a_short_or_missing_secret_stops_the_cold_start_without_showing_it() {
    let moto = Moto::start();
    let short = "planted-short-cursor-secret";
    let (client, arn) = secret(&moto, short).await;
    let error = cursor_key(&client, &arn).await.unwrap_err().to_string();
    assert!(error.contains("at least 32 bytes"), "{error}");
    assert!(!error.contains(short), "{error}");

    let error = cursor_key(&client, "no-such-secret")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("reading the cursor secret"), "{error}");
}
