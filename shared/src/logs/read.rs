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

pub use crate::paging::{Relation, Total};

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

/// Lines read from the store to answer one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadCost {
    /// Read by the page's own pass.
    pub page_lines_read: usize,
    /// Read only to count `total`.
    pub total_lines_read: usize,
}

/// The page's pass and the count of the lines around it.
struct Counted {
    page: Scan,
    total: Total,
    total_lines_read: usize,
}

/// Where the page starts and what the earlier pages covered.
struct Walk<'a, S> {
    /// The window of matches the page keeps.
    keep: Range<usize>,
    /// The page's lines, read after the cursor when it falls in the range.
    page_lines: OrderedLines<'a, S>,
    /// The range up to the cursor, counted alongside this page so that every page of a walk
    /// says the same total.
    passed: Option<LogFilter>,
    /// The cursor lies past the range: nothing follows it.
    finished: bool,
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
    let walk = Walk::new(store, filter, query, after.as_deref());
    let counted = if filter.query.is_some() {
        read_matching(store, filter, walk).await?
    } else {
        read_all(store, filter, walk).await?
    };
    let next_position = next_position(&counted.page, filter, query);
    let cost = ReadCost {
        page_lines_read: counted.page.items_read,
        total_lines_read: counted.total_lines_read,
    };
    let page = LogsPage {
        total: counted.total,
        logs: counted.page.kept.into_iter().map(LogEntry::from).collect(),
        next_cursor: next_position
            .map(|position| cursor::encode(cursor_key, &fingerprint, &position)),
    };
    Ok((page, cost))
}

impl<'a, S: LogStore> Walk<'a, S> {
    fn new(store: &'a S, filter: &'a LogFilter, query: &LogQuery, after: Option<&str>) -> Self {
        // DynamoDB refuses a start key outside the key condition, and a cursor can fall outside
        // the range honestly (newest first, the retention start moves past old positions) or be
        // forged: before the range, read it from its start; past it, nothing follows.
        let placement = after.map(|position| filter.locate(position));
        let start_after = after.filter(|_| placement == Some(Placement::InRange));
        Walk {
            keep: query.offset..query.offset + query.limit,
            page_lines: OrderedLines::new(store, filter, start_after),
            passed: after.and_then(|cursor| filter.through(cursor)),
            finished: placement == Some(Placement::PastRange),
        }
    }
}

/// With a text query: matching needs the lines, so the passed range is read as the page is, on
/// a budget of its own, and one pass serves both the page and its part of `total`.
async fn read_matching<S: LogStore>(
    store: &S,
    filter: &LogFilter,
    mut walk: Walk<'_, S>,
) -> Result<Counted, StoreError> {
    let limits = ScanLimits {
        stop_after_matches: (walk.keep.end + 1).max(RESULT_WINDOW + 1),
        keep: walk.keep,
        read_budget: QUERY_READ_BUDGET,
        byte_budget: PAGE_BYTE_BUDGET,
    };
    let before = async {
        match &walk.passed {
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
    let page = page_pass(&mut walk.page_lines, filter, &limits, walk.finished);
    let (page, before) = tokio::join!(page, before);
    let (page, before) = (page?, before?);
    let total = Total::exact_or_bound(
        before.matches + page.matches,
        page.exhausted && before.exhausted,
    );
    Ok(Counted {
        page,
        total,
        total_lines_read: before.items_read,
    })
}

/// Without a text query: every line of the range matches, so what lies around the page is
/// counted rather than scanned.
async fn read_all<S: LogStore>(
    store: &S,
    filter: &LogFilter,
    mut walk: Walk<'_, S>,
) -> Result<Counted, StoreError> {
    let limits = ScanLimits {
        stop_after_matches: walk.keep.end + 1,
        keep: walk.keep,
        // Only lines written under a shorter retention are read without matching.
        read_budget: 2 * (RESULT_WINDOW + 1),
        byte_budget: PAGE_BYTE_BUDGET,
    };
    let page = page_pass(&mut walk.page_lines, filter, &limits, walk.finished);
    // At most RESULT_WINDOW reads: with the page's first match that is enough to tell
    // "more than 10,000".
    let before = async {
        match &walk.passed {
            Some(passed) => count_lines(store, passed, RESULT_WINDOW).await,
            None => Ok(Count {
                lines: 0,
                complete: true,
                lines_read: 0,
            }),
        }
    };
    let (page, before) = tokio::join!(page, before);
    let (page, before) = (page?, before?);
    let counted = before.lines + page.matches;
    if page.exhausted || !before.complete {
        return Ok(Counted {
            total: Total::exact_or_bound(counted, before.complete),
            page,
            total_lines_read: before.lines_read,
        });
    }
    // Whether there are more than RESULT_WINDOW matches is known after RESULT_WINDOW + 1 reads;
    // the page's own reads count towards them, and the lines it read past its end are counted
    // without reading them again.
    let budget = (RESULT_WINDOW + 1).saturating_sub(before.lines_read);
    let (after_page, complete) = walk.page_lines.count_rest(budget).await?;
    let counting_read = walk.page_lines.lines_read() - page.items_read;
    Ok(Counted {
        total: Total::exact_or_bound(counted + after_page, complete),
        page,
        total_lines_read: before.lines_read + counting_read,
    })
}

/// Where the next page starts, if one follows.
fn next_position(page: &Scan, filter: &LogFilter, query: &LogQuery) -> Option<String> {
    let window_end = query.offset + query.limit;
    let full_page = page.kept.len() == query.limit;
    if page.byte_budget_reached || (full_page && (page.matches > window_end || !page.exhausted)) {
        page.kept.last().map(|line| line.position.clone())
    } else if !page.exhausted && filter.query.is_some() {
        // The read budget ran out before the page filled: continue where reading stopped.
        page.last_read.clone()
    } else {
        None
    }
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
    fn a_relation_is_written_as_the_contract_spells_it() {
        for (relation, text) in [(Relation::Eq, "eq"), (Relation::Gte, "gte")] {
            assert_eq!(serde_json::to_value(relation).unwrap(), text);
            assert_eq!(relation.to_string(), text);
        }
    }

    #[test]
    fn totals_cap_at_the_result_window() {
        assert_eq!(
            Total::exact_or_bound(7, true),
            Total {
                value: 7,
                relation: Relation::Eq
            }
        );
        assert_eq!(
            Total::exact_or_bound(10_000, true),
            Total {
                value: 10_000,
                relation: Relation::Eq
            }
        );
        assert_eq!(
            Total::exact_or_bound(10_001, true),
            Total {
                value: 10_000,
                relation: Relation::Gte
            }
        );
        assert_eq!(
            Total::exact_or_bound(42, false),
            Total {
                value: 42,
                relation: Relation::Gte
            }
        );
    }
}
