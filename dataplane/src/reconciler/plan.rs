//! The reconciler's one pure decision (contract section 12, "Warm reserve and scale", "Rollout
//! and delete"): given what an agent's deployments should be and what they run, which replicas
//! to start and which to stop. No engine, no clock, no async: the reconcile loop gathers the inputs and does
//! what this says.

use crate::replica::ReplicaId;

/// What a deployment is to its agent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The agent's newest deployment: it keeps the warm reserve.
    Active,
    /// Superseded by a deployment none of whose replicas has been ready yet: it still serves,
    /// reserve and all, so the agent is never left without a warm replica.
    Serving,
    /// Superseded by a deployment that has been ready: its idle replicas stop, its busy ones
    /// finish their sessions, and it starts only for sessions still asked of it.
    Draining,
    /// Its agent is deleted, or the data plane does not know it: every replica it has stops
    /// (a busy one's session is ended by whoever asked for the stop).
    Gone,
}

/// What one deployment runs, as the loop sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Running {
    /// Ready and holding no session, oldest first.
    pub idle: Vec<ReplicaId>,
    /// Started (or being started) and not ready yet, oldest first.
    pub starting: Vec<ReplicaId>,
    /// Runs asked of the engine that have not answered yet (no id yet).
    pub launching: u32,
    /// Holding a session.
    pub busy: Vec<ReplicaId>,
    /// Listed after a restart, their holders not yet saying what they hold: counted like
    /// starting ones (toward the reserve and `maxReplicas`), but never stopped as surplus, since
    /// one may hold a session (once it says so, the next plan starts its replacement).
    pub adopting: Vec<ReplicaId>,
    /// Asked to stop, not gone yet: they still count against `maxReplicas`.
    pub stopping: u32,
    /// Sessions asked of this deployment that wait for a ready replica.
    pub waiting: u32,
}

impl Running {
    /// Nothing of the deployment runs, starts, stops or waits.
    pub fn is_empty(&self) -> bool {
        self.total() == 0 && self.waiting == 0
    }

    /// Every replica, in any phase: what `maxReplicas` bounds.
    fn total(&self) -> u32 {
        count(&self.idle)
            + count(&self.starting)
            + self.launching
            + count(&self.busy)
            + count(&self.adopting)
            + self.stopping
    }

    /// Replicas holding sessions or stopping: those the plan cannot give back.
    fn held(&self) -> u32 {
        count(&self.busy) + self.stopping
    }

    /// Replicas that are, or will be, ready and free.
    fn unheld(&self) -> u32 {
        count(&self.idle) + count(&self.starting) + count(&self.adopting) + self.launching
    }
}

/// What the deployment is to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub min_replicas: u32,
    pub max_replicas: u32,
    pub role: Role,
    /// False while a failure's backoff runs, or while the deployment cannot be run at all.
    pub may_start: bool,
    /// Whether one of its replicas has been ready (and no failure reported since). Until then a
    /// deployment without a reserve still runs one replica: its image is pulled, started and
    /// asked `/readyz` at deploy time, so a bad image is reported then, not at a first session,
    /// and a deployment is reported ready only once its image has answered.
    pub proven: bool,
}

/// What to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    pub start: u32,
    pub stop: Vec<ReplicaId>,
}

fn count(replicas: &[ReplicaId]) -> u32 {
    u32::try_from(replicas.len()).unwrap_or(u32::MAX)
}

fn sum(counts: impl Iterator<Item = u32>) -> u32 {
    counts.fold(0, u32::saturating_add)
}

/// The replicas to start and stop so that `running` becomes what `bounds` asks, for a
/// deployment whose agent runs no other.
pub fn decide(bounds: Bounds, running: &Running) -> Decision {
    let cap = bounds.max_replicas;
    decide_agent(cap, &[(bounds, running.clone())])
        .pop()
        .unwrap_or_default()
}

/// The decisions for each of an agent's deployments, given active first and then newest to
/// oldest: `cap` (the active deployment's `maxReplicas`) bounds their replicas together, since
/// contract 12 says "never more than `maxReplicas` replicas in all" of the agent.
///
/// Replicas holding sessions (and those stopping) take the cap first: they cannot be given
/// back. What is left goes to the sessions that wait, then to the reserves, in the order given,
/// so that during a rollout the new deployment's reserve shrinks by the old one's busy
/// replicas, and an old deployment still serving keeps only what the new one leaves.
pub fn decide_agent(cap: u32, deployments: &[(Bounds, Running)]) -> Vec<Decision> {
    let held = sum(deployments
        .iter()
        .map(|(bounds, running)| match bounds.role {
            Role::Gone => running.total(),
            _ => running.held(),
        }));
    let mut free = cap.saturating_sub(held);
    // How many free replicas each deployment keeps.
    let mut kept = vec![0u32; deployments.len()];
    let shares: [fn(&Bounds, &Running) -> u32; 2] =
        [|_, running| running.waiting, |bounds, _| reserve(bounds)];
    for share in shares {
        for ((bounds, running), kept) in deployments.iter().zip(&mut kept) {
            if bounds.role == Role::Gone {
                continue;
            }
            let more = share(bounds, running).min(free);
            *kept += more;
            free -= more;
        }
    }
    let total = sum(deployments.iter().map(|(_, running)| running.total()));
    let mut room = cap.saturating_sub(total);
    deployments
        .iter()
        .zip(kept)
        .map(|((bounds, running), kept)| {
            if bounds.role == Role::Gone {
                return stop_all(running);
            }
            let start = if bounds.may_start {
                kept.saturating_sub(running.unheld()).min(room)
            } else {
                0
            };
            room -= start;
            Decision {
                start,
                stop: surplus(running, running.unheld().saturating_sub(kept)),
            }
        })
        .collect()
}

/// Free replicas the deployment keeps beyond those holding sessions, as its role has it.
fn reserve(bounds: &Bounds) -> u32 {
    match bounds.role {
        Role::Active | Role::Serving if !bounds.proven => bounds.min_replicas.max(1),
        Role::Active | Role::Serving => bounds.min_replicas,
        Role::Draining | Role::Gone => 0,
    }
}

fn stop_all(running: &Running) -> Decision {
    let stop = [
        &running.idle,
        &running.starting,
        &running.busy,
        &running.adopting,
    ]
    .into_iter()
    .flatten()
    .cloned()
    .collect();
    Decision { start: 0, stop }
}

/// `n` free replicas to stop: the newest not yet ready first (a ready one is worth more), then
/// idle ones.
fn surplus(running: &Running, n: u32) -> Vec<ReplicaId> {
    running
        .starting
        .iter()
        .rev()
        .chain(running.idle.iter())
        .take(usize::try_from(n).unwrap_or(usize::MAX))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
