//! Answering a logs request: the page, `total` and the next cursor, at bounded cost.

use serde::Serialize;

use std::ops::Range;

use super::cursor;
use super::filter::{LogFilter, Placement};
use super::line::{position_nanos, rfc3339_nanos};
use super::merge::{Count, OrderedLines, count_lines};
use super::query::{LogQuery, QUERY_READ_BUDGET, RESULT_WINDOW};
use super::store::{LogStore, StoredLine};
use super::text::matches_query;
use crate::ApiError;
use crate::cursor::CursorKey;
use crate::error::StoreError;

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
    /// Lines read from the store.
    items_read: usize,
    /// Whether the pass reached the end of the range.
    exhausted: bool,
    /// Where a later pass continues when this one stopped early: every line before it (in
    /// reading order) was seen by this pass.
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
    /// Stop once this many lines were read.
    read_budget: usize,
    /// Keep no more lines once the kept ones take this many bytes as JSON.
    byte_budget: usize,
}

/// One ordered pass over `lines`, matching `filter`'s text query, until the limits say stop or
/// the range ends.
async fn scan<S: LogStore>(
    lines: &mut OrderedLines<'_, S>,
    filter: &LogFilter,
    limits: &ScanLimits,
) -> Result<Scan, StoreError> {
    let mut scan = Scan::default();
    while scan.matches < limits.stop_after_matches {
        let Some(line) = lines.next(limits.read_budget).await? else {
            break;
        };
        let matched = filter
            .query
            .as_deref()
            .is_none_or(|query| matches_query(&line.text, query));
        let position = line.position.clone();
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
    }
    scan.items_read = lines.lines_read();
    scan.exhausted = lines.exhausted();
    if !scan.exhausted && scan.matches < limits.stop_after_matches {
        // Stopped by the read budget: as far as every line is known to have been seen.
        scan.last_read = lines.known_through().or(scan.last_read);
    }
    Ok(scan)
}

/// The page's pass: none when the cursor is past the range (nothing follows it).
async fn page_pass<S: LogStore>(
    lines: &mut OrderedLines<'_, S>,
    filter: &LogFilter,
    limits: &ScanLimits,
    past_range: bool,
) -> Result<Scan, StoreError> {
    if past_range {
        return Ok(Scan {
            exhausted: true,
            ..Scan::default()
        });
    }
    scan(lines, filter, limits).await
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

/// Lines read from the store to answer one request (before lines were kept in chunks, items:
/// the names, which the logs function logs, stayed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadCost {
    pub page_items_read: usize,
    pub total_items_read: usize,
}

/// Answers a logs request for one agent (whose existence the caller checked).
///
/// Without a text query: the page reads until offset + limit + 1 lines are known (the one extra
/// tells whether more follow), and `total` adds to the page's own matches a count of what lies
/// before the cursor (if any, alongside the page) and after the page (the lines the page read
/// past its end first, without reading them again). The page's reads count towards the 10,001
/// lines it takes to tell "exactly 10,000" from "more", so counting itself never reads more than
/// 10,000 (the contract's bound); no count runs when the page reached the end of the range.
/// With a text query: one pass reads at most [`QUERY_READ_BUDGET`] lines of the time range, and
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
        .map(|text| cursor::decode(cursor_key, text, &fingerprint))
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
    let mut page_lines = OrderedLines::new(store, filter, start_after);

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
                    scan(&mut OrderedLines::new(store, passed, None), passed, &limits).await
                }
                None => Ok(Scan {
                    exhausted: true,
                    ..Scan::default()
                }),
            }
        };
        let page = page_pass(&mut page_lines, filter, &limits, finished);
        let (page, before) = tokio::join!(page, before);
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
        let page = page_pass(&mut page_lines, filter, &limits, finished);
        // At most RESULT_WINDOW reads: with the page's first match that is enough to tell
        // "more than 10,000".
        let before = async {
            match &passed {
                Some(passed) => count_lines(store, passed, RESULT_WINDOW).await,
                None => Ok(Count {
                    lines: 0,
                    complete: true,
                    lines_read: 0,
                }),
            }
        };
        let (scan, before) = tokio::join!(page, before);
        let (scan, before) = (scan?, before?);
        let counted = before.lines + scan.matches;
        if scan.exhausted || !before.complete {
            let total = Total::exact_or_bound(counted, before.complete);
            (scan, total, before.lines_read)
        } else {
            // Whether there are more than RESULT_WINDOW matches is known after RESULT_WINDOW + 1
            // reads; the page's own reads count towards them, and the lines it read past its end
            // are counted without reading them again.
            let budget = (RESULT_WINDOW + 1).saturating_sub(before.lines_read);
            let (after_page, complete) = page_lines.count_rest(budget).await?;
            let total = Total::exact_or_bound(counted + after_page, complete);
            let counting_read = page_lines.lines_read() - scan.items_read;
            (scan, total, before.lines_read + counting_read)
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
        next_cursor: next_position
            .map(|position| cursor::encode(cursor_key, &fingerprint, &position)),
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
