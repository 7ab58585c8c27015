//! dev-data-plane: see lib.rs. Started by `make run` and `make sam-local` (scripts/stack.sh).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

mod delivery;

use clap::{Parser, ValueEnum};
use data_plane::docker::DockerEngine;
use data_plane::events::ControlEvent;
use data_plane::reconciler::{Config, DataPlane};
use delivery::{Delivery, Names};
use dev_data_plane::checkpoint::Checkpoint;
use dev_data_plane::cluster;
use dev_data_plane::functions;
use dev_data_plane::outbox::Scheduled;
use dev_data_plane::recovery;
use dev_data_plane::rules;
use dev_data_plane::secrets::SetReader;
use dev_data_plane::sessions;
use dev_data_plane::stream::{self, BoxError, StreamReader, StreamRecord};
use serde_json::Value;
use shared::store::dynamodb::DynamoStore;
use shared::store::kms::KmsKeyOpener;
use tokio::sync::mpsc;

/// What runs the agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EngineKind {
    /// The Docker Engine of this host (the simulation stands in when none answers).
    Docker,
    /// The simulation: no container runs; reports and lines are made up, and say so.
    Simulated,
}

/// The data plane on the Docker Engine, reporting through the stack's Invoke API.
type RealPlane = DataPlane<DockerEngine, DynamoStore, KmsKeyOpener, Delivery>;

/// What answers the control plane's events.
enum Plane {
    Simulated {
        sets: Option<Arc<SetReader>>,
        ready_after: Duration,
    },
    Real {
        plane: Arc<RealPlane>,
        engine: Arc<DockerEngine>,
    },
}

#[derive(Parser)]
#[command(
    name = "dev-data-plane",
    about = "The data plane for local runs: agents on the Docker Engine, or a simulation"
)]
struct Cli {
    #[arg(long, env = "DYNAMODB_ENDPOINT")]
    endpoint: String,
    #[arg(long, env = "AGENTS_TABLE", default_value = "agents")]
    agents_table: String,
    /// Lambda's Invoke API of the stack (cargo lambda watch's port, or sam's start-lambda).
    #[arg(long)]
    invoke_url: String,
    #[arg(long, value_enum)]
    function_names: Names,
    /// How long a requested deployment takes to be ready.
    #[arg(long, default_value_t = 2000)]
    ready_after_ms: u64,
    /// Reports sent at once, at most; the rest wait their turn. cargo lambda watch stops
    /// answering every route once one function has 100 invocations waiting (docs/testing.md), and a
    /// cluster's controller paces what it sends as well.
    #[arg(long, env = "DEV_MAX_IN_FLIGHT", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    max_in_flight: u16,
    /// Where the place in the stream is kept between runs (resumed at the next start).
    #[arg(long, default_value = ".local/dev-data-plane.checkpoint.json")]
    checkpoint: PathBuf,
    #[arg(long, default_value = "template.yaml")]
    template: String,
    /// KMS (moto's server locally) to open the secret sets each deployment names; without it,
    /// sets are not read.
    #[arg(long, env = "KMS_ENDPOINT")]
    kms_endpoint: Option<String>,
    /// The template's schedules run at least this often locally (the sweeper's minute, every
    /// 10 s by default, so that a session past its deadline is ended soon after); 0 runs none.
    #[arg(long, env = "DEV_SCHEDULE_EVERY_MS", default_value_t = 10_000)]
    schedule_every_ms: u64,
    /// What runs the agents: the Docker Engine (the simulation when none answers), or the
    /// simulation alone.
    #[arg(long, value_enum, env = "DATA_PLANE_ENGINE", default_value = "docker")]
    engine: EngineKind,
    /// The label of this stack's replicas (`run-$PORT` under make run): two stacks never touch
    /// each other's.
    #[arg(long, env = "DATA_PLANE_STACK", default_value = "run-local")]
    stack: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dev data plane: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn open_reader(streams: &stream::LocalStreams, table: &str) -> StreamReader {
    loop {
        match StreamReader::open(streams.clone(), table).await {
            Ok(reader) => return reader,
            Err(error) => {
                eprintln!("dev data plane: waiting for the {table} table's stream ({error})");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn run(cli: Cli) -> Result<(), BoxError> {
    let template = std::fs::read_to_string(&cli.template)?;
    let rules = rules::from_template(&template)?.rules;
    let streams = stream::LocalStreams::new(&cli.endpoint);
    let mut reader = open_reader(&streams, &cli.agents_table).await;
    let mut checkpoint = Checkpoint::load(&cli.checkpoint, reader.stream_arn());
    reader.resume_after(checkpoint.resume_points().clone());
    let delivery = Delivery::new(
        rules,
        functions::by_binary(&template, "ingest-logs")?,
        cli.invoke_url.clone(),
        cli.function_names,
        cli.max_in_flight,
    );
    let plane = plane(&cli, &delivery).await?;
    let what = match &plane {
        Plane::Simulated { .. } => "(a simulation)".to_owned(),
        Plane::Real { .. } => format!("on the Docker Engine (stack {})", cli.stack),
    };
    println!(
        "dev data plane {what}: the stream publisher's events of {}'s stream ({} shards \
         resumed from {}), reports to {} after {} ms, {} at a time",
        cli.agents_table,
        checkpoint.resume_points().len(),
        cli.checkpoint.display(),
        cli.invoke_url,
        cli.ready_after_ms,
        cli.max_in_flight
    );
    if cli.schedule_every_ms > 0 {
        let most = Duration::from_millis(cli.schedule_every_ms);
        for schedule in functions::schedules(&template)? {
            tokio::spawn(delivery.clone().run_schedule(schedule, most));
        }
    }
    // Each delivered (or abandoned) message says which record it was for.
    let (done, mut delivered) = mpsc::unbounded_channel::<(String, String)>();
    // Only the data plane on an engine has something to stop (its replicas) when asked to end.
    let stopped = async {
        match &plane {
            Plane::Real { .. } => stop_signal().await,
            Plane::Simulated { .. } => std::future::pending().await,
        }
    };
    tokio::pin!(stopped);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            Some((shard, sequence)) = delivered.recv() => checkpoint.delivered(&shard, &sequence),
            signal = &mut stopped => {
                if let Plane::Real { plane, engine } = &plane {
                    shut_down(plane, engine, &cli.stack, signal).await;
                }
                return checkpoint.save().map_err(Into::into);
            }
            _ = tick.tick() => {
                for record in poll(&mut reader).await {
                    let events = publish(&record);
                    match &plane {
                        Plane::Simulated { sets, ready_after } => {
                            let messages = simulate(sets.as_ref(), &events, *ready_after);
                            checkpoint.read(&record.shard, &record.sequence, messages.len());
                            for scheduled in messages {
                                let (delivery, done) = (delivery.clone(), done.clone());
                                let origin = (record.shard.clone(), record.sequence.clone());
                                tokio::spawn(async move {
                                    delivery.send(scheduled).await;
                                    let _ = done.send(origin);
                                });
                            }
                        }
                        Plane::Real { plane, .. } => {
                            take(plane, &events).await;
                            // Taken is delivered: the data plane reports on its own from here.
                            checkpoint.read(&record.shard, &record.sequence, 0);
                        }
                    }
                }
                if let Err(error) = checkpoint.save() {
                    eprintln!("dev data plane: saving {}: {error}", cli.checkpoint.display());
                }
            }
        }
    }
}

/// The data plane on the Docker Engine, running, when it is asked for and an engine answers;
/// else the simulation, said.
async fn plane(cli: &Cli, delivery: &Delivery) -> Result<Plane, BoxError> {
    if cli.engine == EngineKind::Docker {
        match DockerEngine::connect().await {
            Ok(engine) => {
                shared::telemetry::init();
                let SetReader { store, keys } = secret_stores(cli, cli.kms_endpoint.as_deref())?;
                let engine = Arc::new(engine);
                let recovered = recover(cli, &store).await?;
                let plane = DataPlane::new(
                    Config::for_stack(cli.stack.clone()),
                    engine.clone(),
                    store,
                    keys,
                    Arc::new(delivery.clone()),
                );
                for event in recovered {
                    plane.take(event).await;
                }
                tokio::spawn(plane.clone().run());
                return Ok(Plane::Real { plane, engine });
            }
            Err(error) => println!(
                "dev data plane: no Docker Engine answers ({error}): falling back to the \
                 simulation (spec.deploymentMode: simulated)"
            ),
        }
    }
    Ok(Plane::Simulated {
        sets: set_reader(cli)?.map(Arc::new),
        ready_after: Duration::from_millis(cli.ready_after_ms),
    })
}

/// What should run, read from the agents table: the stream resumes after its checkpoint, so
/// the deployments requested before this start are not delivered again.
async fn recover(cli: &Cli, store: &DynamoStore) -> Result<Vec<ControlEvent>, BoxError> {
    let dynamodb = shared::aws::dynamodb_client(Some(&cli.endpoint))?;
    let events = recovery::what_should_run(&dynamodb, &cli.agents_table, store).await?;
    tracing::info!(
        deployments = events.len(),
        table = %cli.agents_table,
        "deployments recovered from the agents table"
    );
    Ok(events)
}

/// Stops every replica of the stack, then removes the networks they leave unused.
async fn shut_down(plane: &RealPlane, engine: &DockerEngine, stack: &str, signal: &str) {
    println!("dev data plane: {signal}: stopping every replica of stack {stack}");
    plane.shutdown().await;
    if let Err(error) = engine.prune_networks(stack).await {
        eprintln!("dev data plane: removing stack {stack}'s networks: {error}");
    }
}

/// What the simulated cluster sends for a record's events (and the sets it would receive).
fn simulate(
    sets: Option<&Arc<SetReader>>,
    events: &[Value],
    ready_after: Duration,
) -> Vec<Scheduled> {
    if let Some(sets) = sets {
        receive_sets(sets, events);
    }
    events
        .iter()
        .flat_map(|event| {
            let mut answers = cluster::respond(event, ready_after);
            answers.extend(sessions::respond(event));
            answers
        })
        .collect()
}

/// Hands each event the data plane takes to it (each returns promptly).
async fn take(plane: &Arc<RealPlane>, events: &[Value]) {
    for event in events {
        match ControlEvent::from_bus(event) {
            Ok(Some(event)) => plane.take(event).await,
            Ok(None) => {}
            Err(error) => eprintln!("dev data plane: an event the data plane cannot take: {error}"),
        }
    }
}

/// SIGINT or SIGTERM, named; never when they cannot be listened for (said).
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (terminate, interrupt) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(terminate), Ok(interrupt)) => (terminate, interrupt),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!(
                "dev data plane: cannot listen for SIGTERM and SIGINT ({error}); replicas are left to the stack's reaper"
            );
            return std::future::pending().await;
        }
    };
    let (mut terminate, mut interrupt) = (terminate, interrupt);
    tokio::select! {
        _ = terminate.recv() => "SIGTERM",
        _ = interrupt.recv() => "SIGINT",
    }
}

/// The records written since the last poll; none while the store is away (they are still
/// there when it is back).
async fn poll(reader: &mut StreamReader) -> Vec<StreamRecord> {
    reader.poll().await.unwrap_or_else(|error| {
        eprintln!("dev data plane: reading the stream: {error}");
        Vec::new()
    })
}

/// The event the stream publisher puts on the bus for a record (its own code), said; a record
/// no event can be made of is said too, and passed, as the publisher passes it.
fn publish(record: &StreamRecord) -> Vec<Value> {
    match shared::stream_events::event_of(&record.record) {
        Ok(Some(event)) => {
            let detail = &event.detail;
            let text = |name: &str| detail[name].as_str().unwrap_or_default().to_owned();
            let subject = match detail.get("sessionId") {
                Some(_) => format!("session {}", text("sessionId")),
                None => format!("deployment {}", text("deploymentId")),
            };
            println!(
                "dev data plane: {} {}/{} {subject}",
                event.detail_type.as_str(),
                text("namespace"),
                text("agentName"),
            );
            vec![rules::as_delivered(&event)]
        }
        Ok(None) => Vec::new(),
        Err(error) => {
            eprintln!("dev data plane: stream record {}: {error}", record.sequence);
            Vec::new()
        }
    }
}

/// The secret sets reader, when a KMS is given: the agents table's client and KMS's.
fn set_reader(cli: &Cli) -> Result<Option<SetReader>, BoxError> {
    let Some(kms_endpoint) = &cli.kms_endpoint else {
        println!("dev data plane: no KMS_ENDPOINT, secret sets are not read");
        return Ok(None);
    };
    secret_stores(cli, Some(kms_endpoint)).map(Some)
}

/// Where secret sets are read from: the agents table, and KMS (AWS's own when no endpoint).
fn secret_stores(cli: &Cli, kms_endpoint: Option<&str>) -> Result<SetReader, BoxError> {
    let dynamodb = shared::aws::dynamodb_client(Some(&cli.endpoint))?;
    let tables = shared::config::TableNames {
        agents: cli.agents_table.clone(),
        accounts: String::new(),
        logs: String::new(),
    };
    Ok(SetReader {
        store: DynamoStore::new(dynamodb, tables),
        keys: KmsKeyOpener::new(shared::aws::kms_client(kms_endpoint)?),
    })
}

/// Reads the sets each requested deployment names, beside its reports (which do not wait).
fn receive_sets(sets: &Arc<SetReader>, events: &[Value]) {
    for event in events {
        if event["detail-type"] != "Deployment Requested" {
            continue;
        }
        let (sets, event) = (sets.clone(), event.clone());
        tokio::spawn(async move {
            for line in sets.receive(&event).await {
                println!("dev data plane: {line}");
            }
        });
    }
}
