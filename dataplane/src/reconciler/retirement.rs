//! Deployments retired from the engine (docs/data-plane.md, "The engine port"): what the engine
//! keeps for a deployment outside its replicas (on ECS its secret values, $0.40 a
//! secret-month, and its task definition revisions) is released once the deployment is gone
//! for good and none of its replicas is listed: a superseded deployment once its last replica
//! (a busy one finishes its session first) is stopped, every deployment of a deleted agent once
//! its replicas are. Never while one runs: a replica was started with those values, and ECS
//! reads them at each container's start.
//!
//! A failed retire is tried again after the failures' backoff (1 s doubling to 60 s on AWS):
//! such a failure is ECS or Secrets Manager throttling or away, so asking every tick would add
//! to the throttling, and the cost of waiting a minute is a minute of a secret.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shared::secrets::store::{DataKeyOpener, SecretStore};

use super::DataPlane;
use super::failures::backoff;
use crate::engine::Engine;
use crate::ports::Reports;

/// The deployments to retire, and those being or already retired.
#[derive(Debug, Default)]
pub struct Retirements {
    /// Deployments of deleted agents not retired yet.
    deleted: HashSet<String>,
    /// Superseded deployments retired: not asked again unless a replica of theirs starts.
    done: HashSet<String>,
    /// Being retired now: none of their replicas starts until the engine answers.
    in_flight: HashSet<String>,
    /// Failed attempts in a row, and when the next may be made.
    failed: HashMap<String, (u32, Instant)>,
}

impl Retirements {
    /// The agent's deployments are gone for good: retired once their replicas are.
    pub fn agent_deleted(&mut self, deployment_ids: impl IntoIterator<Item = String>) {
        for id in deployment_ids {
            // One superseded and retired already is done for good.
            if !self.done.remove(&id) {
                self.deleted.insert(id);
            }
        }
    }

    /// A replica of the deployment is to start: it is retired again once gone; `false` while
    /// its retire is under way (the start waits for a later pass).
    pub fn may_start(&mut self, deployment_id: &str) -> bool {
        if self.in_flight.contains(deployment_id) {
            return false;
        }
        self.done.remove(deployment_id);
        true
    }

    /// Deployments of deleted agents not retired yet.
    pub fn deleted(&self) -> impl Iterator<Item = &String> {
        self.deleted.iter()
    }

    /// Of `candidates` (none of whose replicas runs), those due now, marked under way.
    pub fn start_due(&mut self, candidates: Vec<String>, now: Instant) -> Vec<String> {
        let due: Vec<String> = candidates
            .into_iter()
            .filter(|id| self.due(id, now))
            .collect();
        self.in_flight.extend(due.iter().cloned());
        due
    }

    fn due(&self, deployment_id: &str, now: Instant) -> bool {
        !self.done.contains(deployment_id)
            && !self.in_flight.contains(deployment_id)
            && self
                .failed
                .get(deployment_id)
                .is_none_or(|(_, next)| *next <= now)
    }

    fn succeeded(&mut self, deployment_id: &str) {
        self.in_flight.remove(deployment_id);
        self.failed.remove(deployment_id);
        // A deleted agent's deployment never runs again (its request is not taken again).
        if !self.deleted.remove(deployment_id) {
            self.done.insert(deployment_id.to_owned());
        }
    }

    fn failed(&mut self, deployment_id: &str, now: Instant, first: Duration, most: Duration) {
        self.in_flight.remove(deployment_id);
        let failures = self.failed.get(deployment_id).map_or(0, |(n, _)| *n) + 1;
        let next = now + backoff(failures, first, most);
        self.failed
            .insert(deployment_id.to_owned(), (failures, next));
    }
}

impl<E, S, K, R> DataPlane<E, S, K, R>
where
    E: Engine,
    S: SecretStore + 'static,
    K: DataKeyOpener + 'static,
    R: Reports,
{
    /// Asks the engine to retire each deployment now retirable, each in a task of its own.
    pub(super) fn retire_gone(self: &Arc<Self>) {
        let due = self.lock().retirable(Instant::now());
        for deployment_id in due {
            let this = self.clone();
            self.spawn(async move {
                let result = this.engine.retire(&deployment_id).await;
                let mut state = this.lock();
                match result {
                    Ok(()) => {
                        tracing::info!(%deployment_id, "deployment retired from the engine");
                        state.retirements.succeeded(&deployment_id);
                    }
                    Err(error) => {
                        tracing::warn!(%deployment_id, %error, "retiring a deployment failed; tried again after a backoff");
                        let config = &this.config;
                        let (first, most) = (config.backoff_first, config.backoff_most);
                        state
                            .retirements
                            .failed(&deployment_id, Instant::now(), first, most);
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Duration = Duration::from_secs(1);
    const MOST: Duration = Duration::from_secs(60);

    #[test]
    fn a_failed_retire_waits_its_backoff_and_one_under_way_blocks_starts() {
        let mut retirements = Retirements::default();
        let now = Instant::now();
        retirements.in_flight.insert("d".into());
        assert!(!retirements.may_start("d"), "not while it is retired");
        assert!(!retirements.due("d", now), "asked once at a time");
        retirements.failed("d", now, FIRST, MOST);
        assert!(!retirements.due("d", now));
        assert!(retirements.due("d", now + FIRST));
        retirements.failed("d", now, FIRST, MOST);
        assert!(!retirements.due("d", now + FIRST), "the backoff doubles");
        assert!(retirements.due("d", now + 2 * FIRST));
    }

    #[test]
    fn a_retired_deployment_is_retired_again_only_after_a_replica_of_it_starts() {
        let mut retirements = Retirements::default();
        let now = Instant::now();
        retirements.in_flight.insert("d".into());
        retirements.succeeded("d");
        assert!(!retirements.due("d", now));
        assert!(retirements.may_start("d"));
        assert!(retirements.due("d", now));
    }

    #[test]
    fn a_deleted_agents_deployment_is_forgotten_once_retired() {
        let mut retirements = Retirements::default();
        retirements.agent_deleted(["d".to_owned()]);
        retirements.in_flight.insert("d".into());
        retirements.succeeded("d");
        assert!(retirements.deleted.is_empty() && retirements.done.is_empty());
    }
}
