//! A stream's tail as this process first found it, and the lines it holds already.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use super::Event;

/// What a stream held when this process first wrote to it: its last events, read back. A
/// replica's line read again has the same time and message, so it is known by both; several
/// replicas of a deployment write into `{deploymentId}` and one may lag behind another, so a
/// line is taken as there already only when older than every event read or matched by one.
#[derive(Debug)]
pub struct Tail {
    /// Lines older than this are in the stream (`i64::MIN` when the whole stream was read).
    since: i64,
    /// The events read and not yet matched, by time and a hash of the message, counted.
    held: HashMap<(i64, u64), usize>,
}

fn held_key(at: i64, message: &str) -> (i64, u64) {
    let mut hasher = DefaultHasher::new();
    message.hash(&mut hasher);
    (at, hasher.finish())
}

impl Tail {
    /// The tail of `events` (Unix milliseconds, message) read back, the stream's last; `whole`
    /// when they are all it holds.
    pub fn new<'a>(events: impl IntoIterator<Item = (i64, &'a str)>, whole: bool) -> Tail {
        let mut tail = Tail {
            since: i64::MAX,
            held: HashMap::new(),
        };
        for (at, message) in events {
            tail.since = tail.since.min(at);
            *tail.held.entry(held_key(at, message)).or_default() += 1;
        }
        if whole {
            tail.since = i64::MIN;
        }
        tail
    }

    /// `events` less those the stream holds: older than the tail, or matched by one of its
    /// events of the same millisecond and message (each matches one line, then is spent).
    pub fn unseen(&mut self, events: Vec<Event>) -> Vec<Event> {
        events
            .into_iter()
            .filter(|(_, at, message)| {
                if *at < self.since {
                    return false;
                }
                match self.held.get_mut(&held_key(*at, message)) {
                    Some(count) if *count > 0 => {
                        *count -= 1;
                        false
                    }
                    _ => true,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at: i64, message: &str) -> Event {
        (String::new(), at, message.to_owned())
    }

    fn messages(events: &[Event]) -> Vec<&str> {
        events
            .iter()
            .map(|(_, _, message)| message.as_str())
            .collect()
    }

    /// The tail of `read` (the stream's last events), `whole` if they are all it holds.
    fn tail(read: &[(i64, &str)], whole: bool) -> Tail {
        Tail::new(read.iter().copied(), whole)
    }

    #[test]
    fn lines_of_the_tails_milliseconds_are_matched_by_message_not_by_time_alone() {
        // awslogs keeps milliseconds: many lines share one.
        let mut tail = tail(&[(5, "a"), (7, "b"), (7, "c")], false);
        let again = vec![
            event(5, "a"),
            event(7, "b"),
            event(7, "new at 7"),
            event(7, "c"),
            event(8, "d"),
        ];
        assert_eq!(messages(&tail.unseen(again)), ["new at 7", "d"]);
    }

    #[test]
    fn a_repeated_message_is_left_out_as_often_as_the_tail_holds_it() {
        let mut tail = tail(&[(7, "x"), (7, "x"), (7, "y")], false);
        let again = vec![event(7, "x"), event(7, "x"), event(7, "x"), event(7, "y")];
        assert_eq!(messages(&tail.unseen(again)), ["x"]);
        // Each match spent: the same line in a later batch is a new one.
        assert_eq!(messages(&tail.unseen(vec![event(7, "y")])), ["y"]);
    }

    #[test]
    fn lines_older_than_the_tail_are_left_out_unless_it_is_the_whole_stream() {
        let old = || vec![event(1, "old"), event(5, "a")];
        assert!(tail(&[(5, "a"), (6, "b")], false).unseen(old()).is_empty());
        // Read whole, a stream holds nothing older than its events.
        assert_eq!(
            messages(&tail(&[(5, "a"), (6, "b")], true).unseen(old())),
            ["old"]
        );
    }

    #[test]
    fn an_empty_tail_leaves_every_line_in() {
        let lines = vec![event(1, "a"), event(1, "a"), event(2, "b")];
        assert_eq!(tail(&[], true).unseen(lines.clone()), lines);
    }

    #[test]
    fn a_tail_newer_than_every_line_leaves_none_in() {
        let mut tail = tail(&[(10, "j"), (11, "k")], false);
        let lines = vec![event(1, "a"), event(2, "b"), event(9, "i")];
        assert!(tail.unseen(lines).is_empty());
    }

    #[test]
    fn a_lagging_replicas_lines_within_the_tail_are_kept() {
        // Two replicas write `{deploymentId}`: one's lines up to 9 were shipped, the other's
        // line at 6 not yet when the data plane stopped.
        let mut tail = tail(&[(5, "one 5"), (7, "one 7"), (9, "one 9")], false);
        let again = vec![event(5, "one 5"), event(6, "two 6"), event(7, "one 7")];
        assert_eq!(messages(&tail.unseen(again)), ["two 6"]);
    }
}
