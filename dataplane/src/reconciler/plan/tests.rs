//! The plan's decisions, one contract sentence each.

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

fn proven(min: u32, role: Role) -> Bounds {
    bounds(min, 0, role)
}

#[test]
fn during_a_rollout_the_new_reserve_shrinks_by_the_old_deployments_busy_replicas() {
    let old = Running {
        busy: ids("b", 1),
        idle: ids("i", 1),
        ..Running::default()
    };
    let new = Bounds {
        proven: false,
        ..proven(2, Role::Active)
    };
    let decisions = decide_agent(
        2,
        &[(new, Running::default()), (proven(1, Role::Serving), old)],
    );
    assert_eq!(decisions[0], Decision::default(), "no room yet");
    assert_eq!(
        decisions[1].stop,
        ids("i", 1),
        "the old idle one makes room"
    );
    let stopping = Running {
        busy: ids("b", 1),
        stopping: 1,
        ..Running::default()
    };
    let decisions = decide_agent(
        2,
        &[
            (new, Running::default()),
            (proven(1, Role::Serving), stopping),
        ],
    );
    assert_eq!(decisions[0].start, 0, "a stopping replica still counts");
    let busy = Running {
        busy: ids("b", 1),
        ..Running::default()
    };
    let decisions = decide_agent(
        2,
        &[(new, Running::default()), (proven(1, Role::Serving), busy)],
    );
    assert_eq!(decisions[0].start, 1);
    assert_eq!(decisions[1], Decision::default());
}

#[test]
fn never_more_than_max_replicas_in_all_of_an_agents_deployments() {
    let old = Running {
        busy: ids("b", 3),
        ..Running::default()
    };
    let decisions = decide_agent(
        4,
        &[
            (proven(2, Role::Active), Running::default()),
            (proven(2, Role::Draining), old),
        ],
    );
    assert_eq!(decisions[0].start, 1);
    let new = Running {
        idle: ids("i", 2),
        ..Running::default()
    };
    let old = Running {
        busy: ids("b", 3),
        ..Running::default()
    };
    let decisions = decide_agent(
        4,
        &[
            (proven(2, Role::Active), new),
            (proven(2, Role::Draining), old),
        ],
    );
    assert_eq!(
        decisions[0].stop,
        ids("i", 1),
        "over the cap: the new reserve shrinks"
    );
    assert!(
        decisions[1].stop.is_empty(),
        "busy replicas keep their sessions"
    );
}

#[test]
fn a_session_waiting_on_an_old_deployment_comes_before_the_new_reserve() {
    let new = Running {
        idle: ids("i", 2),
        ..Running::default()
    };
    let old = Running {
        waiting: 1,
        ..Running::default()
    };
    let decisions = decide_agent(
        2,
        &[
            (proven(2, Role::Active), new),
            (proven(2, Role::Draining), old.clone()),
        ],
    );
    assert_eq!(decisions[0].stop, ids("i", 1));
    assert_eq!(decisions[1].start, 0, "no room until the stop ends");
    let new = Running {
        idle: ids("i", 1),
        ..Running::default()
    };
    let decisions = decide_agent(
        2,
        &[
            (proven(2, Role::Active), new),
            (proven(2, Role::Draining), old),
        ],
    );
    assert_eq!(decisions[0], Decision::default());
    assert_eq!(decisions[1].start, 1);
}

#[test]
fn an_old_deployment_still_serving_keeps_what_the_new_one_leaves() {
    let new = Running {
        starting: ids("s", 2),
        ..Running::default()
    };
    let old = Running {
        idle: ids("i", 2),
        ..Running::default()
    };
    let agent = [
        (proven(2, Role::Active), new),
        (proven(2, Role::Serving), old),
    ];
    assert_eq!(
        decide_agent(4, &agent),
        [Decision::default(), Decision::default()]
    );
    let decisions = decide_agent(3, &agent);
    assert_eq!(decisions[0], Decision::default());
    assert_eq!(decisions[1].stop, ids("i", 1));
}

#[test]
fn a_replica_being_adopted_counts_in_the_reserve_and_the_cap_and_is_never_surplus() {
    let adopting = Running {
        adopting: ids("a", 2),
        ..Running::default()
    };
    assert_eq!(
        decide(bounds(2, 4, Role::Active), &adopting),
        Decision::default(),
        "no second reserve beside replicas whose holders have not answered yet"
    );
    assert_eq!(
        decide(bounds(1, 4, Role::Active), &adopting),
        Decision::default(),
        "one of them may hold a session: none is stopped as surplus meanwhile"
    );
    let full = Running {
        adopting: ids("a", 2),
        waiting: 1,
        ..Running::default()
    };
    assert_eq!(
        decide(bounds(0, 2, Role::Active), &full).start,
        0,
        "maxReplicas"
    );
    assert_eq!(
        decide(bounds(1, 4, Role::Gone), &adopting).stop,
        ids("a", 2),
        "a deleted agent's replicas stop, adopted or not"
    );
}
