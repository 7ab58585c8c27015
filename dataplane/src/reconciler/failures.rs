//! Replicas that fail before they are ready (contract section 12, "Readiness and health"): the
//! backoff before the next start, when a deployment is reported `failed`, the error the
//! customer reads, within section 7's 1 KiB, and the figures every report carries
//! (`restartCount`, `replicasStarted`, `lastExitCode`: the agent's `currentRevision.health`).

use std::time::{Duration, Instant};

use shared::agent::DeploymentError;
use shared::agent::status::MAX_ERROR_MESSAGE_BYTES;

/// Failures in a row that report a deployment `failed` (a pull failure reports at once).
pub const FAILURES_REPORTED: u32 = 3;

/// The exit code reported for a replica killed for memory: 128 + SIGKILL, what Docker and ECS
/// give such a container, and what the anchor's CLI shows for one.
pub const OOM_EXIT_CODE: i32 = 137;

/// Why a replica did not become ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Its process exited (or the engine lost it) before `/readyz` answered 200.
    Crashed {
        /// The exit code; `None` when the engine lost it.
        code: Option<i64>,
        /// The last lines it wrote.
        last_lines: Vec<String>,
    },
    OomKilled {
        memory_mib: u32,
    },
    ReadinessTimeout {
        after: Duration,
    },
    PullFailed {
        message: String,
    },
}

impl Failure {
    /// The exit code it reports, when it had one (a lost replica, a timeout or a pull has
    /// none; a code past i32's range, which no process exits with, is none too).
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            Failure::Crashed { code, .. } => code.and_then(|code| i32::try_from(code).ok()),
            Failure::OomKilled { .. } => Some(OOM_EXIT_CODE),
            Failure::ReadinessTimeout { .. } | Failure::PullFailed { .. } => None,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Failure::Crashed { .. } => "CRASH_LOOP",
            Failure::OomKilled { .. } => "OOM_KILLED",
            Failure::ReadinessTimeout { .. } => "READINESS_TIMEOUT",
            Failure::PullFailed { .. } => "IMAGE_PULL_FAILED",
        }
    }

    /// The error reported after `failures` failures in a row.
    pub fn error(&self, failures: u32) -> DeploymentError {
        let message = match self {
            Failure::Crashed { code, last_lines } => {
                let exit = match code {
                    Some(code) => format!("the container exited with code {code}"),
                    None => "the container was lost by the engine".to_owned(),
                };
                let head = format!(
                    "{exit} before it was ready; restarted {} times; last lines:\n",
                    failures.saturating_sub(1)
                );
                fit_tail(&head, &last_lines.join("\n"))
            }
            Failure::OomKilled { memory_mib } => format!(
                "the container was killed for using more than its profile's memory \
                 ({memory_mib} MiB) before it was ready"
            ),
            Failure::ReadinessTimeout { after } => {
                format!("GET /readyz did not answer 200 within {after:?} of the container's start")
            }
            Failure::PullFailed { message } => fit_tail("", message),
        };
        DeploymentError {
            code: self.code().to_owned(),
            message,
        }
    }
}

/// `head` then as much of the end of `tail` as fits in the 1 KiB a report's message may have
/// (cut from the front, on a character boundary: the last lines matter most).
fn fit_tail(head: &str, tail: &str) -> String {
    let room = MAX_ERROR_MESSAGE_BYTES.saturating_sub(head.len());
    let mut start = tail.len().saturating_sub(room);
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    let mut message = String::with_capacity(MAX_ERROR_MESSAGE_BYTES);
    message.push_str(head);
    message.push_str(&tail[start..]);
    message
}

/// The deployment's state as last reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reported {
    /// Nothing yet (the control plane holds it `pending`).
    Nothing,
    Ready,
    Failed,
}

/// A deployment's failures in a row and the backoff they impose, and the replicas started.
#[derive(Debug, Clone)]
pub struct Health {
    failures: u32,
    next_start: Option<Instant>,
    reported: Reported,
    started: u32,
    /// The exit code of the last of the failures in a row that had one.
    last_exit_code: Option<i32>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            failures: 0,
            next_start: None,
            reported: Reported::Nothing,
            started: 0,
            last_exit_code: None,
        }
    }
}

/// What a report says of a deployment's health (contract section 7's optional members).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Replicas started again after a failure in a row: the failures less the first (the
    /// "restarted N times" of a crash loop's message); 0 once a replica is ready.
    pub restart_count: u32,
    /// Replicas of the deployment the engine has started, ready or not, since this data plane
    /// took the deployment.
    pub replicas_started: u32,
    /// The last failure's exit code in the failures in a row (137 for a kill for memory);
    /// `None` once a replica is ready, or when no failure had one.
    pub last_exit_code: Option<i32>,
}

/// How long the backoff is: `first`, doubling with each failure in a row, at most `most`.
pub fn backoff(failures: u32, first: Duration, most: Duration) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    first.saturating_mul(1 << doublings).min(most)
}

impl Health {
    /// May a replica start at `now`?
    pub fn may_start(&self, now: Instant) -> bool {
        self.next_start.is_none_or(|at| now >= at)
    }

    /// Counts a failure at `now`; the failures in a row when this one reports the deployment
    /// `failed` (the third in a row, or any failed pull, unless already reported): the caller
    /// then reports `failure.error(n)`.
    pub fn failed(
        &mut self,
        failure: &Failure,
        now: Instant,
        first: Duration,
        most: Duration,
    ) -> Option<u32> {
        self.failures = self.failures.saturating_add(1);
        self.next_start = Some(now + backoff(self.failures, first, most));
        if let Some(code) = failure.exit_code() {
            self.last_exit_code = Some(code);
        }
        let reports =
            matches!(failure, Failure::PullFailed { .. }) || self.failures >= FAILURES_REPORTED;
        if !reports || self.reported == Reported::Failed {
            return None;
        }
        self.reported = Reported::Failed;
        Some(self.failures)
    }

    /// A replica became ready: the count and backoff reset; true when that is news to report.
    pub fn ready(&mut self) -> bool {
        self.failures = 0;
        self.next_start = None;
        self.last_exit_code = None;
        let news = self.reported != Reported::Ready;
        self.reported = Reported::Ready;
        news
    }

    pub fn has_been_ready(&self) -> bool {
        self.reported == Reported::Ready
    }

    /// The engine started one of the deployment's replicas.
    pub fn started(&mut self) {
        self.started = self.started.saturating_add(1);
    }

    /// What a report of the deployment says of its health now.
    pub fn figures(&self) -> Figures {
        Figures {
            restart_count: self.failures.saturating_sub(1),
            replicas_started: self.started,
            last_exit_code: self.last_exit_code,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Duration = Duration::from_secs(1);
    const MOST: Duration = Duration::from_secs(60);

    fn crash(code: i64) -> Failure {
        Failure::Crashed {
            code: Some(code),
            last_lines: vec!["starting".into(), "Traceback: boom".into()],
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
        health.failed(&Failure::OomKilled { memory_mib: 1024 }, now, FIRST, MOST);
        assert_eq!(health.figures().last_exit_code, Some(OOM_EXIT_CODE));
        assert_eq!(health.figures().restart_count, 4);
        // A ready replica ends the failures in a row; the replicas started stay counted.
        health.started();
        health.ready();
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
    fn a_ready_replica_resets_the_count_and_reports_ready_again() {
        let (mut health, now) = (Health::default(), Instant::now());
        for _ in 0..3 {
            health.failed(&crash(1), now, FIRST, MOST);
        }
        assert!(health.ready());
        assert!(!health.ready());
        assert!(health.may_start(now));
        assert_eq!(health.failed(&crash(1), now, FIRST, MOST), None);
        assert_eq!(health.failed(&crash(1), now, FIRST, MOST), None);
        assert!(health.failed(&crash(1), now, FIRST, MOST).is_some());
    }

    #[test]
    fn a_crash_loops_message_keeps_the_last_lines_within_one_kib() {
        let lines: Vec<String> = (0..200).map(|n| format!("línea {n}")).collect();
        let failure = Failure::Crashed {
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
        let oom = Failure::OomKilled { memory_mib: 1024 }.error(3);
        assert_eq!(oom.code, "OOM_KILLED");
        assert!(oom.message.contains("1024 MiB"));
        let timeout = Failure::ReadinessTimeout {
            after: Duration::from_secs(120),
        }
        .error(3);
        assert_eq!(timeout.code, "READINESS_TIMEOUT");
        assert!(timeout.message.contains("120s"), "{}", timeout.message);
    }
}
