//! Wiring only: logs, configuration, the cursor key and the DynamoDB client once at cold start,
//! then the loop.

use lambda_http::{Error, service_fn};
use shared::config::{ACCOUNTS_TABLE, AGENTS_TABLE};
use shared::lambda::run;
use shared::store::dynamodb::DynamoStore;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, _) = DynamoStore::from_env(&[AGENTS_TABLE, ACCOUNTS_TABLE])?;
    let cursor_key = shared::store::cursor_secret::cursor_key_from_env().await?;
    let region = shared::config::region();
    let (store, cursor_key, region) = (&store, &cursor_key, region.as_str());
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(
            list_secret_sets::handle(store, store, cursor_key, region, request).await,
        )
    }))
    .await
}
