//! Where lines come from (contract section 5): log groups and streams name the agent, the
//! deployment and the session; a message in CRI form carries its own time.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::line::PART_SUFFIX_LENGTH;
use super::query::MAX_ID_LENGTH;
use crate::validation::is_dns_label;

pub const LOG_GROUP_PREFIX: &str = "/agent-hosting/";

/// The most of a line's text one stored line holds. CloudWatch takes events of up to 1 MB and a
/// DynamoDB item at most 400 KB; a longer line is stored as consecutive parts, each marked.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// How far ahead of its arrival a line's own time may be. A later time (a clock gone wrong, a
/// CRI line dated 2500, an event time of i64::MAX) would be kept for centuries and head every
/// newest-first page: the line takes its arrival time instead.
pub const MAX_AHEAD_OF_ARRIVAL_NANOS: u64 = 86_400 * 1_000_000_000;

/// A line's time: its own, unless that is more than a day ahead of its arrival.
pub fn bounded_time(own_nanos: u64, arrival_nanos: u64) -> u64 {
    if own_nanos > arrival_nanos.saturating_add(MAX_AHEAD_OF_ARRIVAL_NANOS) {
        arrival_nanos
    } else {
        own_nanos
    }
}

/// A line's text as stored: whole when it fits [`MAX_LINE_BYTES`], else cut at character
/// boundaries into parts of at most that many bytes (before the marker), each ending in
/// ` [part k/n of a split line]`. The parts of a line keep its time; their event ids are the
/// line's with `-002`, `-003`… added, which sort right after it and in order (an event id of
/// CloudWatch is digits, which sort after `-`).
pub fn split_text(text: &str) -> Vec<(String, String)> {
    if text.len() <= MAX_LINE_BYTES {
        return vec![(String::new(), text.to_owned())];
    }
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(MAX_LINE_BYTES);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, after) = rest.split_at(cut);
        pieces.push(piece);
        rest = after;
    }
    let count = pieces.len();
    debug_assert!(format!("-{count:03}").len() <= PART_SUFFIX_LENGTH);
    pieces
        .into_iter()
        .enumerate()
        .map(|(index, piece)| {
            let suffix = if index == 0 {
                String::new()
            } else {
                format!("-{:03}", index + 1)
            };
            let marked = format!("{piece} [part {}/{count} of a split line]", index + 1);
            (suffix, marked)
        })
        .collect()
}

/// Where a log stream's lines come from: its group's account and agent, its stream's deployment
/// and session (contract section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSource<'a> {
    pub namespace: &'a str,
    pub agent: &'a str,
    pub deployment_id: &'a str,
    pub session_id: Option<&'a str>,
}

impl<'a> LineSource<'a> {
    /// The source of group `/agent-hosting/{namespace}/{agentName}`, stream
    /// `{deploymentId}/{sessionId}` or `{deploymentId}`; `None` outside that scheme.
    pub fn parse(group: &'a str, stream: &'a str) -> Option<Self> {
        let (namespace, agent) = parse_log_group(group)?;
        let (deployment_id, session_id) = parse_log_stream(stream)?;
        Some(LineSource {
            namespace,
            agent,
            deployment_id,
            session_id,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_dated_more_than_a_day_ahead_takes_its_arrival_time() {
        let arrival = 1_800_000_000_000_000_000;
        let hour = 3_600_000_000_000;
        assert_eq!(bounded_time(arrival - hour, arrival), arrival - hour);
        assert_eq!(bounded_time(arrival + hour, arrival), arrival + hour);
        assert_eq!(
            bounded_time(arrival + MAX_AHEAD_OF_ARRIVAL_NANOS, arrival),
            arrival + MAX_AHEAD_OF_ARRIVAL_NANOS
        );
        assert_eq!(
            bounded_time(arrival + MAX_AHEAD_OF_ARRIVAL_NANOS + 1, arrival),
            arrival
        );
        // A CRI line of the year 2500, and an event time of i64::MAX milliseconds.
        let (year_2500, _) = parse_message("2500-01-01T00:00:00Z stdout F late", 0);
        assert_eq!(bounded_time(year_2500, arrival), arrival);
        let (max, _) = parse_message("plain", i64::MAX);
        assert_eq!(bounded_time(max, arrival), arrival);
    }

    #[test]
    fn a_line_over_the_limit_is_split_into_marked_parts_that_keep_every_character() {
        assert_eq!(
            split_text("short"),
            vec![(String::new(), "short".to_owned())]
        );
        let exact = "a".repeat(MAX_LINE_BYTES);
        assert_eq!(split_text(&exact), vec![(String::new(), exact.clone())]);
        // 1 MB of two-byte characters: cut at character boundaries only.
        let long = "é".repeat(512 * 1024);
        let parts = split_text(&long);
        assert_eq!(parts.len(), 16);
        let mut joined = String::new();
        for (index, (suffix, text)) in parts.iter().enumerate() {
            let marker = format!(" [part {}/16 of a split line]", index + 1);
            let piece = text.strip_suffix(&marker).expect("marked");
            assert!(piece.len() <= MAX_LINE_BYTES);
            joined.push_str(piece);
            let expected = if index == 0 {
                String::new()
            } else {
                format!("-{:03}", index + 1)
            };
            assert_eq!(*suffix, expected);
        }
        assert_eq!(joined, long);
    }

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
}
