//! The reconciler's one pure decision (contract section 12, "Warm reserve and scale", "Rollout
//! and delete"): given what a deployment should be and what it runs, which replicas to start and
//! which to stop. No engine, no clock, no async: the reconcile loop gathers the inputs and does
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
    /// Asked to stop, not gone yet: they still count against `maxReplicas`.
    pub stopping: u32,
    /// Sessions asked of this deployment that wait for a ready replica.
    pub waiting: u32,
}

impl Running {
    /// Every replica, in any phase: what `maxReplicas` bounds.
    fn total(&self) -> u32 {
        count(&self.idle)
            + count(&self.starting)
            + self.launching
            + count(&self.busy)
            + self.stopping
    }

    /// Replicas that are, or will be, ready and free.
    fn unheld(&self) -> u32 {
        count(&self.idle) + count(&self.starting) + self.launching
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

/// The replicas to start and stop so that `running` becomes what `bounds` asks.
pub fn decide(bounds: Bounds, running: &Running) -> Decision {
    if bounds.role == Role::Gone {
        let stop = [&running.idle, &running.starting, &running.busy]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        return Decision { start: 0, stop };
    }
    let reserve = match bounds.role {
        Role::Active | Role::Serving if !bounds.proven => bounds.min_replicas.max(1),
        Role::Active | Role::Serving => bounds.min_replicas,
        Role::Draining | Role::Gone => 0,
    };
    // Free replicas wanted: the reserve beyond those holding sessions, and one for each session
    // that waits (a cold start).
    let wanted = reserve.saturating_add(running.waiting);
    let unheld = running.unheld();
    let room = bounds.max_replicas.saturating_sub(running.total());
    let start = if bounds.may_start {
        wanted.saturating_sub(unheld).min(room)
    } else {
        0
    };
    // Surplus free replicas stop, the newest not yet ready first (a ready one is worth more),
    // then idle ones; so does whatever exceeds `maxReplicas`.
    let over_cap = running.total().saturating_sub(bounds.max_replicas);
    let surplus = unheld.saturating_sub(wanted).max(over_cap);
    let stop = running
        .starting
        .iter()
        .rev()
        .chain(running.idle.iter())
        .take(usize::try_from(surplus).unwrap_or(usize::MAX))
        .cloned()
        .collect();
    Decision { start, stop }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(prefix: &str, n: usize) -> Vec<ReplicaId> {
        (0..n).map(|i| ReplicaId(format!("{prefix}{i}"))).collect()
    }

    fn bounds(min: u32, max: u32, role: Role) -> Bounds {
        Bounds {
            min_replicas: min,
            max_replicas: max,
            role,
            may_start: true,
            proven: true,
        }
    }

    #[test]
    fn a_new_deployment_starts_its_reserve() {
        let decision = decide(bounds(2, 5, Role::Active), &Running::default());
        assert_eq!(
            decision,
            Decision {
                start: 2,
                stop: vec![]
            }
        );
    }

    #[test]
    fn a_deployment_without_a_reserve_runs_one_replica_until_one_has_been_ready() {
        let unproven = Bounds {
            proven: false,
            ..bounds(0, 3, Role::Active)
        };
        assert_eq!(decide(unproven, &Running::default()).start, 1);
        let ready = Running {
            idle: ids("i", 1),
            ..Running::default()
        };
        assert_eq!(decide(unproven, &ready), Decision::default());
        assert_eq!(
            decide(bounds(0, 3, Role::Active), &ready).stop,
            ids("i", 1),
            "once proven, the reserve is none"
        );
        let draining = Bounds {
            proven: false,
            ..bounds(0, 3, Role::Draining)
        };
        assert_eq!(decide(draining, &Running::default()).start, 0);
    }

    #[test]
    fn the_reserve_is_kept_beyond_the_replicas_holding_sessions() {
        let running = Running {
            idle: ids("i", 1),
            busy: ids("b", 2),
            ..Running::default()
        };
        assert_eq!(decide(bounds(2, 5, Role::Active), &running).start, 1);
    }

    #[test]
    fn starting_and_launching_replicas_count_in_the_reserve() {
        let running = Running {
            starting: ids("s", 1),
            launching: 1,
            ..Running::default()
        };
        assert_eq!(
            decide(bounds(2, 5, Role::Active), &running),
            Decision::default()
        );
    }

    #[test]
    fn never_more_than_max_replicas_counting_starting_and_stopping_ones() {
        let running = Running {
            busy: ids("b", 2),
            starting: ids("s", 1),
            stopping: 1,
            ..Running::default()
        };
        assert_eq!(decide(bounds(3, 4, Role::Active), &running).start, 0);
        let running = Running {
            busy: ids("b", 2),
            ..Running::default()
        };
        assert_eq!(decide(bounds(3, 4, Role::Active), &running).start, 2);
    }

    #[test]
    fn a_waiting_session_starts_a_replica_with_no_reserve() {
        let running = Running {
            waiting: 1,
            ..Running::default()
        };
        assert_eq!(decide(bounds(0, 3, Role::Active), &running).start, 1);
    }

    #[test]
    fn nothing_starts_while_the_backoff_runs() {
        let mut waiting = bounds(1, 3, Role::Active);
        waiting.may_start = false;
        assert_eq!(decide(waiting, &Running::default()), Decision::default());
    }

    #[test]
    fn a_draining_deployment_stops_its_idle_replicas_and_keeps_its_busy_ones() {
        let running = Running {
            idle: ids("i", 2),
            starting: ids("s", 1),
            busy: ids("b", 1),
            ..Running::default()
        };
        let decision = decide(bounds(2, 5, Role::Draining), &running);
        assert_eq!(decision.start, 0);
        assert_eq!(decision.stop, [ids("s", 1), ids("i", 2)].concat());
    }

    #[test]
    fn a_superseded_deployment_serves_until_its_successor_has_been_ready() {
        let running = Running {
            idle: ids("i", 1),
            ..Running::default()
        };
        assert_eq!(
            decide(bounds(2, 5, Role::Serving), &running),
            Decision {
                start: 1,
                stop: vec![]
            }
        );
    }

    #[test]
    fn a_gone_deployment_stops_every_replica() {
        let running = Running {
            idle: ids("i", 1),
            starting: ids("s", 1),
            busy: ids("b", 1),
            ..Running::default()
        };
        let decision = decide(bounds(1, 5, Role::Gone), &running);
        assert_eq!(decision.stop.len(), 3);
        assert_eq!(decision.start, 0);
    }

    #[test]
    fn surplus_idle_replicas_stop() {
        let running = Running {
            idle: ids("i", 3),
            ..Running::default()
        };
        assert_eq!(
            decide(bounds(1, 5, Role::Active), &running).stop,
            ids("i", 2)
        );
    }
}
