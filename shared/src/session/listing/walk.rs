//! One walk through an agent's sessions, newest first: the page after the cursor, the count
//! of matches, or both, within a read budget.

use super::query::SessionQuery;
use crate::error::StoreError;
use crate::paging::TOTAL_BOUND;
use crate::session::store::{SessionStore, SessionSummary, SummaryReader};

/// Sessions a walk reads at most (a read unit per 8 KB of them): past it, the page ends where
/// the reading did, with a cursor to go on from there, and `total` says `gte`.
pub const READ_BUDGET: usize = 20_000;

/// What a walk through the agent's sessions does: the page after the cursor, the count, or both.
#[derive(Debug)]
pub(super) struct Walk<'q> {
    query: &'q SessionQuery,
    budget: usize,
    paging: bool,
    counting: bool,
    /// Matches counted, up to one past [`TOTAL_BOUND`].
    pub(super) counted: usize,
    /// The page's sessions, by id.
    pub(super) page: Vec<String>,
    /// Where the next page starts, once known.
    pub(super) next: Option<String>,
    page_done: bool,
    pub(super) read: usize,
    last_read: Option<String>,
}

impl<'q> Walk<'q> {
    pub(super) fn new(
        query: &'q SessionQuery,
        budget: usize,
        paging: bool,
        counting: bool,
    ) -> Self {
        Walk {
            query,
            budget,
            paging,
            counting,
            counted: 0,
            page: Vec::new(),
            next: None,
            page_done: !paging,
            read: 0,
            last_read: None,
        }
    }

    fn take(&mut self, session: &SessionSummary) {
        self.read += 1;
        self.last_read = Some(session.session_id.clone());
        if !self.query.filter.matches(session) {
            return;
        }
        if self.counting {
            self.counted = (self.counted + 1).min(TOTAL_BOUND + 1);
        }
        // Ids sort by start, so the cursor's place is found even if that session has changed
        // since (or is gone).
        let past_cursor = self
            .query
            .after
            .as_ref()
            .is_none_or(|after| session.session_id < *after);
        if self.page_done || !past_cursor {
            return;
        }
        match self.page.len() < self.query.limit {
            true => self.page.push(session.session_id.clone()),
            false => {
                self.next = self.page.last().cloned();
                self.page_done = true;
            }
        }
    }

    /// Whether what the walk is for is known.
    fn done(&self) -> bool {
        self.page_done && (!self.counting || self.counted > TOTAL_BOUND)
    }

    /// Reads with `reader` until the walk is done, the sessions end, or the budget is spent;
    /// whether every session was read.
    pub(super) async fn run<S: SessionStore>(
        &mut self,
        mut reader: SummaryReader<'_, S>,
    ) -> Result<bool, StoreError> {
        while let Some(summaries) = reader.next().await? {
            for session in &summaries {
                self.take(session);
            }
            if self.done() {
                return Ok(false);
            }
            if self.read >= self.budget {
                if self.paging && !self.page_done {
                    // Everything up to the last session read was looked at: go on after it.
                    self.next = self.last_read.clone();
                    self.page_done = true;
                }
                return Ok(false);
            }
        }
        Ok(true)
    }
}
