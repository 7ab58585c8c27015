//! One followed replica: the task that reads its lines and ships them in batches, and what it
//! shares with the shipper (the hand-over instant, the last lines, whether its stream ended).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::event::{Event, Ids, unix_nanos};
use crate::engine::{EngineError, LogLine};
use crate::ports::{LineBatch, Reports};
use crate::replica::{ReplicaId, ReplicaLabels};

/// The most lines one batch carries (a subscription's batches are bounded the same way).
pub const MAX_BATCH_LINES: usize = 500;
/// The longest a read line waits before it is shipped.
pub const MAX_BATCH_WAIT: Duration = Duration::from_millis(200);
/// The lines kept per replica for a crash loop's report.
pub const KEPT_LINES: usize = 20;
/// How long a forgotten replica's stream is still read (its last lines, written before it was
/// removed, may still be on their way).
pub const DRAIN: Duration = Duration::from_secs(2);

/// What the shipper and a replica's task share.
pub struct Follow {
    pub labels: ReplicaLabels,
    state: Mutex<State>,
    ended: watch::Sender<bool>,
    stopping: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    /// The session and the instant (Unix nanos) from which the replica's lines are its.
    hand_over: Option<(String, u64)>,
    last: VecDeque<String>,
}

impl Follow {
    pub fn new(labels: ReplicaLabels) -> Self {
        Follow {
            labels,
            state: Mutex::default(),
            ended: watch::Sender::new(false),
            stopping: watch::Sender::new(false),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent whatever panicked while holding it: each change is one
        // assignment or push.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn hand_over(&self, session_id: &str, at_nanos: u64) {
        self.state().hand_over = Some((session_id.to_owned(), at_nanos));
    }

    /// Asks the task to finish: read what is left for [`DRAIN`] at most, ship it, end.
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// The last `n` lines (at most [`KEPT_LINES`]), once the stream ended or `wait` passed.
    pub async fn last_lines(&self, n: usize, wait: Duration) -> Vec<String> {
        let mut ended = self.ended.subscribe();
        // Past the wait, the lines read so far are what there is.
        let _ = tokio::time::timeout(wait, ended.wait_for(|ended| *ended)).await;
        let state = self.state();
        let skip = state.last.len().saturating_sub(n);
        state.last.iter().skip(skip).cloned().collect()
    }

    fn remember(&self, text: &str) {
        let mut state = self.state();
        if state.last.len() == KEPT_LINES {
            state.last.pop_front();
        }
        state.last.push_back(text.to_owned());
    }

    /// The log stream a line of `nanos` belongs to: its session's once handed over.
    fn session_of(&self, nanos: u64) -> Option<String> {
        let state = self.state();
        let (session, at) = state.hand_over.as_ref()?;
        (nanos >= *at).then(|| session.clone())
    }

    fn batch(&self, session_id: Option<String>) -> LineBatch {
        LineBatch {
            namespace: self.labels.namespace.clone(),
            agent: self.labels.agent.clone(),
            deployment_id: self.labels.deployment_id.clone(),
            session_id,
            events: Vec::new(),
        }
    }
}

/// Reads `lines` until they end (the replica was removed), the engine fails, or the follow is
/// stopped and drained; ships them in batches of at most [`MAX_BATCH_LINES`], none waiting more
/// than [`MAX_BATCH_WAIT`].
pub async fn ship<R: Reports>(
    follow: Arc<Follow>,
    replica: ReplicaId,
    mut lines: BoxStream<'static, Result<LogLine, EngineError>>,
    reports: Arc<R>,
) {
    let mut ids = Ids::new(&replica);
    let mut pending: Vec<(u64, Event)> = Vec::new();
    let mut flush_at: Option<Instant> = None;
    let mut drain_until: Option<Instant> = None;
    let mut stopping = follow.stopping.subscribe();
    let mut shipped = 0usize;
    loop {
        let next = tokio::select! {
            next = lines.next() => Step::Line(next),
            () = tokio::time::sleep_until(flush_at.unwrap_or_else(Instant::now)), if flush_at.is_some() => Step::Flush,
            () = stopped(&mut stopping), if drain_until.is_none() => Step::Drain,
            () = tokio::time::sleep_until(drain_until.unwrap_or_else(Instant::now)), if drain_until.is_some() => Step::Drained,
        };
        let next = match next {
            Step::Line(next) => next,
            Step::Flush => {
                shipped += flush(&follow, reports.as_ref(), &mut pending).await;
                flush_at = None;
                continue;
            }
            Step::Drain => {
                drain_until = Some(Instant::now() + DRAIN);
                continue;
            }
            Step::Drained => {
                tracing::debug!(%replica, "a forgotten replica's lines still came after the drain; not read");
                break;
            }
        };
        match next {
            Some(Ok(line)) => {
                follow.remember(&line.text);
                pending.push((unix_nanos(line.at), ids.event(&line)));
                if pending.len() >= MAX_BATCH_LINES {
                    shipped += flush(&follow, reports.as_ref(), &mut pending).await;
                    flush_at = None;
                } else if flush_at.is_none() {
                    flush_at = Some(Instant::now() + MAX_BATCH_WAIT);
                }
            }
            Some(Err(error)) => {
                tracing::warn!(%replica, %error, "reading a replica's lines failed; no more are read");
                break;
            }
            None => break,
        }
    }
    // Read to its end: the engine may remove the replica now.
    drop(lines);
    shipped += flush(&follow, reports.as_ref(), &mut pending).await;
    tracing::debug!(%replica, shipped, "a replica's lines ended");
    follow.ended.send_replace(true);
}

/// What the task does next.
enum Step {
    Line(Option<Result<LogLine, EngineError>>),
    Flush,
    Drain,
    Drained,
}

/// Once the follow is asked to stop (or its shipper is gone).
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// Ships the pending lines, in order, each under its log stream (the session's from the
/// hand-over instant, decided now so that a hand-over during the wait counts); how many.
async fn flush<R: Reports>(follow: &Follow, reports: &R, pending: &mut Vec<(u64, Event)>) -> usize {
    let count = pending.len();
    let mut batches: Vec<LineBatch> = Vec::new();
    for (nanos, event) in pending.drain(..) {
        let session = follow.session_of(nanos);
        match batches.last_mut() {
            Some(batch) if batch.session_id == session => batch.events.push(event),
            _ => {
                let mut batch = follow.batch(session);
                batch.events.push(event);
                batches.push(batch);
            }
        }
    }
    for batch in batches {
        reports.lines(batch).await;
    }
    count
}

/// A batch of one line the data plane writes into a replica's log stream.
pub fn platform_batch(labels: &ReplicaLabels, session_id: Option<&str>, event: Event) -> LineBatch {
    LineBatch {
        namespace: labels.namespace.clone(),
        agent: labels.agent.clone(),
        deployment_id: labels.deployment_id.clone(),
        session_id: session_id.map(str::to_owned),
        events: vec![event],
    }
}
