//! Passes over an agent's chunks: the lines of a filter's range in one order
//! ([`OrderedLines`], for pages, and the count of what a page leaves), and how many lines a
//! range holds ([`count_lines`], for totals), each spending a read budget counted in lines.
//!
//! Chunks are keyed by their last line's position and span at most [`MAX_CHUNK_SPAN_NANOS`].
//! So, reading newest first, once the chunks down to key `k` are read, every line at or after
//! `k` is known; reading oldest first, once the chunks up to key `k` are read, every line more
//! than the span before `k` is known. Lines wait in a sorted buffer until they are known (a line
//! two waiting chunks both hold, by its position, is returned once).

use std::collections::BTreeMap;

use super::chunk::{LogChunk, MAX_CHUNK_LINES, MAX_CHUNK_SPAN_NANOS};
use super::filter::LogFilter;
use super::line::position_nanos;
use super::query::Order;
use super::store::{ChunkRequest, LogStore, StoredLine};
use crate::error::StoreError;

/// The most chunks one request asks for (DynamoDB answers at most 1 MB a Query anyway).
const MAX_CHUNKS_PER_REQUEST: usize = 100;

/// Which lines a pass wants, and the keys of the chunks that can hold them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bounds {
    /// Lines from and to these positions (inclusive).
    from: String,
    to: String,
    /// Lines after this position in the reading order (exclusive).
    after: Option<String>,
    order: Order,
    now: i64,
    from_key: String,
    to_key: String,
}

impl Bounds {
    fn new(filter: &LogFilter, after: Option<&str>) -> Self {
        let (from, to) = (filter.from_position.as_str(), filter.to_position.as_str());
        let (lowest, highest) = match (filter.order, after) {
            (Order::Asc, Some(after)) => (after.max(from), to),
            (Order::Desc, Some(after)) => (from, after.min(to)),
            (_, None) => (from, to),
        };
        // A chunk holding a line between `lowest` and `highest` ends at or after `lowest`, and at
        // most the span after `highest` (a bare timestamp sorts before its nanosecond's
        // positions). An open end stays open.
        let to_key = match position_nanos(highest) {
            Some(nanos) => format!("{:020}", nanos.saturating_add(MAX_CHUNK_SPAN_NANOS + 1)),
            _ => highest.to_owned(),
        };
        Bounds {
            from: from.to_owned(),
            to: to.to_owned(),
            after: after.map(str::to_owned),
            order: filter.order,
            now: filter.now,
            from_key: lowest.to_owned(),
            to_key,
        }
    }

    fn wants(&self, position: &str) -> bool {
        let after = self.after.as_deref().is_none_or(|after| match self.order {
            Order::Asc => position > after,
            Order::Desc => position < after,
        });
        after && position >= self.from.as_str() && position <= self.to.as_str()
    }

    /// Whether every line of `chunk` lies within the bounds (expired or not). Conservative:
    /// `false` when unsure.
    fn holds_only_wanted(&self, chunk: &LogChunk) -> bool {
        // Every line of the chunk lies between a bare timestamp of its first line's nanosecond
        // (which sorts before that nanosecond's positions) and its key.
        let before_first = format!("{:020}", chunk.first_nanos);
        let last = chunk.last_position.as_str();
        let after = self.after.as_deref().is_none_or(|after| match self.order {
            Order::Asc => before_first.as_str() > after,
            Order::Desc => last < after,
        });
        after && before_first.as_str() >= self.from.as_str() && last <= self.to.as_str()
    }

    /// What reading `chunk` gives a pass, decoding it once: how many of its lines lie within the
    /// bounds, expired or not (what reading it costs: lines a chunk holds beyond the range or the
    /// cursor are read with it but not counted, at most a chunk a stream at each end of a pass,
    /// and the chunk at a cursor is read by the pass on each side of it), and the wanted,
    /// unexpired ones.
    fn lines_of(&self, chunk: &LogChunk) -> Result<(usize, Vec<StoredLine>), StoreError> {
        let mut within = 0;
        let mut wanted = Vec::new();
        for line in chunk.lines()? {
            let position = line.position();
            if !self.wants(&position) {
                continue;
            }
            within += 1;
            if chunk.line_expires_at(line.timestamp_nanos) > self.now {
                wanted.push(StoredLine {
                    position,
                    text: line.text,
                    deployment_id: chunk.deployment_id.clone(),
                    session_id: chunk.session_id.clone(),
                });
            }
        }
        Ok((within, wanted))
    }

    /// As [`Bounds::lines_of`], counting the wanted lines; a chunk wholly within the bounds and
    /// unexpired is counted by its line count, without decoding it.
    fn count_of(&self, chunk: &LogChunk) -> Result<(usize, usize), StoreError> {
        if self.holds_only_wanted(chunk) && chunk.unexpired_at(self.now) {
            return Ok((chunk.line_count, chunk.line_count));
        }
        let (within, wanted) = self.lines_of(chunk)?;
        Ok((within, wanted.len()))
    }
}

/// How many chunks to ask for with `budget_left` lines still to read: as many as the chunks
/// read so far suggest fit (at first, as if every chunk were full), at most `cap`.
fn chunks_to_ask(budget_left: usize, lines_read: usize, chunks_read: usize, cap: usize) -> usize {
    let per_chunk = if chunks_read == 0 {
        MAX_CHUNK_LINES
    } else {
        lines_read.div_ceil(chunks_read).max(1)
    };
    (budget_left / per_chunk).clamp(1, cap.clamp(1, MAX_CHUNKS_PER_REQUEST))
}

/// A walk over the chunks of a filter's partition and key range, a request at a time.
struct ChunkWalk<'a, S> {
    store: &'a S,
    filter: &'a LogFilter,
    bounds: Bounds,
    resume: Option<String>,
    done: bool,
    chunks_read: usize,
    /// Lines read from the store (what [`Bounds::lines_of`] says each chunk read costs).
    lines_read: usize,
}

impl<'a, S: LogStore> ChunkWalk<'a, S> {
    fn new(store: &'a S, filter: &'a LogFilter, after: Option<&str>) -> Self {
        let bounds = Bounds::new(filter, after);
        ChunkWalk {
            store,
            filter,
            done: bounds.from_key > bounds.to_key,
            bounds,
            resume: None,
            chunks_read: 0,
            lines_read: 0,
        }
    }

    /// The next request's chunks (none once done), at most `cap` of them and about as many as
    /// `budget` lines, less those read, allow. The caller adds what they cost to `lines_read`
    /// as it reads them ([`Bounds::lines_of`], [`Bounds::count_of`]).
    async fn next(&mut self, budget: usize, cap: usize) -> Result<Vec<LogChunk>, StoreError> {
        if self.done {
            return Ok(Vec::new());
        }
        let ask = chunks_to_ask(
            budget.saturating_sub(self.lines_read),
            self.lines_read,
            self.chunks_read,
            cap,
        );
        let read = self
            .store
            .read_chunks(&ChunkRequest {
                filter: self.filter,
                from_key: &self.bounds.from_key,
                to_key: &self.bounds.to_key,
                after_key: self.resume.as_deref(),
                max_chunks: ask,
            })
            .await?;
        self.chunks_read += read.chunks.len();
        self.done = read.resume_after.is_none();
        self.resume = read.resume_after;
        Ok(read.chunks)
    }

    /// Counts the wanted lines of the chunks not read yet, until `budget` lines are read in all.
    async fn count_rest(&mut self, budget: usize) -> Result<usize, StoreError> {
        let mut count = 0;
        while !self.done && self.lines_read < budget {
            for chunk in self.next(budget, MAX_CHUNKS_PER_REQUEST).await? {
                let (within, wanted) = self.bounds.count_of(&chunk)?;
                self.lines_read += within;
                count += wanted;
            }
        }
        Ok(count)
    }
}

/// The lines of a filter's range (not its text query) after a position, in the filter's order.
pub(super) struct OrderedLines<'a, S> {
    walk: ChunkWalk<'a, S>,
    /// Lines read and wanted but not known to be next yet, by position.
    waiting: BTreeMap<String, StoredLine>,
    /// The key of the last chunk read: how far the lines are known.
    furthest_key: Option<String>,
    /// Chunks to ask for next: doubling from a few, so that a short page reads little and a
    /// long pass few times.
    next_ask: usize,
}

impl<'a, S: LogStore> OrderedLines<'a, S> {
    pub(super) fn new(store: &'a S, filter: &'a LogFilter, after: Option<&str>) -> Self {
        OrderedLines {
            walk: ChunkWalk::new(store, filter, after),
            waiting: BTreeMap::new(),
            furthest_key: None,
            next_ask: 1,
        }
    }

    /// Lines read from the store so far.
    pub(super) fn lines_read(&self) -> usize {
        self.walk.lines_read
    }

    /// The next line, or `None` at the end of the range or once `budget` lines are read (then
    /// [`OrderedLines::known_through`] says how far the pass got).
    pub(super) async fn next(&mut self, budget: usize) -> Result<Option<StoredLine>, StoreError> {
        loop {
            if let Some(line) = self.pop_known() {
                return Ok(Some(line));
            }
            if self.walk.done {
                return Ok(None);
            }
            // The budget stops a pass only once it has got somewhere: a cursor must move.
            if self.walk.lines_read >= budget && self.known_through().is_some() {
                return Ok(None);
            }
            let chunks = self.walk.next(budget, self.next_ask).await?;
            self.next_ask = (self.next_ask * 2).min(MAX_CHUNKS_PER_REQUEST);
            for chunk in &chunks {
                let (within, lines) = self.walk.bounds.lines_of(chunk)?;
                self.walk.lines_read += within;
                for line in lines {
                    self.waiting.entry(line.position.clone()).or_insert(line);
                }
                self.furthest_key = Some(chunk.last_position.clone());
            }
        }
    }

    /// Whether the pass read the whole range and returned every line of it.
    pub(super) fn exhausted(&self) -> bool {
        self.walk.done && self.waiting.is_empty()
    }

    /// The lines after those returned, counted: those read and waiting, then the rest of the
    /// range's, until `budget` lines are read in all (this pass's reads included). Whether the
    /// count reached the end of the range.
    pub(super) async fn count_rest(&mut self, budget: usize) -> Result<(usize, bool), StoreError> {
        let waiting = self.waiting.len();
        let rest = self.walk.count_rest(budget).await?;
        Ok((waiting + rest, self.walk.done))
    }

    /// The next line in order, if it is known to be next.
    fn pop_known(&mut self) -> Option<StoredLine> {
        let done = self.walk.done;
        let furthest = self.furthest_key.as_deref();
        let known = match self.walk.bounds.order {
            Order::Desc => {
                let (position, _) = self.waiting.last_key_value()?;
                done || furthest.is_some_and(|key| position.as_str() >= key)
            }
            Order::Asc => {
                let (position, _) = self.waiting.first_key_value()?;
                let nanos = position_nanos(position).unwrap_or(0);
                done || furthest
                    .and_then(position_nanos)
                    .is_some_and(|key| nanos.saturating_add(MAX_CHUNK_SPAN_NANOS) < key)
            }
        };
        if !known {
            return None;
        }
        let entry = match self.walk.bounds.order {
            Order::Desc => self.waiting.pop_last(),
            Order::Asc => self.waiting.pop_first(),
        };
        entry.map(|(_, line)| line)
    }

    /// A position a later pass may continue after (a cursor's) such that every line before it
    /// in reading order has been returned by this pass; `None` while that is no further than
    /// where the pass started.
    pub(super) fn known_through(&self) -> Option<String> {
        let furthest = self.furthest_key.as_deref()?;
        let bounds = &self.walk.bounds;
        match bounds.order {
            Order::Desc => {
                let start = bounds.after.as_deref().unwrap_or(&bounds.to);
                (furthest < start).then(|| furthest.to_owned())
            }
            Order::Asc => {
                // A bare timestamp sorts before every position of its nanosecond: what follows
                // it, oldest first, is the lines from the span before the furthest key on.
                let nanos = position_nanos(furthest)?.checked_sub(MAX_CHUNK_SPAN_NANOS)?;
                let position = format!("{nanos:020}");
                let start = bounds.after.as_deref().unwrap_or(&bounds.from);
                (position.as_str() > start).then_some(position)
            }
        }
    }
}

/// What a count found: the unexpired lines of the range (without the text query), whether the
/// count reached the end of the range, and the lines read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Count {
    pub lines: usize,
    pub complete: bool,
    pub lines_read: usize,
}

/// Counts the lines of `filter`'s range (not its text query), reading chunks until about
/// `max_lines` lines are read. A chunk all of whose lines count is counted by its line count,
/// without decoding it.
pub(super) async fn count_lines<S: LogStore>(
    store: &S,
    filter: &LogFilter,
    max_lines: usize,
) -> Result<Count, StoreError> {
    let mut walk = ChunkWalk::new(store, filter, None);
    let lines = walk.count_rest(max_lines).await?;
    Ok(Count {
        lines,
        complete: walk.done,
        lines_read: walk.lines_read,
    })
}
