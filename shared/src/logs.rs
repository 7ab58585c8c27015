//! Agent logs: where lines come from (contract section 5) and how they are asked for (section 4).
//!
//! Ingestion turns CloudWatch Logs events into [`LogLine`]s; reading turns a query string into a
//! [`LogQuery`], which the store answers. Positions in an agent's log are sort keys
//! `{nanoseconds:020}#{eventId}`: time order, ties broken by the event id, the same in both
//! directions.

use std::future::Future;
use std::ops::Range;

use serde::Serialize;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::ApiError;
use crate::error::StoreError;
use crate::validation::{QueryParameters, is_dns_label};

pub const LOG_GROUP_PREFIX: &str = "/agent-hosting/";
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

/// One line of an agent's log, as ingested. Lines belong to the agent's service (its
/// `serviceId`), not to its name: a later agent of the same name starts with none of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub service_id: String,
    pub deployment_id: String,
    pub session_id: Option<String>,
    pub event_id: String,
    pub timestamp_nanos: u64,
    pub text: String,
}

impl LogLine {
    /// The line's position in its agent's log.
    pub fn position(&self) -> String {
        position(self.timestamp_nanos, &self.event_id)
    }

    /// When the line expires (Unix seconds): `retention_days` after its own timestamp.
    pub fn expires_at(&self, retention_days: u32) -> i64 {
        let seconds = (self.timestamp_nanos / 1_000_000_000) as i64;
        seconds.saturating_add(i64::from(retention_days) * 86_400)
    }
}

pub fn position(timestamp_nanos: u64, event_id: &str) -> String {
    format!("{timestamp_nanos:020}#{event_id}")
}

/// The nanosecond timestamp a position starts with.
pub fn position_nanos(position: &str) -> Option<u64> {
    position.get(..20)?.parse().ok()
}

/// `/agent-hosting/{namespace}/{agentName}` → (namespace, agent name).
pub fn parse_log_group(group: &str) -> Option<(&str, &str)> {
    let (namespace, agent) = group.strip_prefix(LOG_GROUP_PREFIX)?.split_once('/')?;
    (is_dns_label(namespace) && is_dns_label(agent)).then_some((namespace, agent))
}

/// `{deploymentId}/{sessionId}` or `{deploymentId}` → (deployment id, session id).
pub fn parse_log_stream(stream: &str) -> Option<(&str, Option<&str>)> {
    let (deployment, session) = match stream.split_once('/') {
        Some((deployment, session)) => (deployment, Some(session)),
        None => (stream, None),
    };
    let valid = |id: &str| !id.is_empty() && id.len() <= MAX_ID_LENGTH;
    (valid(deployment) && session.is_none_or(valid)).then_some((deployment, session))
}

/// A message's timestamp and text: CRI form (`<RFC3339Nano> <stdout|stderr> <F|P> <text>`)
/// gives both; any other message keeps its whole text and the event's millisecond timestamp.
pub fn parse_message(message: &str, event_millis: i64) -> (u64, &str) {
    if let Some((nanos, text)) = parse_cri(message) {
        return (nanos, text);
    }
    let nanos = u64::try_from(event_millis)
        .unwrap_or(0)
        .saturating_mul(1_000_000);
    (nanos, message.strip_suffix('\n').unwrap_or(message))
}

fn parse_cri(message: &str) -> Option<(u64, &str)> {
    let mut parts = message.splitn(4, ' ');
    let timestamp = OffsetDateTime::parse(parts.next()?, &Rfc3339).ok()?;
    if !matches!(parts.next()?, "stdout" | "stderr") || !matches!(parts.next()?, "F" | "P") {
        return None;
    }
    let text = parts.next().unwrap_or_default();
    let nanos = u64::try_from(timestamp.unix_timestamp_nanos()).ok()?;
    Some((nanos, text.strip_suffix('\n').unwrap_or(text)))
}

/// `2025-04-18T20:34:17.153744602Z`: RFC 3339 UTC with exactly nine fraction digits.
pub fn rfc3339_nanos(nanos: u64) -> String {
    let seconds = nanos / 1_000_000_000;
    let fraction = nanos % 1_000_000_000;
    match OffsetDateTime::from_unix_timestamp(seconds as i64) {
        Ok(at) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{fraction:09}Z",
            at.year(),
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute(),
            at.second()
        ),
        Err(_) => format!("9999-12-31T23:59:59.{fraction:09}Z"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    Desc,
}

/// A validated GET .../logs query string with its defaults (contract section 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogQuery {
    pub limit: usize,
    pub offset: usize,
    pub order: Order,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    pub deployment_id: Option<String>,
    pub session_id: Option<String>,
    /// The text query, lowercased (matching is case-insensitive).
    pub query: Option<String>,
    pub cursor: Option<String>,
}

/// The query parameters GET logs accepts; any other is a 400.
pub const PARAMETERS: &[&str] = &[
    "limit",
    "offset",
    "order",
    "startTime",
    "endTime",
    "deploymentId",
    "sessionId",
    "query",
    "cursor",
];

fn integer(
    name: &str,
    value: &str,
    range: std::ops::RangeInclusive<i64>,
    hint: &str,
) -> Result<i64, ApiError> {
    match value.parse::<i64>() {
        Ok(number) if range.contains(&number) => Ok(number),
        _ => Err(ApiError::bad_request(
            name,
            format!(
                "{name} must be an integer from {} to {}{hint}",
                range.start(),
                range.end()
            ),
        )),
    }
}

fn unix_seconds(name: &str, value: &str) -> Result<i64, ApiError> {
    let hint = match value.parse::<i64>() {
        Ok(number) if number > MAX_UNIX_SECONDS => {
            "; it is Unix time in seconds, and this value looks like milliseconds (divide by 1000)"
        }
        _ => " (Unix time in seconds)",
    };
    integer(name, value, 0..=MAX_UNIX_SECONDS, hint)
}

impl LogQuery {
    /// Reads the parameters. An empty value is the same as an absent parameter; an unknown or
    /// repeated parameter is a 400 naming it (a filter is never silently dropped).
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ApiError> {
        let params = QueryParameters::read(params, PARAMETERS)?;
        let get = |name: &str| params.get(name);

        let limit = match get("limit") {
            None => DEFAULT_LIMIT,
            Some(value) => integer("limit", value, 1..=MAX_LIMIT as i64, "")? as usize,
        };
        let offset = match get("offset") {
            None => 0,
            Some(value) => integer("offset", value, 0..=RESULT_WINDOW as i64, "")? as usize,
        };
        if offset + limit > RESULT_WINDOW {
            return Err(ApiError::bad_request(
                "offset",
                format!(
                    "offset + limit must be at most {RESULT_WINDOW}; use cursor (nextCursor of the previous page) to read further"
                ),
            ));
        }
        let order = match get("order") {
            None | Some("desc") => Order::Desc,
            Some("asc") => Order::Asc,
            Some(_) => return Err(ApiError::bad_request("order", "order must be asc or desc")),
        };
        let start_time = get("startTime")
            .map(|v| unix_seconds("startTime", v))
            .transpose()?;
        let end_time = get("endTime")
            .map(|v| unix_seconds("endTime", v))
            .transpose()?;
        if let (Some(start), Some(end)) = (start_time, end_time)
            && end <= start
        {
            return Err(ApiError::bad_request(
                "endTime",
                "endTime must be greater than startTime (startTime is inclusive, endTime exclusive)",
            ));
        }
        let id = |name: &str| -> Result<Option<String>, ApiError> {
            match get(name) {
                Some(value) if value.chars().count() > MAX_ID_LENGTH => Err(ApiError::bad_request(
                    name,
                    format!("{name} must be at most {MAX_ID_LENGTH} characters"),
                )),
                other => Ok(other.map(str::to_owned)),
            }
        };
        let deployment_id = id("deploymentId")?;
        let session_id = id("sessionId")?;
        let query = match get("query") {
            Some(text) if text.chars().count() > MAX_QUERY_LENGTH => {
                return Err(ApiError::bad_request(
                    "query",
                    format!("query must be 1 to {MAX_QUERY_LENGTH} characters"),
                ));
            }
            other => other.map(str::to_lowercase),
        };
        // With a cursor, offset skips entries after it.
        let cursor = get("cursor").map(str::to_owned);
        Ok(LogQuery {
            limit,
            offset,
            order,
            start_time,
            end_time,
            deployment_id,
            session_id,
            query,
            cursor,
        })
    }
}

/// Whether a line matches a (lowercased) text query: a case-insensitive substring.
pub fn matches_query(text: &str, lowercase_query: &str) -> bool {
    // Fast path for ASCII text, without allocating.
    if text.is_ascii() && lowercase_query.is_ascii() {
        let needle = lowercase_query.as_bytes();
        return needle.is_empty()
            || text
                .as_bytes()
                .windows(needle.len())
                .any(|window| window.eq_ignore_ascii_case(needle));
    }
    text.to_lowercase().contains(lowercase_query)
}

/// What the store is asked for: one service's lines, narrowed and ordered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFilter {
    pub service_id: String,
    pub deployment_id: Option<String>,
    pub session_id: Option<String>,
    /// Positions from and to, both inclusive as in DynamoDB's `BETWEEN`, from the time range and
    /// retention. Each is a bare 20-digit timestamp, which sorts before every position at that
    /// nanosecond (`{timestamp}#{event id}`), so the time range's end is exclusive.
    pub from_position: String,
    pub to_position: String,
    pub order: Order,
    pub query: Option<String>,
    /// Unix seconds; lines whose TTL is at or before it are never returned or counted.
    pub now: i64,
}

/// Where a cursor's position lies against a range, in the range's reading order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Reading has not reached the range yet: all of it follows.
    BeforeRange,
    InRange,
    /// Reading has passed the range's end: nothing of it follows.
    PastRange,
}

impl LogFilter {
    pub fn new(
        service_id: &str,
        query: &LogQuery,
        now: OffsetDateTime,
        retention_days: u32,
    ) -> Self {
        let now_nanos = u64::try_from(now.unix_timestamp_nanos()).unwrap_or(0);
        let retained_from =
            now_nanos.saturating_sub(u64::from(retention_days) * 86_400 * 1_000_000_000);
        let seconds_to_nanos = |seconds: i64| {
            u64::try_from(seconds)
                .unwrap_or(0)
                .saturating_mul(1_000_000_000)
        };
        let from = query
            .start_time
            .map_or(0, seconds_to_nanos)
            .max(retained_from);
        let to = query.end_time.map_or(u64::MAX, seconds_to_nanos);
        LogFilter {
            service_id: service_id.to_owned(),
            deployment_id: query.deployment_id.clone(),
            session_id: query.session_id.clone(),
            from_position: format!("{from:020}"),
            // No position starts with u64::MAX nanoseconds' digits and a larger suffix... so an
            // open end is "9" repeated: above every 20-digit timestamp.
            to_position: if to == u64::MAX {
                "9".repeat(21)
            } else {
                format!("{to:020}")
            },
            order: query.order,
            query: query.query.clone(),
            now: now.unix_timestamp(),
        }
    }

    /// Where `position` (a cursor's) lies for reading in this filter's order.
    pub fn locate(&self, position: &str) -> Placement {
        let (ahead, behind) = match self.order {
            Order::Asc => (
                position < self.from_position.as_str(),
                position > self.to_position.as_str(),
            ),
            Order::Desc => (
                position > self.to_position.as_str(),
                position < self.from_position.as_str(),
            ),
        };
        match (ahead, behind) {
            (true, _) => Placement::BeforeRange,
            (_, true) => Placement::PastRange,
            _ => Placement::InRange,
        }
    }

    /// The part of the range that reading in this filter's order has passed at `position`,
    /// `position` itself included; `None` when reading has not reached the range yet.
    pub fn through(&self, position: &str) -> Option<LogFilter> {
        let placement = self.locate(position);
        if placement == Placement::BeforeRange {
            return None;
        }
        let mut passed = self.clone();
        match (placement, self.order) {
            (Placement::InRange, Order::Asc) => passed.to_position = position.to_owned(),
            (Placement::InRange, Order::Desc) => passed.from_position = position.to_owned(),
            // Past the range: all of it.
            _ => {}
        }
        Some(passed)
    }

    /// A fingerprint of everything that decides which lines match and in what order, so a
    /// cursor made for other filters (or another agent, or an earlier agent of the same name) is
    /// refused.
    pub fn fingerprint(&self, start_time: Option<i64>, end_time: Option<i64>) -> String {
        let mut hasher = Sha256::new();
        for part in [
            self.service_id.as_str(),
            self.deployment_id.as_deref().unwrap_or("\u{0}"),
            self.session_id.as_deref().unwrap_or("\u{0}"),
            self.query.as_deref().unwrap_or("\u{0}"),
            &start_time.map_or("-".to_owned(), |t| t.to_string()),
            &end_time.map_or("-".to_owned(), |t| t.to_string()),
            if self.order == Order::Asc {
                "asc"
            } else {
                "desc"
            },
        ] {
            hasher.update(part.as_bytes());
            hasher.update([0xff]);
        }
        hasher.finalize()[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// A cursor: where the previous page stopped, bound to the filters it was made under.
/// Opaque to callers (`v1.<fingerprint>.<position>`, base64url).
pub mod cursor {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use crate::ApiError;

    pub fn encode(fingerprint: &str, position: &str) -> String {
        URL_SAFE_NO_PAD.encode(format!("v1.{fingerprint}.{position}"))
    }

    fn invalid() -> ApiError {
        ApiError::bad_request(
            "cursor",
            "cursor is not valid for this request: pass nextCursor unchanged, with the same filters and order",
        )
    }

    /// The position a cursor continues after, if it was made under `fingerprint`.
    pub fn decode(cursor: &str, fingerprint: &str) -> Result<String, ApiError> {
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
        let text = String::from_utf8(bytes).map_err(|_| invalid())?;
        let rest = text.strip_prefix("v1.").ok_or_else(invalid)?;
        let (made_for, position) = rest.split_once('.').ok_or_else(invalid)?;
        let well_formed =
            super::position_nanos(position).is_some() && position.as_bytes().get(20) == Some(&b'#');
        if made_for != fingerprint || !well_formed {
            return Err(invalid());
        }
        Ok(position.to_owned())
    }
}

/// The port log lines are kept behind.
pub trait LogStore: Send + Sync {
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

/// A stored line as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLine {
    pub position: String,
    pub text: String,
    pub deployment_id: String,
    pub session_id: Option<String>,
}

/// What one pass over an agent's lines found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// The matching lines whose index among the matches was in the requested window.
    pub kept: Vec<StoredLine>,
    /// Matching lines seen.
    pub matches: usize,
    /// Items read from the store (its scanned count).
    pub items_read: usize,
    /// Whether the pass reached the end of the range.
    pub exhausted: bool,
    /// The position of the last item read, when the pass stopped early.
    pub last_read: Option<String>,
}

/// How far one pass may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanLimits {
    pub keep: Range<usize>,
    /// Stop once this many lines matched.
    pub stop_after_matches: usize,
    /// Stop once this many items were read.
    pub read_budget: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Total {
    pub value: usize,
    pub relation: &'static str,
}

impl Total {
    pub fn exact_or_bound(count: usize, complete: bool) -> Self {
        if count > RESULT_WINDOW {
            Total {
                value: RESULT_WINDOW,
                relation: "gte",
            }
        } else {
            Total {
                value: count,
                relation: if complete { "eq" } else { "gte" },
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    pub log: String,
    pub timestamp: String,
    pub deployment_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl From<StoredLine> for LogEntry {
    fn from(line: StoredLine) -> Self {
        LogEntry {
            timestamp: rfc3339_nanos(position_nanos(&line.position).unwrap_or(0)),
            log: line.text,
            deployment_id: line.deployment_id,
            session_id: line.session_id,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogsPage {
    pub total: Total,
    pub logs: Vec<LogEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Items read from the store to answer one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadCost {
    pub page_items_read: usize,
    pub total_items_read: usize,
}

/// Answers a logs request for one agent (whose existence the caller checked).
///
/// Without a text query: the page reads offset + limit + 1 items (the one extra tells whether
/// more follow), and `total` adds to the page's own matches a count of what lies before the
/// cursor (if any, alongside the page) and after the page. The page's reads count towards the
/// 10,001 it takes to tell "exactly 10,000" from "more", so counting itself never reads more than
/// 10,000 items (the contract's bound); no count runs when the page reached the end of the range.
/// With a text query: one pass reads at most [`QUERY_READ_BUDGET`] items of the time range, and
/// serves both the page and `total`.
pub async fn read<S: LogStore>(
    store: &S,
    filter: &LogFilter,
    query: &LogQuery,
) -> Result<(LogsPage, ReadCost), ApiError> {
    let fingerprint = filter.fingerprint(query.start_time, query.end_time);
    let after = query
        .cursor
        .as_deref()
        .map(|cursor| cursor::decode(cursor, &fingerprint))
        .transpose()?;
    let window_end = query.offset + query.limit;
    let keep = query.offset..window_end;
    // DynamoDB refuses a start key outside the key condition, and a cursor can fall outside the
    // range honestly (newest first, the retention start moves past old positions) or be forged:
    // before the range, read it from its start; past it, nothing follows.
    let placement = after.as_deref().map(|position| filter.locate(position));
    let start_after = after
        .as_deref()
        .filter(|_| placement == Some(Placement::InRange));
    let finished = placement == Some(Placement::PastRange);
    let page_scan = |limits: ScanLimits| async move {
        if finished {
            return Ok(Scan {
                exhausted: true,
                ..Scan::default()
            });
        }
        store.scan(filter, start_after, &limits).await
    };

    // A range that ends before it starts (endTime before the retention period) holds nothing;
    // DynamoDB would reject the inverted BETWEEN.
    if filter.from_position >= filter.to_position {
        let page = LogsPage {
            total: Total::exact_or_bound(0, true),
            logs: Vec::new(),
            next_cursor: None,
        };
        return Ok((page, ReadCost::default()));
    }

    let (scan, total, total_items_read) = if filter.query.is_some() {
        let limits = ScanLimits {
            keep,
            stop_after_matches: (window_end + 1).max(RESULT_WINDOW + 1),
            read_budget: QUERY_READ_BUDGET,
        };
        let scan = page_scan(limits).await?;
        // From a cursor in the range the pass sees only what follows it: a lower bound.
        let whole_range = start_after.is_none() && !finished;
        let total = Total::exact_or_bound(scan.matches, scan.exhausted && whole_range);
        (scan, total, 0)
    } else {
        let limits = ScanLimits {
            keep,
            stop_after_matches: window_end + 1,
            // Only lines written under a shorter retention are read without matching.
            read_budget: 2 * (RESULT_WINDOW + 1),
        };
        let page = page_scan(limits);
        // What the earlier pages covered is counted alongside this page. At most RESULT_WINDOW
        // reads: with the page's first match that is enough to tell "more than 10,000".
        let passed = after.as_deref().and_then(|cursor| filter.through(cursor));
        let before = async {
            match &passed {
                Some(passed) => store.count(passed, None, RESULT_WINDOW).await,
                None => Ok((0, true, 0)),
            }
        };
        let (scan, before) = tokio::join!(page, before);
        let (scan, (before, before_complete, before_read)) = (scan?, before?);
        let counted = before + scan.matches;
        if scan.exhausted || !before_complete {
            let total = Total::exact_or_bound(counted, before_complete);
            (scan, total, before_read)
        } else {
            // Whether there are more than RESULT_WINDOW matches is known after RESULT_WINDOW + 1
            // reads; the page's own reads count towards them.
            let max_reads = (RESULT_WINDOW + 1).saturating_sub(before_read + scan.items_read);
            let (after_page, complete, read) = store
                .count(filter, scan.last_read.as_deref(), max_reads)
                .await?;
            let total = Total::exact_or_bound(counted + after_page, complete);
            (scan, total, before_read + read)
        }
    };

    let full_page = scan.kept.len() == query.limit;
    let next_position = if full_page && (scan.matches > window_end || !scan.exhausted) {
        scan.kept.last().map(|line| line.position.clone())
    } else if !scan.exhausted && filter.query.is_some() {
        // The read budget ran out before the page filled: continue where reading stopped.
        scan.last_read.clone()
    } else {
        None
    };
    let cost = ReadCost {
        page_items_read: scan.items_read,
        total_items_read,
    };
    let page = LogsPage {
        total,
        logs: scan.kept.into_iter().map(LogEntry::from).collect(),
        next_cursor: next_position.map(|position| cursor::encode(&fingerprint, &position)),
    };
    Ok((page, cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_groups_and_streams() {
        assert_eq!(
            parse_log_group("/agent-hosting/tiny-ferret-1/my-agent"),
            Some(("tiny-ferret-1", "my-agent"))
        );
        for bad in [
            "/agent-hosting/ns",
            "/aws/lambda/x",
            "/agent-hosting/NS/a",
            "/agent-hosting/ns/a/b",
            "/agent-hosting//a",
        ] {
            assert_eq!(parse_log_group(bad), None, "{bad}");
        }
        assert_eq!(
            parse_log_stream("dep-1/sess-9"),
            Some(("dep-1", Some("sess-9")))
        );
        assert_eq!(parse_log_stream("dep-1"), Some(("dep-1", None)));
        assert_eq!(parse_log_stream(""), None);
        assert_eq!(parse_log_stream("dep-1/"), None);
        assert_eq!(parse_log_stream("/sess"), None);
    }

    #[test]
    fn cri_lines_give_nanoseconds_and_text() {
        let (nanos, text) = parse_message("2025-04-18T20:34:17.153744602Z stdout F hello world", 1);
        assert_eq!(nanos, 1_745_008_457_153_744_602);
        assert_eq!(text, "hello world");
        let (_, text) = parse_message("2025-04-18T20:34:17.153744602+02:00 stderr P part ", 1);
        assert_eq!(text, "part ");
        let (nanos, text) = parse_message("2025-04-18T20:34:17Z stdout F", 1);
        assert_eq!((nanos, text), (1_745_008_457_000_000_000, ""));
    }

    #[test]
    fn other_lines_keep_their_text_and_the_event_time() {
        for message in [
            "plain line",
            "2025-04-18T20:34:17Z stdin F x",
            "2025-13-18T20:34:17Z stdout F x",
            "not-a-time stdout F x",
        ] {
            let (nanos, text) = parse_message(message, 1_700_000_000_123);
            assert_eq!(nanos, 1_700_000_000_123_000_000, "{message}");
            assert_eq!(text, message);
        }
    }

    #[test]
    fn timestamps_have_nine_fraction_digits() {
        assert_eq!(
            rfc3339_nanos(1_745_008_457_153_744_602),
            "2025-04-18T20:34:17.153744602Z"
        );
        assert_eq!(rfc3339_nanos(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            rfc3339_nanos(1_700_000_000_000_000_001),
            "2023-11-14T22:13:20.000000001Z"
        );
    }

    fn parse(query: &str) -> Result<LogQuery, ApiError> {
        let pairs: Vec<(&str, &str)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect();
        LogQuery::from_params(pairs)
    }

    fn rejected(query: &str, field: &str) {
        let error = parse(query).expect_err(query);
        assert_eq!(error.status().as_u16(), 400, "{query}");
        assert_eq!(error.field(), Some(field), "{query}");
    }

    #[test]
    fn a_position_is_placed_against_the_range_in_reading_order() {
        let now = OffsetDateTime::from_unix_timestamp(2_000_000_000).unwrap();
        let range = |query: &str| LogFilter::new("svc", &parse(query).unwrap(), now, 30);
        let at = |seconds: u64| position(seconds * 1_000_000_000, "1");
        let bounds = |filter: LogFilter| (filter.from_position, filter.to_position);
        let asc = range("order=asc&startTime=1999999000&endTime=1999999900");
        let desc = range("startTime=1999999000&endTime=1999999900");
        let middle = at(1_999_999_500);
        assert_eq!(
            asc.through(&middle).map(bounds),
            Some((asc.from_position.clone(), middle.clone()))
        );
        assert_eq!(
            desc.through(&middle).map(bounds),
            Some((middle, desc.to_position.clone()))
        );
        // Positions outside the range (forged cursors): nothing passed, or all of it.
        let (before, beyond) = (at(1_999_998_000), at(1_999_999_950));
        assert_eq!(asc.through(&before).map(bounds), None);
        assert_eq!(
            asc.through(&beyond).map(bounds),
            Some((asc.from_position.clone(), asc.to_position.clone()))
        );
        assert_eq!(desc.through(&beyond).map(bounds), None);
        assert_eq!(
            desc.through(&before).map(bounds),
            Some((desc.from_position.clone(), desc.to_position.clone()))
        );
        // The same positions, placed for resuming a page.
        let middle = at(1_999_999_500);
        for (filter, position, placement) in [
            (&asc, &before, Placement::BeforeRange),
            (&asc, &middle, Placement::InRange),
            (&asc, &beyond, Placement::PastRange),
            (&desc, &beyond, Placement::BeforeRange),
            (&desc, &middle, Placement::InRange),
            (&desc, &before, Placement::PastRange),
        ] {
            assert_eq!(
                filter.locate(position),
                placement,
                "{:?} {position}",
                filter.order
            );
        }
    }

    #[test]
    fn defaults() {
        let query = parse("").unwrap();
        assert_eq!(
            (query.limit, query.offset, query.order),
            (10, 0, Order::Desc)
        );
        assert_eq!(
            parse("query=&limit=&order=").unwrap(),
            query,
            "empty values are absent"
        );
    }

    #[test]
    fn every_rule_of_contract_section_4() {
        for bad in [
            "limit=0",
            "limit=1001",
            "limit=abc",
            "limit=1.5",
            "limit=-1",
            "limit=99999999999999999999",
        ] {
            rejected(bad, "limit");
        }
        for bad in [
            "offset=-1",
            "offset=x",
            "offset=9991&limit=10",
            "offset=10000",
        ] {
            rejected(bad, "offset");
        }
        assert!(parse("offset=9990&limit=10").is_ok());
        assert!(parse("offset=0&limit=1000").is_ok());
        rejected("order=up", "order");
        rejected("order=ASC", "order");
        rejected("startTime=abc", "startTime");
        rejected("startTime=-5", "startTime");
        rejected("endTime=1.5", "endTime");
        rejected("startTime=100&endTime=100", "endTime");
        rejected("startTime=200&endTime=100", "endTime");
        rejected(&format!("query={}", "q".repeat(257)), "query");
        assert!(parse(&format!("query={}", "q".repeat(256))).is_ok());
        rejected("sesionId=abc", "sesionId");
        rejected("limit=5&limit=6", "limit");
        rejected(&format!("deploymentId={}", "d".repeat(257)), "deploymentId");
        let both = parse("cursor=abc&offset=5").unwrap();
        assert_eq!((both.offset, both.cursor.as_deref()), (5, Some("abc")));
    }

    #[test]
    fn milliseconds_get_a_hint() {
        let error = parse("startTime=1745008457153").unwrap_err();
        assert_eq!(error.field(), Some("startTime"));
        assert!(error.to_string().contains("milliseconds"), "{error}");
        assert!(parse(&format!("endTime={MAX_UNIX_SECONDS}")).is_ok());
    }

    #[test]
    fn text_query_is_case_insensitive() {
        let query = parse("query=ERROR%20x").unwrap();
        assert_eq!(query.query.as_deref(), Some("error%20x"));
        assert!(matches_query("An Error occurred", "error"));
        assert!(matches_query("ÉCHEC total", "échec"));
        assert!(!matches_query("all good", "error"));
    }

    #[test]
    fn cursors_are_bound_to_their_filters() {
        let fingerprint = "0123456789abcdef01234567";
        let position = position(
            1_745_008_457_153_744_602,
            "38000000000000000000000000000001",
        );
        let cursor = cursor::encode(fingerprint, &position);
        assert_eq!(cursor::decode(&cursor, fingerprint).unwrap(), position);
        for bad in [cursor.as_str(), "garbage", "", "djEuYWJj"] {
            let error = cursor::decode(bad, "ffffffffffffffffffffffff").unwrap_err();
            assert_eq!(error.field(), Some("cursor"));
        }
    }

    #[test]
    fn totals_cap_at_the_result_window() {
        assert_eq!(
            Total::exact_or_bound(7, true),
            Total {
                value: 7,
                relation: "eq"
            }
        );
        assert_eq!(
            Total::exact_or_bound(10_000, true),
            Total {
                value: 10_000,
                relation: "eq"
            }
        );
        assert_eq!(
            Total::exact_or_bound(10_001, true),
            Total {
                value: 10_000,
                relation: "gte"
            }
        );
        assert_eq!(
            Total::exact_or_bound(42, false),
            Total {
                value: 42,
                relation: "gte"
            }
        );
    }
}
