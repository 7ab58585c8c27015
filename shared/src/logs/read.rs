//! Answering a logs request: the page, `total` and the next cursor, at bounded cost.

use serde::Serialize;

use std::ops::Range;

use super::cursor::CursorKey;
use super::filter::{LogFilter, Placement};
use super::line::{position_nanos, rfc3339_nanos};
use super::query::{LogQuery, QUERY_READ_BUDGET, RESULT_WINDOW};
use super::store::{LogStore, StoredLine};
use super::text::matches_query;
use crate::ApiError;
use crate::error::StoreError;

/// How many items one request of a text query's pass asks for: the matches are not known
/// before the items are read, so a pass reads in pieces of this size up to its budget.
const TEXT_SCAN_PAGE: usize = 1_000;

/// The most a page's entries may take as JSON. Lambda answers at most 6 MB, and a line of
/// control characters escapes to six bytes each: a page stops before this many bytes (its
/// `nextCursor` continues), whatever its `limit`; it always holds at least one entry.
pub const PAGE_BYTE_BUDGET: usize = 4 * 1024 * 1024;

/// What a page entry's members take as JSON, exactly for the strings, a bound for the rest.
fn entry_json_bytes(line: &StoredLine) -> usize {
    // `{"log":…,"timestamp":"<30 characters>","deploymentId":…,"sessionId":…}` and a comma.
    const FIXED: usize = 100;
    FIXED
        + json_string_bytes(&line.text)
        + json_string_bytes(&line.deployment_id)
        + line.session_id.as_deref().map_or(0, json_string_bytes)
}

/// The length of `text` as a JSON string (quotes included), as serde_json writes it.
fn json_string_bytes(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// What one pass over an agent's lines found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Scan {
    /// The matching lines whose index among the matches was in the requested window.
    kept: Vec<StoredLine>,
    /// Matching lines seen.
    matches: usize,
    /// Items read from the store.
    items_read: usize,
    /// Whether the pass reached the end of the range.
    exhausted: bool,
    /// The position of the last item read, when the pass stopped early.
    last_read: Option<String>,
    /// What the kept lines take as JSON.
    kept_bytes: usize,
    /// Whether a line of the window was left out for the byte budget: the page ends at the
    /// last kept line.
    byte_budget_reached: bool,
}

/// How far one pass may go.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ScanLimits {
    keep: Range<usize>,
    /// Stop once this many lines matched.
    stop_after_matches: usize,
    /// Stop once this many items were read.
    read_budget: usize,
    /// Keep no more lines once the kept ones take this many bytes as JSON.
    byte_budget: usize,
}

/// One ordered pass over the lines matching `filter` (its text query included), after `after`
/// if given, request by request until the limits say stop or the range ends.
async fn scan<S: LogStore>(
    store: &S,
    filter: &LogFilter,
    after: Option<&str>,
    limits: &ScanLimits,
) -> Result<Scan, StoreError> {
    let mut scan = Scan::default();
    let mut resume = after.map(str::to_owned);
    loop {
        let budget_left = limits.read_budget.saturating_sub(scan.items_read);
        let matches_left = limits.stop_after_matches.saturating_sub(scan.matches);
        // Without a text query every unexpired line read matches, so ask for exactly what is
        // still needed.
        let want = match filter.query {
            Some(_) => budget_left.min(TEXT_SCAN_PAGE),
            None => budget_left.min(matches_left),
        };
        if want == 0 {
            return Ok(scan);
        }
        let read = store.read_lines(filter, resume.as_deref(), want).await?;
        scan.items_read += read.items_read;
        for line in read.lines {
            let position = line.position.clone();
            let matched = filter
                .query
                .as_deref()
                .is_none_or(|query| matches_query(&line.text, query));
            if matched {
                if limits.keep.contains(&scan.matches) && !scan.byte_budget_reached {
                    let bytes = entry_json_bytes(&line);
                    if scan.kept_bytes + bytes > limits.byte_budget && !scan.kept.is_empty() {
                        // Counting goes on; keeping stops.
                        scan.byte_budget_reached = true;
                    } else {
                        scan.kept_bytes += bytes;
                        scan.kept.push(line);
                    }
                }
                scan.matches += 1;
            }
            scan.last_read = Some(position);
            if scan.matches >= limits.stop_after_matches {
                return Ok(scan);
            }
        }
        match read.resume_after {
            None => {
                scan.exhausted = true;
                return Ok(scan);
            }
            Some(position) => {
                scan.last_read = Some(position.clone());
                resume = Some(position);
            }
        }
    }
}

/// What a count found: the unexpired lines of the range (without the text query), whether
/// the count reached the end of the range, and the items read.
struct Count {
    lines: usize,
    complete: bool,
    items_read: usize,
}

/// Counts the lines matching `filter` without its text query after `after` if given, reading
/// at most `max_reads` items.
async fn count<S: LogStore>(
    store: &S,
    filter: &LogFilter,
    after: Option<&str>,
    max_reads: usize,
) -> Result<Count, StoreError> {
    let mut count = Count {
        lines: 0,
        complete: false,
        items_read: 0,
    };
    let mut resume = after.map(str::to_owned);
    loop {
        let want = max_reads.saturating_sub(count.items_read);
        if want == 0 {
            return Ok(count);
        }
        let counted = store.count_lines(filter, resume.as_deref(), want).await?;
        count.lines += counted.count;
        count.items_read += counted.items_read;
        match counted.resume_after {
            None => {
                count.complete = true;
                return Ok(count);
            }
            Some(position) => resume = Some(position),
        }
    }
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
/// serves both the page and `total`; after a cursor, a second pass on a budget of its own counts
/// the matches the earlier pages covered, alongside the page.
pub async fn read<S: LogStore>(
    store: &S,
    filter: &LogFilter,
    query: &LogQuery,
    cursor_key: &CursorKey,
) -> Result<(LogsPage, ReadCost), ApiError> {
    let fingerprint = filter.fingerprint(query.start_time, query.end_time);
    let after = query
        .cursor
        .as_deref()
        .map(|cursor| cursor_key.decode(cursor, &fingerprint))
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
        scan(store, filter, start_after, &limits).await
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

    // What the earlier pages covered (the range up to the cursor) is counted alongside this
    // page, so that every page of a walk says the same total.
    let passed = after.as_deref().and_then(|cursor| filter.through(cursor));
    let (scan, total, total_items_read) = if filter.query.is_some() {
        let limits = ScanLimits {
            keep,
            stop_after_matches: (window_end + 1).max(RESULT_WINDOW + 1),
            read_budget: QUERY_READ_BUDGET,
            byte_budget: PAGE_BYTE_BUDGET,
        };
        // Matching the text needs the lines: the passed range is read as the page is, on a
        // budget of its own.
        let before = async {
            match &passed {
                Some(passed) => {
                    let limits = ScanLimits {
                        keep: 0..0,
                        stop_after_matches: RESULT_WINDOW + 1,
                        read_budget: QUERY_READ_BUDGET,
                        byte_budget: 0,
                    };
                    scan(store, passed, None, &limits).await
                }
                None => Ok(Scan {
                    exhausted: true,
                    ..Scan::default()
                }),
            }
        };
        let (page, before) = tokio::join!(page_scan(limits), before);
        let (page, before) = (page?, before?);
        let total = Total::exact_or_bound(
            before.matches + page.matches,
            page.exhausted && before.exhausted,
        );
        (page, total, before.items_read)
    } else {
        let limits = ScanLimits {
            keep,
            stop_after_matches: window_end + 1,
            // Only lines written under a shorter retention are read without matching.
            read_budget: 2 * (RESULT_WINDOW + 1),
            byte_budget: PAGE_BYTE_BUDGET,
        };
        let page = page_scan(limits);
        // At most RESULT_WINDOW reads: with the page's first match that is enough to tell
        // "more than 10,000".
        let before = async {
            match &passed {
                Some(passed) => count(store, passed, None, RESULT_WINDOW).await,
                None => Ok(Count {
                    lines: 0,
                    complete: true,
                    items_read: 0,
                }),
            }
        };
        let (scan, before) = tokio::join!(page, before);
        let (scan, before) = (scan?, before?);
        let counted = before.lines + scan.matches;
        if scan.exhausted || !before.complete {
            let total = Total::exact_or_bound(counted, before.complete);
            (scan, total, before.items_read)
        } else {
            // Whether there are more than RESULT_WINDOW matches is known after RESULT_WINDOW + 1
            // reads; the page's own reads count towards them.
            let max_reads = (RESULT_WINDOW + 1).saturating_sub(before.items_read + scan.items_read);
            let after_page = count(store, filter, scan.last_read.as_deref(), max_reads).await?;
            let total = Total::exact_or_bound(counted + after_page.lines, after_page.complete);
            (scan, total, before.items_read + after_page.items_read)
        }
    };

    let full_page = scan.kept.len() == query.limit;
    let next_position = if scan.byte_budget_reached {
        scan.kept.last().map(|line| line.position.clone())
    } else if full_page && (scan.matches > window_end || !scan.exhausted) {
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
        next_cursor: next_position.map(|position| cursor_key.encode(&fingerprint, &position)),
    };
    Ok((page, cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entrys_json_size_is_what_serde_json_writes() {
        for text in [
            "plain",
            "quote \" and backslash \\",
            "\n\r\t\u{8}\u{c}",
            "\u{0}\u{1}\u{1f} controls",
            "unicode é 🚀",
            &"\u{1}".repeat(1000),
        ] {
            let line = StoredLine {
                position: super::super::line::position(1_745_008_457_153_744_602, "1"),
                text: text.to_owned(),
                deployment_id: "d".repeat(36),
                session_id: Some("s".repeat(36)),
            };
            let written = serde_json::to_string(&LogEntry::from(line.clone())).unwrap();
            assert_eq!(
                json_string_bytes(text),
                serde_json::to_string(text).unwrap().len()
            );
            assert!(entry_json_bytes(&line) > written.len(), "{text:?}");
            assert!(entry_json_bytes(&line) <= written.len() + 20, "{text:?}");
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
