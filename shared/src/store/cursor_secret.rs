//! The key cursors are signed with, from the stack's secret (template.yaml's `CursorSecret`),
//! read once at cold start with GetSecretValue. Not from the environment: a function's
//! environment is part of its configuration, which anyone allowed
//! `lambda:GetFunctionConfiguration` reads. What the request adds to a cold start is in
//! docs/performance.md.

use aws_sdk_secretsmanager::error::DisplayErrorContext;
use zeroize::Zeroizing;

use crate::config::{CURSOR_SECRET_ID, SECRETS_MANAGER_ENDPOINT, optional, required};
use crate::cursor::CursorKey;
use crate::error::BoxError;

/// The cursor key of the secret `CURSOR_SECRET_ID` names, on Secrets Manager or the emulator at
/// `SECRETS_MANAGER_ENDPOINT`. Any failure stops the cold start: a function that cannot sign
/// cursors must not answer pages.
pub async fn cursor_key_from_env() -> Result<CursorKey, BoxError> {
    let secret_id = required(CURSOR_SECRET_ID)?;
    let client = crate::aws::secrets_manager_client(optional(SECRETS_MANAGER_ENDPOINT).as_deref())?;
    cursor_key(&client, &secret_id).await
}

/// The cursor key of the secret `secret_id`.
pub async fn cursor_key(
    client: &aws_sdk_secretsmanager::Client,
    secret_id: &str,
) -> Result<CursorKey, BoxError> {
    let output = client
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|error| format!("reading the cursor secret: {}", DisplayErrorContext(error)))?;
    let secret = Zeroizing::new(
        output
            .secret_string
            .ok_or("the cursor secret holds no string")?,
    );
    Ok(CursorKey::from_secret(&secret)?)
}
