//! Ports: the small traits handlers are generic over, and the store's error type.
//!
//! Adapters: [`dynamodb`] (the real one, all item mapping lives there) and [`memory`] (for fast
//! unit tests; never the only test of storage).

use std::future::Future;

use crate::agent::Agent;
use crate::auth::{KeyHash, KeyRecord, Principal};
use crate::idempotency::IdempotencyRecord;
use crate::logs::{LogFilter, LogLine, Scan, ScanLimits};

pub mod dynamodb;
pub mod memory;
pub mod tables;

/// Renders an error with its whole chain of causes, for our own logs.
pub use aws_smithy_types::error::display::DisplayErrorContext;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How a store call failed. Throttling and time-outs are the caller's 503; the rest a 500.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the store throttled the request after retries")]
    Throttled(#[source] BoxError),
    #[error("the store timed out or could not be reached after retries")]
    Timeout(#[source] BoxError),
    #[error("unexpected store failure")]
    Unexpected(#[source] BoxError),
}

/// The result of writing a new agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    /// An agent of that name already exists in the account; nothing was written.
    NameTaken,
    /// The request's `Idempotency-Key` has a live record (an earlier or concurrent request with
    /// that key got there first); nothing was written. The record is what it found.
    KeyUsed(IdempotencyRecord),
}

pub trait AgentStore: Send + Sync {
    /// Writes the agent and its deployment at once, or nothing when the name is taken. With an
    /// `idempotency` record, writes it in the same transaction unless its key has a live record
    /// already (then nothing is written and that record is returned).
    fn create_agent(
        &self,
        owner: &Principal,
        agent: &Agent,
        idempotency: Option<&IdempotencyRecord>,
    ) -> impl Future<Output = Result<CreateOutcome, StoreError>> + Send;
}

pub trait KeyStore: Send + Sync {
    fn find_key(
        &self,
        hash: &KeyHash,
    ) -> impl Future<Output = Result<Option<KeyRecord>, StoreError>> + Send;
}

pub trait LogStore: Send + Sync {
    /// Whether the namespace has an agent of that name.
    fn agent_exists(
        &self,
        namespace: &str,
        agent: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Stores lines (idempotently: a line's key is its timestamp and event id), each expiring
    /// `retention_days` after its timestamp.
    fn put_lines(
        &self,
        lines: &[LogLine],
        retention_days: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// One ordered pass over the lines matching `filter`, after `after` (a position) if given.
    fn scan(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        limits: &ScanLimits,
    ) -> impl Future<Output = Result<Scan, StoreError>> + Send;

    /// Counts the lines matching `filter` (without its text query) after `after` (a position)
    /// if given, reading at most `max_reads` items: (count, whether the count is complete, items
    /// read).
    fn count(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        max_reads: usize,
    ) -> impl Future<Output = Result<(usize, bool, usize), StoreError>> + Send;
}
