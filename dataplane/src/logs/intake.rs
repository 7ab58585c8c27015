//! What becomes of each line a replica's stream gives, before it is shipped: its event ([`Ids`]);
//! one over the replica's [`LogLimit`] or past what is buffered for a slow delivery is dropped
//! and counted, and the count is written as a marked line ([`Dropped`]) where the dropping
//! ended. What is kept waits, in order, for its batch.

use std::collections::VecDeque;

use time::OffsetDateTime;
use tokio::time::Instant;

use super::event::{Event, Ids, platform_event, unix_nanos};
use super::limit::{Budget, DropReason, Dropped, LogLimit};
use crate::engine::LogLine;
use crate::replica::ReplicaId;

/// The most text a replica's lines waiting for delivery hold: beyond it, lines are dropped
/// (and marked) rather than the reading falling behind the engine's log.
pub const MAX_PENDING_BYTES: usize = 8 * 1024 * 1024;

/// A flood that goes on is marked at least once every this long of its lines' time.
const MARK_EVERY_NANOS: u64 = 1_000_000_000;

/// One replica's lines between the reading and the shipping.
#[derive(Debug)]
pub struct Intake {
    ids: Ids,
    budget: Budget,
    limit: LogLimit,
    dropped: Option<Dropped>,
    /// Lines kept, with their time (Unix nanoseconds), in the order read.
    pending: VecDeque<(u64, Event)>,
    /// The text of the pending lines and of the batch being delivered.
    buffered_bytes: usize,
    /// The text of the batch being delivered.
    delivering_bytes: usize,
    /// When the oldest pending line was kept.
    oldest: Option<Instant>,
}

impl Intake {
    pub fn new(replica: &ReplicaId, limit: LogLimit) -> Self {
        Intake {
            ids: Ids::new(replica),
            budget: Budget::new(limit),
            limit,
            dropped: None,
            pending: VecDeque::new(),
            buffered_bytes: 0,
            delivering_bytes: 0,
            oldest: None,
        }
    }

    /// Takes the next line read at `now`.
    pub fn take(&mut self, line: &LogLine, now: Instant) {
        let event = self.ids.event(line);
        let (nanos, bytes) = (unix_nanos(line.at), line.text.len());
        let reason = if !self.budget.take(nanos, bytes) {
            Some(DropReason::OverLimit)
        } else if self.buffered_bytes + bytes > MAX_PENDING_BYTES {
            Some(DropReason::Backlog)
        } else {
            None
        };
        match reason {
            Some(reason) => self.drop_line(reason, nanos, bytes, now),
            None => {
                self.mark(now);
                self.push(nanos, event, now);
            }
        }
    }

    fn drop_line(&mut self, reason: DropReason, nanos: u64, bytes: usize, now: Instant) {
        match &mut self.dropped {
            Some(dropped) if dropped.reason == reason => dropped.add(nanos, bytes),
            _ => {
                self.mark(now);
                self.dropped = Some(Dropped::new(reason, nanos, bytes));
            }
        }
        if (self.dropped.as_ref()).is_some_and(|d| d.last - d.first >= MARK_EVERY_NANOS) {
            self.mark(now);
        }
    }

    /// Writes the marker of the lines dropped so far, if any, dated at the last of them: it
    /// sorts where they were, in their stream.
    pub fn mark(&mut self, now: Instant) {
        let Some(dropped) = self.dropped.take() else {
            return;
        };
        let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(dropped.last))
            .unwrap_or_else(|_| OffsetDateTime::now_utc());
        tracing::warn!(lines = dropped.lines, bytes = dropped.bytes, reason = ?dropped.reason, "a replica's lines dropped");
        let event = platform_event(at, &dropped.marker(&self.limit));
        self.push(dropped.last, event, now);
    }

    fn push(&mut self, nanos: u64, event: Event, now: Instant) {
        self.buffered_bytes += event.2.len();
        self.oldest.get_or_insert(now);
        self.pending.push_back((nanos, event));
    }

    /// When the next batch is due: at once when a batch is full or nothing more will be read,
    /// else `wait` after the oldest pending line; `None` with nothing pending.
    pub fn due(&self, full: usize, wait: std::time::Duration, reading: bool) -> Option<Instant> {
        let oldest = self.oldest?;
        if !reading || self.pending.len() >= full {
            return Some(Instant::now());
        }
        Some(oldest + wait)
    }

    /// The next batch to deliver: up to `most` of the pending lines, oldest first. Its lines
    /// count as buffered until [`Intake::delivered`].
    pub fn batch(&mut self, most: usize) -> Vec<(u64, Event)> {
        let count = most.min(self.pending.len());
        let batch: Vec<_> = self.pending.drain(..count).collect();
        self.delivering_bytes = batch.iter().map(|(_, event)| event.2.len()).sum();
        self.oldest = (!self.pending.is_empty()).then_some(Instant::now());
        batch
    }

    /// The batch given last was delivered.
    pub fn delivered(&mut self) {
        self.buffered_bytes = self.buffered_bytes.saturating_sub(self.delivering_bytes);
        self.delivering_bytes = 0;
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.dropped.is_none()
    }
}
