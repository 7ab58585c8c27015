//! The reconciler (contract section 12): the decisions, written once above any engine. It takes
//! the control plane's events, keeps each active deployment's warm reserve, hands sessions to
//! replicas, replaces a replica after its one session, and reports what it sees.
//!
//! - [`deployments`]: what should run; [`secrets`]: what a deployment's replicas receive;
//! - [`plan`]: the pure decision of what to start and stop;
//! - [`reconcile`]: the loop that lists the engine, polls readiness and does what the plan says;
//! - [`readiness`]: `/readyz` asked of starting replicas, and the readiness timeout;
//! - [`failures`]: backoff and the codes a deployment fails with;
//! - [`sessions`]: claims, hand-overs (to the replica's holder), outcomes and stops;
//! - [`adoption`]: replicas listed after a restart, and the sessions their holders hold;
//! - [`retirement`]: a deployment gone for good released from the engine (its secrets);
//! - [`state`]: what is held in memory (no table: the engine's labels, the holders and this).

mod adoption;
pub mod deployments;
pub mod failures;
pub mod plan;
mod readiness;
mod reconcile;
mod retirement;
pub mod secrets;
mod sessions;
mod state;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_holder::Checks;
use shared::agent::{DeploymentError, DeploymentState, StatusReport};
use shared::secrets::store::{DataKeyOpener, SecretStore};
use time::OffsetDateTime;

use crate::engine::{Engine, STOP_GRACE};
use crate::events::{AgentRef, ControlEvent};
use crate::logs::{LogLimit, Shipper};
use crate::ports::Reports;
use crate::replica::ReplicaId;
use deployments::{Requested, Runnable};
use state::State;

/// The data plane's timings and the stack whose replicas it owns.
#[derive(Debug, Clone)]
pub struct Config {
    /// The stack label of its replicas (locally `run-$PORT`).
    pub stack: String,
    /// How often the engine is listed and readiness polled.
    pub tick: Duration,
    /// How long a replica may take to answer `/readyz` 200 before it has failed.
    pub readiness_timeout: Duration,
    /// The backoff after a first failure, doubling up to `backoff_most`.
    pub backoff_first: Duration,
    pub backoff_most: Duration,
    /// How long a ready replica stays up before its deployment's failures in a row end (a
    /// replica ready for a moment between crashes is still a crash loop).
    pub stable_after: Duration,
    /// Between SIGTERM and SIGKILL when a replica is stopped.
    pub stop_grace: Duration,
    /// The bound of each replica's log rate.
    pub log_limit: LogLimit,
    /// How each replica's holder watches a busy agent.
    pub holder_checks: Checks,
}

impl Config {
    /// The contract's timings (section 12) for `stack`.
    pub fn for_stack(stack: impl Into<String>) -> Self {
        Config {
            stack: stack.into(),
            tick: Duration::from_millis(250),
            readiness_timeout: Duration::from_secs(120),
            backoff_first: Duration::from_secs(1),
            backoff_most: Duration::from_secs(60),
            stable_after: Duration::from_secs(60),
            stop_grace: STOP_GRACE,
            log_limit: LogLimit::default(),
            holder_checks: Checks::default(),
        }
    }
}

/// The data plane of one stack.
pub struct DataPlane<E: Engine, S, K, R: Reports> {
    config: Config,
    engine: Arc<E>,
    store: S,
    keys: K,
    reports: Arc<R>,
    shipper: Shipper<E, R>,
    state: Mutex<State>,
    /// Set by [`DataPlane::shutdown`]: nothing more is started.
    closed: AtomicBool,
    /// Set by [`DataPlane::halt`]: every task it spawned ends at its next await.
    halted: tokio::sync::watch::Sender<bool>,
}

impl<E, S, K, R> DataPlane<E, S, K, R>
where
    E: Engine,
    S: SecretStore + 'static,
    K: DataKeyOpener + 'static,
    R: Reports,
{
    pub fn new(config: Config, engine: Arc<E>, store: S, keys: K, reports: Arc<R>) -> Arc<Self> {
        Arc::new(DataPlane {
            shipper: Shipper::new(engine.clone(), reports.clone(), config.log_limit),
            config,
            engine,
            store,
            keys,
            reports,
            state: Mutex::default(),
            closed: AtomicBool::new(false),
            halted: tokio::sync::watch::Sender::new(false),
        })
    }

    /// Ends every task of this data plane (sessions waited for, stops, runs) without stopping
    /// a replica or reporting anything: what a killed process leaves behind. Tests restart a
    /// data plane over its replicas with it.
    pub fn halt(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.halted.send_replace(true);
        self.shipper.halt();
    }

    /// Runs `task` in a task of its own, ended by [`DataPlane::halt`].
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut halted = self.halted.subscribe();
        tokio::spawn(async move {
            tokio::select! {
                _ = halted.wait_for(|halted| *halted) => {}
                () = task => {}
            }
        });
    }

    /// Takes one of the control plane's events; returns promptly (sessions run in tasks).
    pub async fn take(self: &Arc<Self>, event: ControlEvent) {
        match event {
            ControlEvent::DeploymentRequested {
                agent,
                service_id,
                deployment_id,
                manifest,
            } => {
                let requested = Requested {
                    agent: &agent,
                    service_id: &service_id,
                    deployment_id: &deployment_id,
                    manifest: &manifest,
                };
                self.deployment_requested(requested).await;
            }
            ControlEvent::AgentDeleted { agent } => self.agent_deleted(&agent).await,
            ControlEvent::SessionRequested {
                agent,
                deployment_id,
                session_id,
                request,
            } => {
                self.session_requested(agent, deployment_id, session_id, request)
                    .await;
            }
            ControlEvent::SessionStopRequested { agent, session_id } => {
                self.session_stop_requested(&agent, &session_id).await;
            }
        }
    }

    /// One reconcile pass now. A data plane that starts over running replicas calls it after
    /// taking the deployments it recovered and before any other event: what runs is adopted
    /// first, so that a `Session Requested` delivered again after a restart finds its session
    /// held instead of claiming a second replica (which would end the first).
    pub async fn settle(self: &Arc<Self>) {
        self.reconcile().await;
    }

    /// The reconcile loop: every tick, the engine is listed and each deployment reconciled.
    pub async fn run(self: Arc<Self>) {
        let mut ticks = tokio::time::interval(self.config.tick);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            self.reconcile().await;
        }
    }

    /// Stops every replica of the stack, in parallel (the data plane is going away); the loop,
    /// if it still runs, starts nothing more.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let mut ids: Vec<ReplicaId> = self.lock().replicas.keys().cloned().collect();
        match self.engine.list(&self.config.stack).await {
            Ok(views) => ids.extend(views.into_iter().map(|view| view.id)),
            Err(error) => {
                tracing::warn!(%error, "listing the stack's replicas to stop them failed")
            }
        }
        ids.sort();
        ids.dedup();
        tracing::info!(replicas = ids.len(), "stopping every replica of the stack");
        let stops = ids.iter().map(|id| async move {
            if let Err(error) = self.engine.stop(id, self.config.stop_grace).await {
                tracing::warn!(replica = %id, %error, "stopping a replica failed");
            }
            self.shipper.forget(id);
        });
        futures_util::future::join_all(stops).await;
        self.lock().replicas.clear();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each change under the lock leaves the state whole; a panic elsewhere cannot tear it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn deployment_requested(self: &Arc<Self>, requested: Requested<'_>) {
        if !self.lock().deployments.is_new(requested.deployment_id) {
            tracing::debug!(
                deployment_id = requested.deployment_id,
                "a deployment known already"
            );
            return;
        }
        let received = secrets::receive(&self.store, &self.keys, requested.manifest).await;
        let runnable = received.and_then(|received| Runnable::new(requested.manifest, received));
        let error = runnable.as_ref().err().cloned();
        tracing::info!(
            namespace = %requested.agent.namespace,
            agent = %requested.agent.name,
            deployment_id = requested.deployment_id,
            runnable = error.is_none(),
            "deployment requested"
        );
        let (agent, deployment_id) = (requested.agent.clone(), requested.deployment_id.to_owned());
        self.lock().deployments.insert(requested, runnable);
        if let Some(error) = error {
            self.report_deployment(&agent, &deployment_id, DeploymentState::Failed, Some(error))
                .await;
        }
    }

    async fn agent_deleted(self: &Arc<Self>, agent: &AgentRef) {
        let (ids, sessions) = {
            let mut state = self.lock();
            let deployments = state.deployments.retire_agent(agent);
            state.retirements.agent_deleted(deployments.iter().cloned());
            // Every replica of the agent not already stopping, busy ones included.
            let ids: Vec<ReplicaId> = state
                .replicas
                .iter()
                .filter(|(_, replica)| deployments.contains(&replica.labels.deployment_id))
                .filter(|(_, replica)| replica.phase != state::Phase::Stopping)
                .map(|(id, _)| id.clone())
                .collect();
            let sessions: Vec<String> = state
                .sessions
                .iter()
                .filter(|(_, session)| session.agent == *agent)
                .map(|(id, _)| id.clone())
                .collect();
            for session in &sessions {
                state.end_session(session);
            }
            for id in &ids {
                state.condemn(id);
            }
            (ids, sessions.len())
        };
        tracing::info!(namespace = %agent.namespace, agent = %agent.name, replicas = ids.len(), sessions, "agent deleted: stopping its replicas");
        for id in ids {
            self.stop_replica(id);
        }
    }

    /// Stops and removes the replica in a task of its own; it leaves the map once gone.
    fn stop_replica(self: &Arc<Self>, id: ReplicaId) {
        let this = self.clone();
        self.spawn(async move {
            if let Err(error) = this.engine.stop(&id, this.config.stop_grace).await {
                // Still condemned: the next listing that shows it stops it again.
                tracing::warn!(replica = %id, %error, "stopping a replica failed");
            }
            this.shipper.forget(&id);
            this.lock().replicas.remove(&id);
        });
    }

    /// Sends a deployment's report with its ready replicas and sessions as they are now.
    /// Reports the deployment as last reported, with its figures now: a replica started
    /// changes `replicasStarted` between changes of state.
    async fn report_figures(&self, deployment_id: &str) {
        let last = {
            let state = self.lock();
            (state.deployments.get(deployment_id)).and_then(|deployment| {
                let (state, error) = deployment.health.last_reported()?;
                Some((deployment.agent.clone(), state, error))
            })
        };
        if let Some((agent, state, error)) = last {
            self.report_deployment(&agent, deployment_id, state, error)
                .await;
        }
    }

    async fn report_deployment(
        &self,
        agent: &AgentRef,
        deployment_id: &str,
        state: DeploymentState,
        error: Option<DeploymentError>,
    ) {
        let ((ready_replicas, active_session_count), health) = {
            let state = self.lock();
            let health = (state.deployments.get(deployment_id))
                .map(|deployment| deployment.health.figures())
                .unwrap_or_default();
            (state.ready_counts(deployment_id), health)
        };
        tracing::info!(namespace = %agent.namespace, agent = %agent.name, deployment_id, ?state, ready_replicas, restart_count = health.restart_count, replicas_started = health.replicas_started, last_exit_code = health.last_exit_code, code = error.as_ref().map(|error| error.code.as_str()), "deployment report");
        self.reports
            .deployment(StatusReport {
                namespace: agent.namespace.clone(),
                agent: agent.name.clone(),
                deployment_id: deployment_id.to_owned(),
                state,
                ready_replicas,
                active_session_count,
                restart_count: health.restart_count,
                replicas_started: health.replicas_started,
                last_exit_code: health.last_exit_code,
                error,
                observed_at: OffsetDateTime::now_utc(),
            })
            .await;
    }
}
