//! dev-data-plane: see lib.rs. Started by `make run` and `make sam-local` (scripts/stack.sh).
//! This file only wires: the command line, the pieces built from it, and the loop.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

mod delivery;

use clap::Parser;
use delivery::{Delivery, Names};
use dev_data_plane::checkpoint::Checkpoint;
use dev_data_plane::functions;
use dev_data_plane::plane::{EngineKind, Plane, Settings};
use dev_data_plane::published::{open_reader, poll, publish};
use dev_data_plane::rules;
use dev_data_plane::stream::{self, BoxError};
use tokio::sync::mpsc;

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
    /// The image of every replica's holder on the Docker Engine (`scripts/local.sh
    /// holder-image` prints it).
    #[arg(long, env = "DATA_PLANE_HOLDER_IMAGE")]
    holder_image: Option<String>,
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
    let plane = Plane::start(&settings(&cli), Arc::new(delivery.clone())).await?;
    println!(
        "dev data plane {}: the stream publisher's events of {}'s stream ({} shards \
         resumed from {}), reports to {} after {} ms, {} at a time",
        plane.describe(),
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
    let stopped = plane.stopped();
    tokio::pin!(stopped);
    let mut pace = stream::Pace::default();
    let next_poll = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(next_poll);
    loop {
        tokio::select! {
            Some((shard, sequence)) = delivered.recv() => checkpoint.delivered(&shard, &sequence),
            signal = &mut stopped => {
                plane.shut_down(signal).await;
                return checkpoint.save().map_err(Into::into);
            }
            () = &mut next_poll => {
                let records = poll(&mut reader).await;
                let wait = pace.after_poll(records.len(), std::time::Instant::now());
                next_poll.as_mut().reset(tokio::time::Instant::now() + wait);
                for record in records {
                    let messages = plane.take(&publish(&record)).await;
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
                if let Err(error) = checkpoint.save() {
                    eprintln!("dev data plane: saving {}: {error}", cli.checkpoint.display());
                }
            }
        }
    }
}

/// What the data plane is started with, of the command line.
fn settings(cli: &Cli) -> Settings {
    Settings {
        engine: cli.engine,
        endpoint: cli.endpoint.clone(),
        agents_table: cli.agents_table.clone(),
        kms_endpoint: cli.kms_endpoint.clone(),
        stack: cli.stack.clone(),
        holder_image: cli.holder_image.clone(),
        ready_after: Duration::from_millis(cli.ready_after_ms),
    }
}
