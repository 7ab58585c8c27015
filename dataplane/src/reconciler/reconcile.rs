//! One reconcile pass (every tick): the engine's listing folded into what the data plane holds
//! (replicas adopted, exits and losses noticed, strays stopped), readiness polled, waiting
//! sessions given ready replicas, then each deployment's plan done.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use shared::agent::DeploymentState;
use shared::secrets::store::{DataKeyOpener, SecretStore};

use super::DataPlane;
use super::adoption::Adoption;
use super::failures::{Failure, Stage};
use super::plan::{Bounds, Role, decide, decide_agent};
use super::state::{Phase, Replica};
use crate::engine::{Engine, RunError};
use crate::ports::Reports;
use crate::replica::{
    ExitReason, ReplicaId, ReplicaLabels, ReplicaSpec, ReplicaStatus, ReplicaView,
};

/// How many of a crashed replica's last lines a `CRASH_LOOP` report carries (then cut to 1 KiB).
const CRASH_LINES: usize = 20;

/// An Adopting replica whose holder never answered within the readiness timeout.
struct GaveUp;

/// A replica that is no longer running, and what it was doing.
struct Exit {
    id: ReplicaId,
    labels: ReplicaLabels,
    reason: ExitReason,
    phase: Phase,
}

impl<E, S, K, R> DataPlane<E, S, K, R>
where
    E: Engine,
    S: SecretStore + 'static,
    K: DataKeyOpener + 'static,
    R: Reports,
{
    pub(super) async fn reconcile(self: &Arc<Self>) {
        if self.is_closed() {
            return;
        }
        let listed_at = Instant::now();
        let views = match self.engine.list(&self.config.stack).await {
            Ok(views) => views,
            Err(error) => {
                tracing::warn!(%error, "listing the stack's replicas failed");
                return;
            }
        };
        let (exits, adoptions) = self.fold_listing(views, listed_at);
        for exit in exits {
            self.exited(exit).await;
        }
        // Before the plans: a replica adopted idle counts in the reserve, not beside it.
        self.adopt(adoptions).await;
        self.poll_readiness().await;
        self.settle_health().await;
        self.claim_waiting().await;
        self.apply_plans();
        // After the plans: what they stop is retired once a later listing no longer shows it.
        self.retire_gone();
    }

    /// Folds a listing into the state; the exits it shows, and the replicas of a known
    /// deployment the data plane did not start (it restarted), to adopt once their holder says
    /// what they hold. Others are stopped.
    fn fold_listing(
        self: &Arc<Self>,
        views: Vec<ReplicaView>,
        listed_at: Instant,
    ) -> (Vec<Exit>, Vec<Adoption>) {
        let now = Instant::now();
        let (mut exits, mut strays, mut adoptions) = (Vec::new(), Vec::new(), Vec::new());
        let mut unanswered = Vec::new();
        let mut guard = self.lock();
        let state = &mut *guard;
        let listed: HashSet<ReplicaId> = views.iter().map(|view| view.id.clone()).collect();
        state.listed = (views.iter())
            .map(|view| view.labels.deployment_id.clone())
            .collect();
        for view in views {
            if state.condemned.contains(&view.id) {
                // In the map while its stop runs; listed after it ended: the stop failed.
                if !state.replicas.contains_key(&view.id) {
                    strays.push((view.id, view.labels));
                }
                continue;
            }
            let deployment = state.deployments.get(&view.labels.deployment_id);
            let known = deployment.is_some();
            // While runs of its deployment are in flight, an unknown replica is presumed one of
            // them (the engine lists a container before `run` answers): its run adds it.
            let launching = deployment.is_some_and(|deployment| deployment.launching > 0);
            let Some(replica) = state.replicas.get_mut(&view.id) else {
                if launching {
                    continue;
                }
                let running = view.status == ReplicaStatus::Running;
                match (known, view.holder.clone()) {
                    // Exited ones too: its holder may still say how its session ended.
                    (true, Some(holder)) => {
                        tracing::info!(replica = %view.id, deployment_id = %view.labels.deployment_id, "adopting a replica: asking its holder what it holds");
                        adoptions.push(Adoption {
                            id: view.id.clone(),
                            holder,
                            exited: !running,
                        });
                        state
                            .replicas
                            .insert(view.id.clone(), Replica::adopting(view, now));
                    }
                    // Its holder has no address yet: Adopting (in the reserve) and asked at a
                    // later listing that shows one.
                    (true, None) if running => {
                        tracing::info!(replica = %view.id, deployment_id = %view.labels.deployment_id, "adopting a replica: its holder has no address yet");
                        state
                            .replicas
                            .insert(view.id.clone(), Replica::adopting(view, now));
                    }
                    _ => strays.push((view.id, view.labels)),
                }
                continue;
            };
            replica.address = view.address.or(replica.address);
            if view.holder.is_some() {
                replica.holder.clone_from(&view.holder);
            }
            if replica.phase == Phase::Adopting {
                match self.ask_again(&view, replica, now) {
                    Ok(adoption) => adoptions.extend(adoption),
                    Err(GaveUp) => unanswered.push(view.id),
                }
                continue;
            }
            if let ReplicaStatus::Exited(reason) = view.status
                && replica.phase != Phase::Stopping
            {
                exits.push(Exit {
                    id: view.id.clone(),
                    labels: replica.labels.clone(),
                    reason,
                    phase: replica.phase.clone(),
                });
            }
        }
        for (id, replica) in &state.replicas {
            let lost = !listed.contains(id)
                && replica.known_since < listed_at
                && !matches!(replica.phase, Phase::Stopping | Phase::Adopting);
            if lost {
                exits.push(Exit {
                    id: id.clone(),
                    labels: replica.labels.clone(),
                    reason: ExitReason::Lost,
                    phase: replica.phase.clone(),
                });
            }
        }
        // An Adopting replica no longer listed is gone, whatever it held: nothing to stop.
        state.replicas.retain(|id, replica| {
            listed.contains(id)
                || replica.known_since >= listed_at
                || replica.phase != Phase::Adopting
        });
        for exit in &exits {
            state.condemn(&exit.id);
        }
        unanswered.retain(|id| state.condemn(id));
        for (id, labels) in &strays {
            // Held as stopping until its stop ends, so that one stop runs at a time.
            state.condemned.insert(id.clone());
            let stopping = Replica {
                labels: labels.clone(),
                address: None,
                holder: None,
                phase: Phase::Stopping,
                known_since: now,
            };
            state.replicas.insert(id.clone(), stopping);
        }
        let replicas = &state.replicas;
        state
            .condemned
            .retain(|id| listed.contains(id) || replicas.contains_key(id));
        drop(guard);
        for id in unanswered {
            // Not the customer's failure (its holder is the platform's): nothing is reported.
            tracing::warn!(replica = %id, "its holder never said what it holds within the readiness timeout: stopping it");
            self.stop_replica(id);
        }
        for (stray, labels) in strays {
            tracing::info!(replica = %stray, deployment_id = %labels.deployment_id, "stopping a replica no deployment wants");
            self.stop_replica(stray);
        }
        (exits, adoptions)
    }

    /// A replica still Adopting at this listing (its holder has not said what it holds): asked
    /// again once its holder has an address, given up on once the readiness timeout has passed
    /// since it was first listed.
    fn ask_again(
        &self,
        view: &ReplicaView,
        replica: &Replica,
        now: Instant,
    ) -> Result<Option<Adoption>, GaveUp> {
        if now.duration_since(replica.known_since) > self.config.readiness_timeout {
            return Err(GaveUp);
        }
        Ok(replica.holder.clone().map(|holder| Adoption {
            id: view.id.clone(),
            holder,
            exited: view.status != ReplicaStatus::Running,
        }))
    }

    /// What a replica's exit means: a failure (before it was ready, or idle after it), or a
    /// session's end. An idle replica never exits on its own: its exit is a crash, counted
    /// toward `CRASH_LOOP` as one before readiness is.
    async fn exited(self: &Arc<Self>, exit: Exit) {
        tracing::info!(replica = %exit.id, deployment_id = %exit.labels.deployment_id, reason = %exit.reason, phase = ?exit.phase, "a replica exited");
        let stage = match exit.phase {
            Phase::Starting { .. } => Stage::Starting,
            Phase::Idle => Stage::Idle,
            Phase::Held { session_id } => {
                self.session_exited(&session_id, &exit.labels, &exit.reason)
                    .await;
                self.stop_replica(exit.id);
                return;
            }
            Phase::Stopping | Phase::Adopting => {
                self.stop_replica(exit.id);
                return;
            }
        };
        let failure = match exit.reason {
            ExitReason::Exited { code } => Failure::Crashed {
                stage,
                code: Some(code),
                last_lines: Vec::new(),
            },
            ExitReason::OomKilled => Failure::OomKilled {
                stage,
                memory_mib: self.memory_mib(&exit.labels.deployment_id),
            },
            ExitReason::Lost => Failure::Crashed {
                stage,
                code: None,
                last_lines: Vec::new(),
            },
            // Found after `run` returned (ECS): reported at once, as `run`'s own.
            ExitReason::PullFailed { message } => Failure::PullFailed { message },
        };
        // Stopped once its last lines are read.
        self.replica_failed(Some(exit.id), &exit.labels, failure);
    }

    fn memory_mib(&self, deployment_id: &str) -> u32 {
        self.lock()
            .deployments
            .get(deployment_id)
            .map_or(0, |deployment| deployment.memory_mib())
    }

    /// Counts a replica's failure against its deployment at once (so the backoff holds from
    /// this pass on); then, in a task, reports the deployment `failed` when this failure does
    /// (a crash with its last lines) and stops the replica.
    pub(super) fn replica_failed(
        self: &Arc<Self>,
        id: Option<ReplicaId>,
        labels: &ReplicaLabels,
        mut failure: Failure,
    ) {
        let config = &self.config;
        let counted = {
            let mut state = self.lock();
            state
                .deployments
                .get_mut(&labels.deployment_id)
                .map(|deployment| {
                    let reported = deployment.health.failed(
                        &failure,
                        Instant::now(),
                        config.backoff_first,
                        config.backoff_most,
                    );
                    (deployment.agent.clone(), reported)
                })
        };
        tracing::warn!(replica = ?id, deployment_id = %labels.deployment_id, code = failure.code(), "a replica failed");
        let this = self.clone();
        let deployment_id = labels.deployment_id.clone();
        self.spawn(async move {
            if let Some((agent, Some(failures))) = counted {
                if let (Failure::Crashed { last_lines, .. }, Some(id)) = (&mut failure, &id) {
                    *last_lines = this.shipper.last_lines(id, CRASH_LINES).await;
                }
                let error = failure.error(failures);
                if let Some(deployment) = this.lock().deployments.get_mut(&deployment_id) {
                    deployment.health.failed_with(error.clone());
                }
                this.report_deployment(
                    &agent,
                    &deployment_id,
                    DeploymentState::Failed,
                    Some(error),
                )
                .await;
            }
            if let Some(id) = id {
                this.stop_replica(id);
            }
        });
    }

    /// Does each deployment's plan: runs asked of the engine, replicas stopped.
    pub(super) fn apply_plans(self: &Arc<Self>) {
        let now = Instant::now();
        let (mut launches, mut stops) = (Vec::new(), Vec::new());
        {
            let mut state = self.lock();
            for (cap, deployments) in state.deployments.agents(now) {
                let planned: Vec<_> = (deployments.iter())
                    .map(|(id, bounds)| (*bounds, state.running(id)))
                    .collect();
                for ((id, _), decision) in deployments.iter().zip(decide_agent(cap, &planned)) {
                    if decision.start > 0
                        && state.retirements.may_start(id)
                        && let Some(deployment) = state.deployments.get_mut(id)
                    {
                        // A spec each: every replica's holder has a token of its own.
                        let (stack, checks) = (&self.config.stack, self.config.holder_checks);
                        let specs: Vec<_> = (0..decision.start)
                            .filter_map(|_| deployment.spec(stack, checks))
                            .collect();
                        deployment.launching += u32::try_from(specs.len()).unwrap_or(u32::MAX);
                        launches.extend(specs);
                    }
                    stops.extend(decision.stop);
                }
            }
            for id in state.unknown_deployments() {
                let gone = Bounds {
                    min_replicas: 0,
                    max_replicas: 0,
                    role: Role::Gone,
                    may_start: false,
                    proven: true,
                };
                stops.extend(decide(gone, &state.running(&id)).stop);
            }
            stops.retain(|id| state.condemn(id));
        }
        for spec in launches {
            self.launch(spec);
        }
        for id in stops {
            tracing::info!(replica = %id, "stopping a replica the plan does not keep");
            self.stop_replica(id);
        }
    }

    /// Runs one replica in a task of its own.
    fn launch(self: &Arc<Self>, spec: ReplicaSpec) {
        let this = self.clone();
        self.spawn(async move {
            let deployment_id = spec.labels.deployment_id.clone();
            tracing::info!(%deployment_id, image = %spec.image, "starting a replica");
            let result = this.engine.run(&spec).await;
            let wanted = {
                let mut state = this.lock();
                let deployment = state.deployments.get_mut(&deployment_id);
                let wanted = deployment.is_some() && !this.is_closed();
                if let Some(deployment) = deployment {
                    deployment.launching = deployment.launching.saturating_sub(1);
                    if result.is_ok() {
                        deployment.health.started();
                    }
                }
                if let Ok(id) = &result
                    && wanted
                    && !state.condemned.contains(id)
                {
                    let now = Instant::now();
                    state.replicas.entry(id.clone()).or_insert(Replica {
                        labels: spec.labels.clone(),
                        address: None,
                        holder: None,
                        phase: Phase::Starting { since: now },
                        known_since: now,
                    });
                    this.shipper.follow(id, &spec.labels);
                }
                wanted
            };
            match result {
                Ok(id) if !wanted => {
                    this.lock().condemned.insert(id.clone());
                    this.stop_replica(id);
                }
                Ok(id) => {
                    this.probe_readiness(id);
                    this.report_figures(&deployment_id).await;
                }
                Err(RunError::PullFailed { message }) => {
                    let failure = Failure::PullFailed { message };
                    this.replica_failed(None, &spec.labels, failure);
                }
                Err(RunError::Engine(error)) => {
                    tracing::warn!(%deployment_id, %error, "the engine did not run a replica");
                }
            }
        });
    }
}
