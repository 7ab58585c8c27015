//! The data plane on AWS (issue 33; docs/operations.md, "The data plane on AWS"): one
//! long-running Fargate task runs the same reconciler as `make run` does, on the ECS engine,
//! fed by its SQS inbox. This file only wires: the settings (src/service/settings.rs), the AWS
//! clients, what should run (read from the agents table), the reconcile loop, the inbox until
//! SIGTERM or SIGINT.
//!
//! On SIGTERM (a deploy or scale-in of the service) no replica is stopped: the inbox stops
//! receiving (a batch in hand is finished and deleted), the plane halts, and the next task adopts
//! the running replicas and the sessions their holders hold.

use std::error::Error;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::timeout::TimeoutConfig;
use data_plane::ecs::{EcsClients, EcsEngine};
use data_plane::reconciler::{Config, DataPlane};
use data_plane::recovery;
use data_plane::service::inbox::Inbox;
use data_plane::service::reports::{AwsReports, ReportSettings};
use data_plane::service::settings::Settings;
use shared::config::TableNames;
use shared::store::dynamodb::DynamoStore;
use shared::store::kms::KmsKeyOpener;
use tokio::signal::unix::{Signal, SignalKind, signal};

type BoxError = Box<dyn Error + Send + Sync>;

/// The reconcile tick on ECS. Each pass is a ListTasks and a DescribeTasks per 100 tasks, under
/// ECS's per-account API rate limits shared with the rest of the account; a task's state change
/// already triggers a pass at once through the inbox (its Task State Change event), and
/// readiness is polled by each starting replica's own task, so the tick only bounds how late a
/// missed or delayed event is noticed: 5 s.
const ECS_TICK: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() -> ExitCode {
    // JSON lines, as the functions write them: awslogs keeps them whole, Logs Insights reads the fields.
    shared::telemetry::init_as(true);
    match serve().await {
        Ok(signal) => {
            tracing::info!(signal, "the data plane stopped; its replicas run on");
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(%error, "the data plane cannot go on");
            ExitCode::FAILURE
        }
    }
}

/// Runs until a stop signal (named) or a failure it cannot go on from.
async fn serve() -> Result<&'static str, BoxError> {
    let mut signals = Signals::listen()?;
    let settings = Settings::from_env()?;
    let aws = aws_config(&settings).await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&aws);
    let tables = TableNames {
        agents: settings.agents_table.clone(),
        accounts: String::new(),
        logs: String::new(),
    };
    let store = DynamoStore::new(dynamodb, tables);
    let keys = KmsKeyOpener::new(aws_sdk_kms::Client::new(&aws));
    let reports = Arc::new(AwsReports::new(
        aws_sdk_eventbridge::Client::new(&aws),
        aws_sdk_cloudwatchlogs::Client::new(&aws),
        ReportSettings {
            bus_name: settings.event_bus_name.clone(),
            ingest_function_arn: settings.ingest_function_arn.clone(),
            log_retention_days: settings.log_retention_days,
        },
    ));
    let engine = Arc::new(EcsEngine::new(EcsClients::new(&aws), settings.ecs_config()));
    let recovered = recovery::what_should_run(&store).await?;
    tracing::info!(
        deployments = recovered.len(),
        "deployments recovered from the agents table"
    );
    let config = Config {
        tick: ECS_TICK,
        ..Config::for_stack(settings.stack.clone())
    };
    let plane = DataPlane::new(config, engine, store, keys, reports);
    // What runs is adopted before any event of the inbox is taken (DataPlane::settle).
    for event in recovered {
        plane.take(event).await;
    }
    plane.settle().await;
    tokio::spawn(plane.clone().run());
    let inbox = Inbox::new(
        aws_sdk_sqs::Client::new(&aws),
        &settings.inbox_url,
        &settings.cluster,
    );
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let received = inbox
        .run(&plane, async move {
            let _ = stop.send(signals.next().await);
        })
        .await;
    // Never stop a replica: the next task adopts them.
    plane.halt();
    received?;
    Ok(stopped.await.unwrap_or("SIGTERM"))
}

/// One SDK configuration for every client: the default chains (the task role's credentials,
/// `AWS_REGION`, `AWS_ENDPOINT_URL` for tests), the TLS client the functions use, and time
/// bounds that leave the inbox's 20 s long poll room.
async fn aws_config(settings: &Settings) -> aws_config::SdkConfig {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").ok();
    let trust = shared::aws::trust(&settings.region, endpoint.as_deref());
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .operation_attempt_timeout(Duration::from_secs(30))
        .operation_timeout(Duration::from_secs(90))
        .build();
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(shared::aws::http_client(trust))
        .timeout_config(timeouts)
        .load()
        .await
}

/// SIGTERM (ECS stopping the task) and SIGINT, listened for from the start.
struct Signals {
    terminate: Signal,
    interrupt: Signal,
}

impl Signals {
    fn listen() -> Result<Self, BoxError> {
        Ok(Signals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        }
    }
}
