//! One line as a subscription delivers it: an event id made from the line alone, its Unix
//! milliseconds, and its message in CRI form, which the ingest function parses back
//! (`shared::logs::parse_message`) so that the engine's nanoseconds are kept.

use shared::logs::rfc3339_nanos;
use time::OffsetDateTime;

use crate::engine::{LogLine, Output};
use crate::replica::ReplicaId;

/// (event id, Unix milliseconds, message), as `ports::LineBatch` carries them.
pub type Event = (String, i64, String);

/// What marks a line the data plane itself writes into an agent's log.
pub const PLATFORM_PREFIX: &str = "[agent-hosting] ";

/// A time as Unix nanoseconds; 0 before 1970 (no engine dates a line so).
pub fn unix_nanos(at: OffsetDateTime) -> u64 {
    u64::try_from(at.unix_timestamp_nanos()).unwrap_or(0)
}

/// Gives each line of one replica its ordinal among the lines of the same nanosecond, so that
/// two lines of one instant get two ids, and a line read again from the start the same one.
#[derive(Debug)]
pub struct Ids {
    /// CRC-32 of the replica's id: lines of two replicas at one instant differ.
    replica: u32,
    last_nanos: u64,
    ordinal: u32,
}

impl Ids {
    pub fn new(replica: &ReplicaId) -> Self {
        Ids {
            replica: crc32fast::hash(replica.0.as_bytes()),
            last_nanos: u64::MAX,
            ordinal: 0,
        }
    }

    /// The event of the replica's next line.
    pub fn event(&mut self, line: &LogLine) -> Event {
        let nanos = unix_nanos(line.at);
        if nanos == self.last_nanos {
            self.ordinal = self.ordinal.saturating_add(1);
        } else {
            (self.last_nanos, self.ordinal) = (nanos, 0);
        }
        event(
            nanos,
            self.replica,
            self.ordinal,
            line.output,
            line.partial,
            &line.text,
        )
    }
}

/// The event of a line: its id is digits only (`{nanos:020}{crc:010}{ordinal:04}`), as
/// CloudWatch's are; the ingest adds `-002`… to the parts of a split line, which sort after it.
pub fn event(
    nanos: u64,
    crc: u32,
    ordinal: u32,
    output: Output,
    partial: bool,
    text: &str,
) -> Event {
    let id = format!("{nanos:020}{crc:010}{ordinal:04}");
    let millis = i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX);
    let form = if partial { "P" } else { "F" };
    let message = format!("{} {} {form} {text}", rfc3339_nanos(nanos), output.as_str());
    (id, millis, message)
}

/// The event of a line the data plane writes into an agent's log at `at`, on stderr. Its id's
/// middle is the CRC-32 of the message's text, since no replica wrote it.
pub fn platform_event(at: OffsetDateTime, text: &str) -> Event {
    let text = format!("{PLATFORM_PREFIX}{text}");
    let crc = crc32fast::hash(text.as_bytes());
    event(unix_nanos(at), crc, 0, Output::Stderr, false, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(nanos: i128, text: &str) -> LogLine {
        LogLine {
            at: OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap(),
            output: Output::Stdout,
            partial: false,
            text: text.into(),
        }
    }

    #[test]
    fn the_ingest_reads_back_the_engines_nanoseconds_and_the_text() {
        let nanos = 1_745_008_457_153_744_602;
        let mut ids = Ids::new(&ReplicaId("c0ffee".into()));
        let (id, millis, message) = ids.event(&line(nanos, "hello | world  "));
        assert_eq!(millis, 1_745_008_457_153);
        assert_eq!(
            message,
            "2025-04-18T20:34:17.153744602Z stdout F hello | world  "
        );
        let (parsed_nanos, text) = shared::logs::parse_message(&message, 0);
        assert_eq!(parsed_nanos, nanos as u64);
        assert_eq!(text, "hello | world  ");
        assert!(id.bytes().all(|b| b.is_ascii_digit()), "{id}");
        assert!(id.len() <= shared::logs::MAX_EVENT_ID_LENGTH);
    }

    #[test]
    fn a_part_of_a_split_line_is_marked_p_and_stderr_is_named() {
        let (_, _, message) = event(0, 1, 0, Output::Stderr, true, "part");
        assert_eq!(message, "1970-01-01T00:00:00.000000000Z stderr P part");
        assert_eq!(shared::logs::parse_message(&message, 5), (0, "part"));
    }

    #[test]
    fn lines_of_one_instant_get_ordered_ids_and_a_reread_line_the_same_id() {
        let replica = ReplicaId("c0ffee".into());
        let lines = [line(10, "a"), line(10, "b"), line(11, "c")];
        let read = || {
            let mut ids = Ids::new(&replica);
            lines.iter().map(|l| ids.event(l).0).collect::<Vec<_>>()
        };
        let (first, second) = (read(), read());
        assert_eq!(first, second);
        assert!(first[0] < first[1] && first[1] < first[2], "{first:?}");
        let other = Ids::new(&ReplicaId("beef".into())).event(&lines[0]).0;
        assert_ne!(other, first[0]);
    }

    #[test]
    fn a_platform_line_is_marked_and_on_stderr() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_000_000_001).unwrap();
        let (_, _, message) = platform_event(at, "replica started");
        assert_eq!(
            shared::logs::parse_message(&message, 0),
            (1_700_000_000_000_000_001, "[agent-hosting] replica started")
        );
        assert!(message.contains(" stderr F "), "{message}");
    }
}
