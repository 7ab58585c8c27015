//! The failures' backoff, reports and error messages, on made-up exits.

use super::*;

const FIRST: Duration = Duration::from_secs(1);
const MOST: Duration = Duration::from_secs(60);

const STABLE: Duration = Duration::from_secs(60);

fn crash(code: i64) -> Failure {
    Failure::Crashed {
        stage: Stage::Starting,
        code: Some(code),
        last_lines: vec!["starting".into(), "Traceback: boom".into()],
    }
}

fn idle_crash(code: i64) -> Failure {
    Failure::Crashed {
        stage: Stage::Idle,
        code: Some(code),
        last_lines: vec!["ready".into(), "Traceback: boom".into()],
    }
}

#[test]
fn restarts_back_off_from_one_second_doubling_to_sixty() {
    let steps: Vec<u64> = (1..=8).map(|n| backoff(n, FIRST, MOST).as_secs()).collect();
    assert_eq!(steps, [1, 2, 4, 8, 16, 32, 60, 60]);
    assert_eq!(backoff(1000, FIRST, MOST), MOST);
}

#[test]
fn the_third_failure_in_a_row_reports_the_deployment_failed_once() {
    let (mut health, now) = (Health::default(), Instant::now());
    assert_eq!(health.failed(&crash(3), now, FIRST, MOST), None);
    assert!(!health.may_start(now));
    assert!(health.may_start(now + FIRST));
    assert_eq!(health.failed(&crash(3), now, FIRST, MOST), None);
    let failures = health.failed(&crash(3), now, FIRST, MOST).unwrap();
    let error = crash(3).error(failures);
    assert_eq!(error.code, "CRASH_LOOP");
    assert!(error.message.contains("code 3"), "{}", error.message);
    assert!(
        error.message.contains("restarted 2 times"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("before it was ready"),
        "{}",
        error.message
    );
    assert!(
        error.message.ends_with("starting\nTraceback: boom"),
        "{}",
        error.message
    );
    assert_eq!(health.failed(&crash(3), now, FIRST, MOST), None);
}

#[test]
fn a_crash_loop_s_figures_are_its_restarts_replicas_and_last_exit_code() {
    let (mut health, now) = (Health::default(), Instant::now());
    assert_eq!(health.figures(), Figures::default());
    for _ in 0..3 {
        health.started();
        health.failed(&crash(3), now, FIRST, MOST);
    }
    assert_eq!(
        health.figures(),
        Figures {
            restart_count: 2,
            replicas_started: 3,
            last_exit_code: Some(3)
        },
        "what the third failure's report carries: restarted 2 times"
    );
    // A failure with no code keeps the last code known; a kill for memory is 137.
    health.failed(
        &Failure::ReadinessTimeout { after: FIRST },
        now,
        FIRST,
        MOST,
    );
    assert_eq!(health.figures().last_exit_code, Some(3));
    let oom = Failure::OomKilled {
        stage: Stage::Starting,
        memory_mib: 1024,
    };
    health.failed(&oom, now, FIRST, MOST);
    assert_eq!(health.figures().last_exit_code, Some(OOM_EXIT_CODE));
    assert_eq!(health.figures().restart_count, 4);
    // A replica that stays up ends the failures in a row; the replicas started stay counted.
    health.started();
    health.ready(now);
    assert_eq!(
        health.figures().restart_count,
        4,
        "ready is not yet up for long"
    );
    health.settle(now + STABLE, STABLE);
    assert_eq!(
        health.figures(),
        Figures {
            restart_count: 0,
            replicas_started: 4,
            last_exit_code: None
        }
    );
}

#[test]
fn an_exit_code_is_reported_as_the_process_gave_it() {
    assert_eq!(crash(0).exit_code(), Some(0));
    assert_eq!(crash(-1).exit_code(), Some(-1));
    assert_eq!(
        crash(i64::MAX).exit_code(),
        None,
        "no process exits with it"
    );
    let lost = Failure::Crashed {
        stage: Stage::Idle,
        code: None,
        last_lines: Vec::new(),
    };
    assert_eq!(lost.exit_code(), None);
    let pull = Failure::PullFailed {
        message: "manifest unknown".into(),
    };
    assert_eq!(pull.exit_code(), None);
}

#[test]
fn a_pull_failure_is_reported_at_once_with_the_registrys_message() {
    let mut health = Health::default();
    let failure = Failure::PullFailed {
        message: "manifest unknown".into(),
    };
    let failures = health
        .failed(&failure, Instant::now(), FIRST, MOST)
        .unwrap();
    let error = failure.error(failures);
    assert_eq!(error.code, "IMAGE_PULL_FAILED");
    assert_eq!(error.message, "manifest unknown");
}

#[test]
fn a_deployments_first_ready_replica_is_news_at_once() {
    let (mut health, now) = (Health::default(), Instant::now());
    assert!(health.ready(now));
    assert!(health.has_been_ready());
    assert!(!health.ready(now), "a second ready replica is no news");
}

#[test]
fn a_replica_that_stays_up_ends_the_failures_and_reports_ready_again() {
    let (mut health, now) = (Health::default(), Instant::now());
    for _ in 0..3 {
        health.failed(&crash(1), now, FIRST, MOST);
    }
    assert!(
        !health.ready(now),
        "ready for a moment after a failed report"
    );
    assert!(
        !health.settle(now + STABLE / 2, STABLE),
        "not up for long yet"
    );
    assert!(!health.may_start(now), "the backoff still holds");
    assert!(
        health.settle(now + STABLE, STABLE),
        "recovered: ready again"
    );
    assert!(!health.settle(now + STABLE * 2, STABLE), "said once");
    assert!(health.may_start(now));
    assert_eq!(health.figures().restart_count, 0);
    assert_eq!(health.failed(&crash(1), now, FIRST, MOST), None);
    assert_eq!(health.failed(&crash(1), now, FIRST, MOST), None);
    assert!(health.failed(&crash(1), now, FIRST, MOST).is_some());
}

#[test]
fn a_crash_after_readiness_counts_as_one_before_it_and_backs_off() {
    let (mut health, mut now) = (Health::default(), Instant::now());
    let mut reported = None;
    for round in 1..=3u32 {
        // Ready, then it exits a second later: no reset in between.
        health.ready(now);
        now += Duration::from_secs(1);
        reported = health.failed(&idle_crash(3), now, FIRST, MOST);
        assert_eq!(
            health.next_start,
            Some(now + backoff(round, FIRST, MOST)),
            "round {round}: backed off"
        );
        now = health.next_start.unwrap();
    }
    let failures = reported.expect("the third crash in a row reports failed");
    let error = idle_crash(3).error(failures);
    assert_eq!(error.code, "CRASH_LOOP");
    assert!(
        error.message.contains("after it was ready") && error.message.contains("code 3"),
        "{}",
        error.message
    );
    assert_eq!(health.figures().restart_count, 2);
    assert_eq!(health.figures().last_exit_code, Some(3));
    // A ready moment between crashes does not report it ready again.
    assert!(!health.ready(now));
    assert!(health.failed(&idle_crash(3), now, FIRST, MOST).is_none());
    assert_eq!(health.figures().restart_count, 3);
}

#[test]
fn a_crash_loops_message_keeps_the_last_lines_within_one_kib() {
    let lines: Vec<String> = (0..200).map(|n| format!("línea {n}")).collect();
    let failure = Failure::Crashed {
        stage: Stage::Starting,
        code: Some(137),
        last_lines: lines,
    };
    let message = failure.error(3).message;
    assert!(
        message.len() <= MAX_ERROR_MESSAGE_BYTES,
        "{}",
        message.len()
    );
    assert!(message.starts_with("the container exited with code 137"));
    assert!(message.ends_with("línea 199"), "{message}");
}

#[test]
fn oom_and_readiness_timeout_say_what_the_customer_can_act_on() {
    let oom = Failure::OomKilled {
        stage: Stage::Starting,
        memory_mib: 1024,
    }
    .error(3);
    assert_eq!(oom.code, "OOM_KILLED");
    assert!(oom.message.contains("1024 MiB"));
    let timeout = Failure::ReadinessTimeout {
        after: Duration::from_secs(120),
    }
    .error(3);
    assert_eq!(timeout.code, "READINESS_TIMEOUT");
    assert!(timeout.message.contains("120s"), "{}", timeout.message);
}
