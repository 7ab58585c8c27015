//! Readiness (contract section 12, "Readiness"): a started replica is ready once its `/readyz`
//! answers 200; one that does not within the readiness timeout has failed.
//!
//! A replica this data plane starts is asked every [`PROBE_EVERY`] by a task of its own, and its
//! first 200 hands it a waiting session at once: a cold start waits for no tick. The tick asks
//! every starting replica once more (those adopted after a restart) and fails the late ones.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_holder::contract;
use shared::agent::DeploymentState;
use shared::secrets::store::{DataKeyOpener, SecretStore};

use super::DataPlane;
use super::failures::Failure;
use super::state::Phase;
use crate::engine::Engine;
use crate::ports::Reports;
use crate::replica::ReplicaId;

/// How often a starting replica is asked `/readyz`: the most a cold start waits past the
/// image's own readiness (a refused connection or a 503 costs the data plane next to nothing).
pub const PROBE_EVERY: Duration = Duration::from_millis(25);

/// A starting replica, as its probe finds it.
struct Starting {
    /// Where its `/readyz` answers, once known.
    address: Option<SocketAddr>,
    /// Its address and its holder's are both known (a session can be handed to it).
    addressed: bool,
}

impl<E, S, K, R> DataPlane<E, S, K, R>
where
    E: Engine,
    S: SecretStore + 'static,
    K: DataKeyOpener + 'static,
    R: Reports,
{
    /// Asks `/readyz` of every replica not yet ready; those past the readiness timeout fail.
    pub(super) async fn poll_readiness(self: &Arc<Self>) {
        let now = Instant::now();
        let timeout = self.config.readiness_timeout;
        let (mut probes, mut late) = (Vec::new(), Vec::new());
        {
            let state = self.lock();
            for (id, replica) in &state.replicas {
                let Phase::Starting { since } = replica.phase else {
                    continue;
                };
                if now.duration_since(since) > timeout {
                    late.push((id.clone(), replica.labels.clone()));
                } else if let Some(address) = replica.address {
                    probes.push((id.clone(), address));
                }
            }
        }
        for (id, labels) in late {
            self.lock().condemn(&id);
            let failure = Failure::ReadinessTimeout { after: timeout };
            self.replica_failed(Some(id), &labels, failure);
        }
        let answers = futures_util::future::join_all(
            probes
                .into_iter()
                .map(|(id, address)| async move { (id, contract::is_ready(address).await) }),
        )
        .await;
        let ready = answers
            .into_iter()
            .filter(|(_, ready)| *ready)
            .map(|(id, _)| id);
        self.became_ready(ready.collect()).await;
    }

    /// Asks the replica `/readyz` every [`PROBE_EVERY`], in a task, while it is starting and
    /// within its readiness timeout; its first 200 claims a waiting session at once.
    pub(super) fn probe_readiness(self: &Arc<Self>, id: ReplicaId) {
        let this = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(PROBE_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut looked = false;
            loop {
                every.tick().await;
                // Ready, gone, stopping or past its timeout (the tick fails it): done.
                let Some(starting) = this.starting(&id) else {
                    return;
                };
                // Once: the engine answered `run` after starting it, so it has its addresses
                // now; else the tick's listing brings them.
                if !starting.addressed && !looked {
                    looked = true;
                    this.find_addresses(&id).await;
                    continue;
                }
                let Some(address) = starting.address else {
                    continue;
                };
                if contract::is_ready(address).await {
                    this.became_ready(vec![id.clone()]).await;
                    this.claim_waiting().await;
                    return;
                }
            }
        });
    }

    /// The replica while it is starting, within its readiness timeout, the data plane open.
    fn starting(&self, id: &ReplicaId) -> Option<Starting> {
        if self.is_closed() {
            return None;
        }
        let state = self.lock();
        let replica = state.replicas.get(id)?;
        match replica.phase {
            Phase::Starting { since } if since.elapsed() <= self.config.readiness_timeout => {
                Some(Starting {
                    address: replica.address,
                    addressed: replica.address.is_some() && replica.holder.is_some(),
                })
            }
            _ => None,
        }
    }

    /// The replica's address and its holder's as the engine lists them, kept.
    async fn find_addresses(&self, id: &ReplicaId) {
        let views = match self.engine.list(&self.config.stack).await {
            Ok(views) => views,
            Err(error) => {
                tracing::debug!(replica = %id, %error, "listing for a replica's address failed");
                return;
            }
        };
        let Some(view) = views.into_iter().find(|view| view.id == *id) else {
            return;
        };
        if let Some(replica) = self.lock().replicas.get_mut(id) {
            replica.address = replica.address.or(view.address);
            replica.holder = replica.holder.take().or(view.holder);
        }
    }

    /// Starting replicas that answered 200 become idle; a deployment whose first replica this
    /// is is reported `ready`.
    async fn became_ready(&self, ids: Vec<ReplicaId>) {
        let mut news = Vec::new();
        {
            let mut state = self.lock();
            for id in ids {
                let Some(replica) = state.replicas.get_mut(&id) else {
                    continue;
                };
                if !matches!(replica.phase, Phase::Starting { .. }) {
                    continue;
                }
                replica.phase = Phase::Idle;
                let deployment_id = replica.labels.deployment_id.clone();
                tracing::info!(replica = %id, %deployment_id, "a replica is ready");
                if let Some(deployment) = state.deployments.get_mut(&deployment_id)
                    && deployment.health.ready(Instant::now())
                {
                    news.push((deployment.agent.clone(), deployment_id));
                }
            }
        }
        for (agent, deployment_id) in news {
            self.report_deployment(&agent, &deployment_id, DeploymentState::Ready, None)
                .await;
        }
    }

    /// Deployments whose ready replica has stayed up [`Config::stable_after`](super::Config)
    /// with no failure since: their failures in a row end, and one reported `failed` has
    /// recovered and is reported `ready`.
    pub(super) async fn settle_health(&self) {
        let now = Instant::now();
        let recovered: Vec<_> = {
            let mut state = self.lock();
            (state.deployments.iter_mut())
                .filter_map(|(id, deployment)| {
                    let news = deployment.health.settle(now, self.config.stable_after);
                    news.then(|| (deployment.agent.clone(), id.clone()))
                })
                .collect()
        };
        for (agent, deployment_id) in recovered {
            tracing::info!(%deployment_id, "a replica stayed up: the deployment recovered");
            self.report_deployment(&agent, &deployment_id, DeploymentState::Ready, None)
                .await;
        }
    }
}

#[cfg(test)]
mod tests;
