//! Agent logs: where lines come from (contract section 5) and how they are asked for (section 4).
//!
//! Ingestion ([`ingest`], one delivery at a time: [`intake`]) turns CloudWatch Logs events into [`LogLine`]s, kept in compressed
//! chunks per log stream ([`chunk`]); reading turns a query string into a [`LogQuery`]
//! ([`query`]), then a [`LogFilter`] ([`filter`]) on one service's lines, which [`read`] answers
//! with passes ([`merge`]) over the chunks the [`LogStore`] port ([`store`]) returns, continued
//! by cursors ([`cursor`]). Positions in an agent's log are `{nanoseconds:020}#{eventId}`
//! ([`line`]): time order, ties broken by the event id, the same in both directions.

pub mod chunk;
pub mod cursor;
pub mod filter;
pub mod ingest;
pub mod intake;
pub mod line;
mod merge;
pub mod query;
pub mod read;
pub mod store;
pub mod subscription;
pub mod text;

pub use chunk::{LogChunk, pack};
pub use filter::{LogFilter, Placement};
pub use ingest::{
    LOG_GROUP_PREFIX, LineSource, MAX_LINE_BYTES, bounded_time, parse_log_group, parse_log_stream,
    parse_message, split_text,
};
pub use line::{LogLine, MAX_EVENT_ID_LENGTH, position, position_nanos, rfc3339_nanos};
pub use query::{
    DEFAULT_LIMIT, LogQuery, MAX_ID_LENGTH, MAX_LIMIT, MAX_QUERY_LENGTH, MAX_UNIX_SECONDS, Order,
    PARAMETERS, QUERY_READ_BUDGET, RESULT_WINDOW,
};
pub use read::{LogEntry, LogsPage, ReadCost, Relation, Total, read};
pub use store::{ChunkRequest, ChunksRead, LogStore, StoredLine};
pub use text::matches_query;
