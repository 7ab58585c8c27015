//! The port log lines are kept behind. It answers one request at a time ([`LogStore::read_lines`],
//! [`LogStore::count_lines`]: what one DynamoDB Query returns); the passes over an agent's lines
//! (the page window, matches, read budgets) are [`super::read`]'s, written once for every store.

use std::future::Future;

use super::filter::LogFilter;
use super::line::LogLine;
use crate::error::StoreError;

pub trait LogStore: Send + Sync {
    /// Stores lines (idempotently: a line's key is its timestamp and event id), each expiring
    /// `retention_days` after its timestamp.
    fn put_lines(
        &self,
        lines: &[LogLine],
        retention_days: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// One request's worth of the lines of `filter`'s partition and range (deployment and
    /// session, not the text query), in its order, after the position `after` if given, reading
    /// at most `max_reads` items. Expired lines are read (and counted) but not returned.
    fn read_lines(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        max_reads: usize,
    ) -> impl Future<Output = Result<LinesRead, StoreError>> + Send;

    /// As [`LogStore::read_lines`], counting the unexpired lines instead of returning them.
    fn count_lines(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        max_reads: usize,
    ) -> impl Future<Output = Result<LinesCounted, StoreError>> + Send;
}

/// A stored line as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLine {
    pub position: String,
    pub text: String,
    pub deployment_id: String,
    pub session_id: Option<String>,
}

/// What one request read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinesRead {
    pub lines: Vec<StoredLine>,
    /// Items read, expired ones included.
    pub items_read: usize,
    /// Where the next request continues (the last item read), or `None` at the end of the
    /// range.
    pub resume_after: Option<String>,
}

/// What one counting request found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinesCounted {
    pub count: usize,
    pub items_read: usize,
    pub resume_after: Option<String>,
}
