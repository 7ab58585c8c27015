//! Replicas that fail (contract section 12, "Readiness and health"), before they are ready or
//! after it while idle: the backoff before the next start, when a deployment is reported
//! `failed`, the error the customer reads, within section 7's 1 KiB, and the figures every
//! report carries (`restartCount`, `replicasStarted`, `lastExitCode`: the agent's
//! `currentRevision.health`).
//!
//! A replica that becomes ready does not end the failures in a row: one that stays up
//! [`Config::stable_after`](super::Config) does. So an agent that answers `/readyz` and then
//! exits is a crash loop, backed off and reported as one that exits before it.

use std::time::{Duration, Instant};

use shared::agent::status::MAX_ERROR_MESSAGE_BYTES;
use shared::agent::{DeploymentError, DeploymentState};

/// Failures in a row that report a deployment `failed` (a pull failure reports at once).
pub const FAILURES_REPORTED: u32 = 3;

/// The exit code reported for a replica killed for memory: 128 + SIGKILL, what Docker and ECS
/// give such a container, and what the anchor's CLI shows for one.
pub const OOM_EXIT_CODE: i32 = 137;

/// Where a replica was in its life when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before `/readyz` answered 200.
    Starting,
    /// Ready, holding no session.
    Idle,
}

impl Stage {
    fn words(self) -> &'static str {
        match self {
            Stage::Starting => "before it was ready",
            Stage::Idle => "after it was ready, holding no session",
        }
    }
}

/// Why a replica failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Its process exited (or the engine lost it).
    Crashed {
        stage: Stage,
        /// The exit code; `None` when the engine lost it.
        code: Option<i64>,
        /// The last lines it wrote.
        last_lines: Vec<String>,
    },
    OomKilled {
        stage: Stage,
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
            Failure::Crashed {
                stage,
                code,
                last_lines,
            } => {
                let exit = match code {
                    Some(code) => format!("the container exited with code {code}"),
                    None => "the container was lost by the engine".to_owned(),
                };
                let head = format!(
                    "{exit} {}; restarted {} times; last lines:\n",
                    stage.words(),
                    failures.saturating_sub(1)
                );
                fit_tail(&head, &last_lines.join("\n"))
            }
            Failure::OomKilled { stage, memory_mib } => format!(
                "the container was killed for using more than its profile's memory \
                 ({memory_mib} MiB) {}",
                stage.words()
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
    /// When a replica became ready since the last failure: once it has stayed up long enough
    /// ([`Health::settle`]) the failures in a row end.
    ready_since: Option<Instant>,
    /// The error of the `failed` report, once made (it carries the crash's last lines).
    error: Option<DeploymentError>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            failures: 0,
            next_start: None,
            reported: Reported::Nothing,
            started: 0,
            last_exit_code: None,
            ready_since: None,
            error: None,
        }
    }
}

/// What a report says of a deployment's health (contract section 7's optional members).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Replicas started again after a failure in a row: the failures less the first (the
    /// "restarted N times" of a crash loop's message); 0 once a replica has stayed up.
    pub restart_count: u32,
    /// Replicas of the deployment the engine has started, ready or not, since this data plane
    /// took the deployment.
    pub replicas_started: u32,
    /// The last failure's exit code in the failures in a row (137 for a kill for memory);
    /// `None` once a replica has stayed up, or when no failure had one.
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
        self.ready_since = None;
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
        self.error = None;
        Some(self.failures)
    }

    /// The error the `failed` report [`Health::failed`] asked for carries.
    pub fn failed_with(&mut self, error: DeploymentError) {
        if self.reported == Reported::Failed {
            self.error = Some(error);
        }
    }

    /// The state and error last reported, to report again with new figures; `None` while a
    /// `failed` report's error is still being made (that report carries the figures).
    pub fn last_reported(&self) -> Option<(DeploymentState, Option<DeploymentError>)> {
        match self.reported {
            Reported::Nothing => Some((DeploymentState::Pending, None)),
            Reported::Ready => Some((DeploymentState::Ready, None)),
            Reported::Failed => {
                (self.error.clone()).map(|error| (DeploymentState::Failed, Some(error)))
            }
        }
    }

    /// A replica became ready at `now`; true when that is news to report: the deployment's
    /// first. After a `failed` report it is news only once a replica has stayed up
    /// ([`Health::settle`]): a replica that is ready for a moment between crashes has not
    /// recovered the deployment.
    pub fn ready(&mut self, now: Instant) -> bool {
        self.ready_since.get_or_insert(now);
        if self.failures == 0 || self.reported == Reported::Nothing {
            let news = self.reported != Reported::Ready;
            self.reported = Reported::Ready;
            self.error = None;
            return news;
        }
        false
    }

    /// At `now`: once a replica that became ready has stayed up for `stable` with no failure
    /// since, the failures in a row end (count, backoff and exit code); true when the
    /// deployment is then news to report `ready` (it was reported `failed`).
    pub fn settle(&mut self, now: Instant, stable: Duration) -> bool {
        let Some(since) = self.ready_since else {
            return false;
        };
        if now.saturating_duration_since(since) < stable {
            return false;
        }
        self.ready_since = None;
        self.failures = 0;
        self.next_start = None;
        self.last_exit_code = None;
        self.error = None;
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
mod tests;
