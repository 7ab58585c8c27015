//! One followed replica: the task that reads its lines and ships them in batches, and what it
//! shares with the shipper (the hand-over instant, the last lines, whether its stream ended).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::event::Event;
use super::intake::Intake;
use super::limit::LogLimit;
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

    /// Undoes the hand-over of `session_id` (the replica never took it): lines not yet shipped
    /// go to the deployment's stream again. Another session's hand-over is left as it is.
    pub fn withdraw(&self, session_id: &str) {
        let mut state = self.state();
        if state
            .hand_over
            .as_ref()
            .is_some_and(|(held, _)| held == session_id)
        {
            state.hand_over = None;
        }
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
/// than [`MAX_BATCH_WAIT`], one batch at a time (in order) while the reading goes on: a slow
/// delivery never holds the reading back, so the engine's log never rotates away under it.
/// Lines over `limit`, and past what waits for delivery, are dropped and marked ([`Intake`]).
pub async fn ship<R: Reports>(
    follow: Arc<Follow>,
    replica: ReplicaId,
    lines: BoxStream<'static, Result<LogLine, EngineError>>,
    reports: Arc<R>,
    limit: LogLimit,
) {
    let mut intake = Intake::new(&replica, limit);
    let mut lines = Some(lines);
    let mut flushing: Option<JoinHandle<usize>> = None;
    let mut drain_until: Option<Instant> = None;
    let mut stopping = follow.stopping.subscribe();
    let mut shipped = 0usize;
    loop {
        let reading = lines.is_some();
        let due = match flushing {
            None => intake.due(MAX_BATCH_LINES, MAX_BATCH_WAIT, reading),
            Some(_) => None,
        };
        if !reading && flushing.is_none() && intake.is_empty() {
            break;
        }
        tokio::select! {
            next = async { lines.as_mut()?.next().await }, if reading => match next {
                Some(Ok(line)) => {
                    follow.remember(&line.text);
                    intake.take(&line, Instant::now());
                }
                Some(Err(error)) => {
                    tracing::warn!(%replica, %error, "reading a replica's lines failed; no more are read");
                    lines = None;
                }
                None => lines = None,
            },
            done = async { flushing.as_mut()?.await.ok() }, if flushing.is_some() => {
                shipped += done.unwrap_or(0);
                intake.delivered();
                flushing = None;
            }
            () = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                let batch = intake.batch(MAX_BATCH_LINES);
                flushing = Some(tokio::spawn(flush(follow.clone(), reports.clone(), batch)));
            }
            () = stopped(&mut stopping), if reading && drain_until.is_none() => {
                drain_until = Some(Instant::now() + DRAIN);
            }
            () = tokio::time::sleep_until(drain_until.unwrap_or_else(Instant::now)), if reading && drain_until.is_some() => {
                tracing::debug!(%replica, "a forgotten replica's lines still came after the drain; not read");
                lines = None;
            }
        }
        if lines.is_none() {
            // Read to its end: the engine may remove the replica now; what was dropped last
            // is marked before the rest is shipped.
            intake.mark(Instant::now());
        }
    }
    tracing::debug!(%replica, shipped, "a replica's lines ended");
    follow.ended.send_replace(true);
}

/// Once the follow is asked to stop (or its shipper is gone).
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// Ships a batch, in order, each line under its log stream (the session's from the hand-over
/// instant, decided now so that a hand-over during the wait counts); how many.
async fn flush<R: Reports>(
    follow: Arc<Follow>,
    reports: Arc<R>,
    lines: Vec<(u64, Event)>,
) -> usize {
    let count = lines.len();
    let mut batches: Vec<LineBatch> = Vec::new();
    for (nanos, event) in lines {
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
