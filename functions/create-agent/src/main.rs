//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use lambda_http::{Error, run, service_fn};
use shared::config::Config;
use shared::store::dynamodb::DynamoStore;

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let config = Config::from_env()?;
    let client = shared::aws::dynamodb_client(config.dynamodb_endpoint.as_deref()).await;
    let store = DynamoStore::new(client, config.agents_table, config.accounts_table);
    let store = &store;
    run(service_fn(move |request| async move {
        Ok::<_, std::convert::Infallible>(create_agent::handle(store, store, request).await)
    }))
    .await
}
