//! Which data plane answers the control plane's events: the data plane on the Docker Engine
//! when one is asked for and answers (it starts knowing what should run, read from the agents
//! table, and stops its replicas on SIGINT or SIGTERM), else the simulation, which answers each
//! event with what a cluster would send (and reads the sets it would receive).

use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use data_plane::docker::DockerEngine;
use data_plane::events::ControlEvent;
use data_plane::ports::Reports;
use data_plane::reconciler::{Config, DataPlane};
use serde_json::Value;
use shared::store::dynamodb::DynamoStore;
use shared::store::kms::KmsKeyOpener;

use crate::outbox::Scheduled;
use crate::secrets::{self, SetReader};
use crate::stream::BoxError;
use crate::{cluster, sessions};
use data_plane::recovery;

/// What runs the agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineKind {
    /// The Docker Engine of this host (the simulation stands in when none answers).
    Docker,
    /// The simulation: no container runs; reports and lines are made up, and say so.
    Simulated,
}

/// What the data plane is started with (the command line's).
pub struct Settings {
    pub engine: EngineKind,
    /// DynamoDB Local, where the agents table is.
    pub endpoint: String,
    pub agents_table: String,
    pub kms_endpoint: Option<String>,
    /// The label of this stack's replicas.
    pub stack: String,
    /// The image of every replica's holder (the Docker Engine needs one).
    pub holder_image: Option<String>,
    /// How long a simulated deployment takes to be ready.
    pub ready_after: Duration,
}

/// The data plane on the Docker Engine, reporting through `R`.
type RealPlane<R> = DataPlane<DockerEngine, DynamoStore, KmsKeyOpener, R>;

/// What answers the control plane's events.
pub enum Plane<R: Reports> {
    Simulated {
        sets: Option<Arc<SetReader>>,
        ready_after: Duration,
    },
    Real {
        plane: Arc<RealPlane<R>>,
        engine: Arc<DockerEngine>,
        stack: String,
    },
}

impl<R: Reports> Plane<R> {
    /// The data plane on the Docker Engine, running, when it is asked for and an engine
    /// answers; else the simulation, said.
    pub async fn start(settings: &Settings, reports: Arc<R>) -> Result<Self, BoxError> {
        match (settings.engine, &settings.holder_image) {
            (EngineKind::Docker, Some(holder_image)) => {
                let logs = data_plane::docker::log_socket(&settings.stack);
                match DockerEngine::connect(holder_image.as_str(), logs).await {
                    Ok(engine) => return Self::on_docker(settings, engine, reports).await,
                    Err(error) => println!(
                        "dev data plane: no Docker Engine answers ({error}): falling back to \
                         the simulation (spec.deploymentMode: simulated)"
                    ),
                }
            }
            (EngineKind::Docker, None) => println!(
                "dev data plane: no holder image (DATA_PLANE_HOLDER_IMAGE): falling back to the \
                 simulation (spec.deploymentMode: simulated)"
            ),
            (EngineKind::Simulated, _) => {}
        }
        Ok(Plane::Simulated {
            sets: secrets::set_reader(
                &settings.endpoint,
                &settings.agents_table,
                settings.kms_endpoint.as_deref(),
            )?
            .map(Arc::new),
            ready_after: settings.ready_after,
        })
    }

    /// The recovered deployments are taken, and what runs adopted, before the reconcile loop
    /// runs and before the stream is read.
    async fn on_docker(
        settings: &Settings,
        engine: DockerEngine,
        reports: Arc<R>,
    ) -> Result<Self, BoxError> {
        shared::telemetry::init();
        let SetReader { store, keys } = secrets::secret_stores(
            &settings.endpoint,
            &settings.agents_table,
            settings.kms_endpoint.as_deref(),
        )?;
        let engine = Arc::new(engine);
        let recovered = recover(settings, &store).await?;
        let plane = DataPlane::new(
            Config::for_stack(settings.stack.clone()),
            engine.clone(),
            store,
            keys,
            reports,
        );
        for event in recovered {
            plane.take(event).await;
        }
        plane.settle().await;
        tokio::spawn(plane.clone().run());
        let stack = settings.stack.clone();
        Ok(Plane::Real {
            plane,
            engine,
            stack,
        })
    }

    /// Which data plane this is, as the start line says it.
    pub fn describe(&self) -> String {
        match self {
            Plane::Simulated { .. } => "(a simulation)".to_owned(),
            Plane::Real { stack, .. } => format!("on the Docker Engine (stack {stack})"),
        }
    }

    /// Takes a record's events; what the simulation sends for them is returned (the data plane
    /// on an engine reports on its own, so a taken record is delivered).
    pub async fn take(&self, events: &[Value]) -> Vec<Scheduled> {
        match self {
            Plane::Simulated { sets, ready_after } => simulate(sets.as_ref(), events, *ready_after),
            Plane::Real { plane, .. } => {
                take(plane, events).await;
                Vec::new()
            }
        }
    }

    /// The signal to stop on, named; only the data plane on an engine has something to stop
    /// (its replicas), so the simulation never is.
    pub async fn stopped(&self) -> &'static str {
        match self {
            Plane::Real { .. } => stop_signal().await,
            Plane::Simulated { .. } => std::future::pending().await,
        }
    }

    /// Stops every replica of the stack, then removes the networks they leave unused.
    pub async fn shut_down(&self, signal: &str) {
        let Plane::Real {
            plane,
            engine,
            stack,
        } = self
        else {
            return;
        };
        println!("dev data plane: {signal}: stopping every replica of stack {stack}");
        plane.shutdown().await;
        if let Err(error) = engine.prune_networks(stack).await {
            eprintln!("dev data plane: removing stack {stack}'s networks: {error}");
        }
    }
}

/// What should run, read from the agents table: the stream resumes after its checkpoint, so
/// the deployments requested before this start are not delivered again.
async fn recover(settings: &Settings, store: &DynamoStore) -> Result<Vec<ControlEvent>, BoxError> {
    let events = recovery::what_should_run(store).await?;
    tracing::info!(
        deployments = events.len(),
        table = %settings.agents_table,
        "deployments recovered from the agents table"
    );
    Ok(events)
}

/// What the simulated cluster sends for a record's events (and the sets it would receive).
fn simulate(
    sets: Option<&Arc<SetReader>>,
    events: &[Value],
    ready_after: Duration,
) -> Vec<Scheduled> {
    if let Some(sets) = sets {
        secrets::receive_sets(sets, events);
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
async fn take<R: Reports>(plane: &Arc<RealPlane<R>>, events: &[Value]) {
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
