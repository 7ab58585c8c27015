//! A replica's lines to the logs (contract section 12): every line a replica writes reaches the
//! ingest function under log stream `{deploymentId}` before it holds a session and
//! `{deploymentId}/{sessionId}` from the instant it is handed one (by the line's own time).
//!
//! Each followed replica has a task ([`follow::ship`]) reading the engine's `logs` and shipping
//! batches through `Reports::lines`; each line's event ([`event`]) is made from the line alone,
//! so a line an engine gives again has the same id. A replica's log rate is bounded
//! ([`LogLimit`]): lines over it are dropped, counted and marked ([`intake`]).

mod event;
mod follow;
mod intake;
mod limit;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use time::OffsetDateTime;

pub use event::PLATFORM_PREFIX;
pub use follow::{KEPT_LINES, MAX_BATCH_LINES, MAX_BATCH_WAIT};
pub use intake::MAX_PENDING_BYTES;
pub use limit::LogLimit;

use self::follow::Follow;
use crate::engine::Engine;
use crate::ports::Reports;
use crate::replica::{ReplicaId, ReplicaLabels};

/// How long `last_lines` waits for a replica's stream to end.
pub const LAST_LINES_WAIT: Duration = Duration::from_secs(2);
/// Forgotten replicas whose last lines are still answered (a report may ask after the stop).
const FORGOTTEN_KEPT: usize = 32;

/// Carries the lines of the replicas it follows to the logs.
pub struct Shipper<E: Engine, R: Reports> {
    engine: Arc<E>,
    reports: Arc<R>,
    limit: LogLimit,
    followed: Mutex<Followed>,
}

#[derive(Default)]
struct Followed {
    live: HashMap<ReplicaId, Arc<Follow>>,
    forgotten: VecDeque<(ReplicaId, Arc<Follow>)>,
    /// Every follow's task, ended at once by [`Shipper::halt`].
    tasks: Vec<tokio::task::AbortHandle>,
}

impl Followed {
    fn find(&self, replica: &ReplicaId) -> Option<Arc<Follow>> {
        self.live.get(replica).cloned().or_else(|| {
            self.forgotten
                .iter()
                .find(|(id, _)| id == replica)
                .map(|(_, follow)| follow.clone())
        })
    }
}

impl<E: Engine, R: Reports> Shipper<E, R> {
    pub fn new(engine: Arc<E>, reports: Arc<R>, limit: LogLimit) -> Self {
        Shipper {
            engine,
            reports,
            limit,
            followed: Mutex::default(),
        }
    }

    fn followed(&self) -> std::sync::MutexGuard<'_, Followed> {
        // Each change under the lock is one insert or removal: a panic leaves it consistent.
        self.followed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts carrying the replica's lines (all of them, from its start), under
    /// `{deploymentId}` until it is handed a session; a replica already followed is left be.
    /// Called within the data plane's tokio runtime.
    pub fn follow(&self, replica: &ReplicaId, labels: &ReplicaLabels) {
        let mut followed = self.followed();
        if followed.live.contains_key(replica) {
            return;
        }
        let follow = Arc::new(Follow::new(labels.clone()));
        followed.live.insert(replica.clone(), follow.clone());
        let lines = self.engine.logs(replica, None);
        tracing::debug!(%replica, deployment_id = %labels.deployment_id, "following a replica's lines");
        let task = tokio::spawn(follow::ship(
            follow,
            replica.clone(),
            lines,
            self.reports.clone(),
            self.limit,
        ));
        followed.tasks.retain(|task| !task.is_finished());
        followed.tasks.push(task.abort_handle());
    }

    /// Ends every follow at once, reading and shipping nothing more: what a killed data plane
    /// leaves behind (its engine's lines are then a later data plane's to follow).
    pub fn halt(&self) {
        for task in self.followed().tasks.drain(..) {
            task.abort();
        }
    }

    /// The replica's lines dated `at` or later go to `{deploymentId}/{sessionId}`.
    pub fn hand_over(&self, replica: &ReplicaId, session_id: &str, at: OffsetDateTime) {
        match self.followed().live.get(replica) {
            Some(follow) => follow.hand_over(session_id, event::unix_nanos(at)),
            None => {
                tracing::warn!(%replica, %session_id, "a session handed to a replica whose lines are not followed")
            }
        }
    }

    /// The replica never took `session_id` (its agent showed no life): its lines are the
    /// deployment's again, so a session's log holds only what ran it.
    pub fn withdraw(&self, replica: &ReplicaId, session_id: &str) {
        if let Some(follow) = self.followed().live.get(replica) {
            follow.withdraw(session_id);
        }
    }

    /// Writes one line of the data plane's own into the replica's log stream (the session's
    /// when given), marked [`PLATFORM_PREFIX`], on stderr, dated now.
    pub fn platform_line(&self, labels: &ReplicaLabels, session_id: Option<&str>, text: &str) {
        let event = event::platform_event(OffsetDateTime::now_utc(), text);
        let batch = follow::platform_batch(labels, session_id, event);
        let reports = self.reports.clone();
        tokio::spawn(async move { reports.lines(batch).await });
    }

    /// The replica's last `n` lines (at most [`KEPT_LINES`]), once its stream ended, or what
    /// was read after [`LAST_LINES_WAIT`]; none for a replica not followed.
    pub async fn last_lines(&self, replica: &ReplicaId, n: usize) -> Vec<String> {
        let follow = self.followed().find(replica);
        match follow {
            Some(follow) => follow.last_lines(n, LAST_LINES_WAIT).await,
            None => Vec::new(),
        }
    }

    /// Stops following the replica: what it wrote before it was removed is still read (for a
    /// short while) and shipped.
    pub fn forget(&self, replica: &ReplicaId) {
        let mut followed = self.followed();
        let Some(follow) = followed.live.remove(replica) else {
            return;
        };
        follow.stop();
        if followed.forgotten.len() == FORGOTTEN_KEPT {
            followed.forgotten.pop_front();
        }
        followed.forgotten.push_back((replica.clone(), follow));
    }
}
