//! Readiness (contract section 12, "Readiness"): a started replica is ready once its `/readyz`
//! answers 200; one that does not within the readiness timeout has failed.

use std::sync::Arc;
use std::time::Instant;

use shared::agent::DeploymentState;
use shared::secrets::store::{DataKeyOpener, SecretStore};

use super::DataPlane;
use super::failures::Failure;
use super::state::Phase;
use crate::contract;
use crate::engine::Engine;
use crate::ports::Reports;

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
        let mut news = Vec::new();
        {
            let mut state = self.lock();
            for (id, _) in answers.into_iter().filter(|(_, ready)| *ready) {
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
                    && deployment.health.ready()
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
}
