//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use aws_lambda_events::cloudwatch_logs::LogsEvent;
use ingest_logs::KnownAgents;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::config::{AGENTS_TABLE, Config, LOGS_TABLE};
use shared::store::DisplayErrorContext;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, and init starts no worker threads (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let config = Config::from_env(&[AGENTS_TABLE, LOGS_TABLE])?;
    let retention_days = config.log_retention_days;
    let client = shared::aws::dynamodb_client(config.dynamodb_endpoint.as_deref())?;
    let store = DynamoStore::new(client, config.tables);
    let known = KnownAgents::default();
    let (store, known) = (&store, &known);
    run(service_fn(move |event: LambdaEvent<LogsEvent>| async move {
        ingest_logs::ingest(store, known, retention_days, event.payload.aws_logs.data)
            .await
            .map_err(|error| {
                tracing::error!(error = %DisplayErrorContext(&error), "batch not stored; Lambda will retry it");
                Error::from(error)
            })
    }))
    .await
}
