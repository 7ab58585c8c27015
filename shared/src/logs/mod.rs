//! Agent logs: where lines come from (contract section 5) and how they are asked for (section 4).
//!
//! Ingestion ([`ingest`]) turns CloudWatch Logs events into [`LogLine`]s; reading turns a query
//! string into a [`LogQuery`] ([`query`]), then a [`LogFilter`] ([`filter`]) on one service's
//! lines, which [`read`] answers with passes over the [`LogStore`] port ([`store`]), continued by
//! cursors ([`cursor`]). Positions in an agent's log are sort keys `{nanoseconds:020}#{eventId}`
//! ([`line`]): time order, ties broken by the event id, the same in both directions.

pub mod cursor;
pub mod filter;
pub mod ingest;
pub mod line;
pub mod query;
pub mod read;
pub mod store;
pub mod text;

use serde::Serialize;

pub use cursor::CursorKey;
pub use filter::{LogFilter, Placement};
pub use ingest::{
    LOG_GROUP_PREFIX, MAX_LINE_BYTES, bounded_time, parse_log_group, parse_log_stream,
    parse_message, split_text,
};
pub use line::{LogLine, MAX_EVENT_ID_LENGTH, position, position_nanos, rfc3339_nanos};
pub use query::{LogQuery, PARAMETERS};
pub use read::{LogEntry, LogsPage, ReadCost, Total, read};
pub use store::{LinesCounted, LinesRead, LogStore, StoredLine};
pub use text::matches_query;

pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 1000;
/// offset + limit may not exceed this (Elasticsearch's result window), nor does `total` count
/// past it.
pub const RESULT_WINDOW: usize = 10_000;
pub const MAX_QUERY_LENGTH: usize = 256;
pub const MAX_ID_LENGTH: usize = 256;
/// The last second of year 9999: a larger value is almost surely milliseconds sent by mistake.
pub const MAX_UNIX_SECONDS: i64 = 253_402_300_799;
/// Items a text query may read per call; past it, `total` says `gte` and a cursor continues.
pub const QUERY_READ_BUDGET: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    Desc,
}
