//! Wiring only: logs, configuration and the DynamoDB client once at cold start, then the loop.

use aws_lambda_events::cloudwatch_logs::LogsEvent;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use shared::config::{AGENTS_TABLE, LOGS_TABLE};
use shared::error::DisplayErrorContext;
use shared::logs::intake::KnownDeployments;
use shared::store::dynamodb::DynamoStore;

// Lambda sends an execution environment one event at a time (`run`, not `run_concurrent`): one
// thread serves it, and init starts no worker threads (docs/performance.md).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::telemetry::init();
    let (store, config) = DynamoStore::from_env(&[AGENTS_TABLE, LOGS_TABLE])?;
    let retention_days = config.log_retention_days;
    let known = KnownDeployments::default();
    let (store, known) = (&store, &known);
    run(service_fn(move |event: LambdaEvent<LogsEvent>| async move {
        ingest_logs::handle(store, store, known, retention_days, event.payload)
            .await
            .map_err(|error| {
                tracing::error!(error = %DisplayErrorContext(&error), "batch not stored; Lambda will retry it");
                Error::from(error)
            })
    }))
    .await
}
