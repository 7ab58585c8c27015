//! The port log lines are kept behind: chunks in, chunks out ([`super::chunk`]). It answers one
//! request at a time ([`LogStore::read_chunks`]: what one DynamoDB Query returns); packing lines
//! into chunks and merging chunks back into one order, with the read budgets, are
//! [`super::chunk`]'s and [`super::merge`]'s, written once for every store.

use std::future::Future;

use super::chunk::{LogChunk, pack};
use super::filter::LogFilter;
use super::line::LogLine;
use crate::error::StoreError;

pub trait LogStore: Send + Sync {
    /// Stores chunks, idempotently: a chunk's key is its service and its first line's position.
    fn put_chunks(
        &self,
        chunks: &[LogChunk],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Stores lines, packed into chunks ([`pack`]), each line expiring `retention_days` after
    /// its timestamp.
    fn put_lines(
        &self,
        lines: &[LogLine],
        retention_days: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let chunks = pack(lines, retention_days);
        async move { self.put_chunks(&chunks).await }
    }

    /// One request's worth of chunks: those of `request.filter`'s partition (its service, and
    /// deployment and session if given; not its text query or time range) whose keys lie
    /// between `from_key` and `to_key` (both inclusive), in the filter's order, after
    /// `after_key` if given, at most `max_chunks`. Expired lines are the caller's to skip.
    fn read_chunks(
        &self,
        request: &ChunkRequest<'_>,
    ) -> impl Future<Output = Result<ChunksRead, StoreError>> + Send;
}

/// What [`LogStore::read_chunks`] is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRequest<'a> {
    pub filter: &'a LogFilter,
    pub from_key: &'a str,
    pub to_key: &'a str,
    pub after_key: Option<&'a str>,
    pub max_chunks: usize,
}

/// What one request read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunksRead {
    pub chunks: Vec<LogChunk>,
    /// Where the next request continues (the last chunk's key), or `None` at the end.
    pub resume_after: Option<String>,
}

/// A stored line as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLine {
    pub position: String,
    pub text: String,
    pub deployment_id: String,
    pub session_id: Option<String>,
}
