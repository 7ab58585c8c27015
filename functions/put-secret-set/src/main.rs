//! Wiring only: logs, configuration and the DynamoDB and KMS clients once at cold start, then
//! the loop.

use lambda_http::{Error, service_fn};
use shared::config::{ACCOUNTS_TABLE, AGENTS_TABLE, KMS_ENDPOINT, SECRETS_KEY_ID};
use shared::lambda::run;
use shared::store::dynamodb::DynamoStore;
use shared::store::kms::KmsDataKeys;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, _) = DynamoStore::from_env(&[AGENTS_TABLE, ACCOUNTS_TABLE])?;
    let kms = shared::aws::kms_client(shared::config::optional(KMS_ENDPOINT).as_deref())?;
    let data_keys = KmsDataKeys::new(kms, shared::config::required(SECRETS_KEY_ID)?);
    let region = shared::config::region();
    let (store, data_keys, region) = (&store, &data_keys, region.as_str());
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(
            put_secret_set::handle(store, data_keys, store, region, request).await,
        )
    }))
    .await
}
