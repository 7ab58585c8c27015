//! The Forward protocol's messages (fluentd's, what Docker's fluentd log driver speaks), read
//! with rmpv: Message mode `[tag, time, record, option?]` (Docker's), Forward mode
//! `[tag, [[time, record], ...], option?]` and PackedForward mode `[tag, bin, option?]` (a
//! stream of `[time, record]`), each record one line with Docker's members (`container_id`,
//! `source`, `log`, and `partial_message`/`partial_last` for a line the Engine split). An
//! option `chunk` asks for an acknowledgement.

use std::io;

use rmpv::Value;
use time::OffsetDateTime;

use crate::engine::{LogLine, Output};

/// What decoding the start of a connection's bytes gave.
pub enum Decoded {
    /// A whole value, and the bytes it took.
    Value(Value, usize),
    /// Not a whole value yet: more bytes are needed.
    Incomplete,
    Invalid(rmpv::decode::Error),
}

/// The first msgpack value of `bytes`, and how many bytes it took.
pub fn decode(bytes: &[u8]) -> Decoded {
    if bytes.is_empty() {
        return Decoded::Incomplete;
    }
    let mut rest = bytes;
    match rmpv::decode::read_value(&mut rest) {
        Ok(value) => Decoded::Value(value, bytes.len() - rest.len()),
        Err(
            rmpv::decode::Error::InvalidMarkerRead(ref error)
            | rmpv::decode::Error::InvalidDataRead(ref error),
        ) if error.kind() == io::ErrorKind::UnexpectedEof => Decoded::Incomplete,
        Err(error) => Decoded::Invalid(error),
    }
}

/// One message: its entries (time and record) and its option.
#[derive(Debug, Default)]
pub struct Message {
    entries: Vec<(Value, Value)>,
    option: Option<Value>,
}

impl Message {
    /// The message a value is; one of no mode has no entries.
    pub fn of(value: Value) -> Self {
        let Value::Array(items) = value else {
            return Message::default();
        };
        let mut items = items.into_iter().skip(1);
        let (Some(second), third, fourth) = (items.next(), items.next(), items.next()) else {
            return Message::default();
        };
        match second {
            Value::Array(entries) => Message {
                entries: entries.into_iter().filter_map(pair).collect(),
                option: third,
            },
            Value::Binary(packed) => Message {
                entries: unpacked(&packed),
                option: third,
            },
            Value::String(packed) => Message {
                entries: unpacked(packed.as_bytes()),
                option: third,
            },
            time => Message {
                entries: third.map(|record| (time, record)).into_iter().collect(),
                option: fourth,
            },
        }
    }

    /// The acknowledgement the option's `chunk` asks for, encoded: `{"ack": chunk}`.
    pub fn ack(&self) -> Option<Vec<u8>> {
        let chunk = member(self.option.as_ref()?, "chunk")?.clone();
        let ack = Value::Map(vec![(Value::from("ack"), chunk)]);
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &ack).ok()?;
        Some(bytes)
    }

    /// Each entry's container and line; a record without a container or a line is skipped.
    pub fn lines(self) -> Vec<(String, LogLine)> {
        self.entries
            .into_iter()
            .filter_map(|(time, record)| {
                let container = text(member(&record, "container_id")?)?;
                let log = member(&record, "log")?;
                let split = (member(&record, "partial_message").and_then(text))
                    .is_some_and(|message| message == "true");
                let last = member(&record, "partial_last").and_then(text);
                let line = LogLine {
                    at: time_of(&time),
                    output: output_of(member(&record, "source").and_then(text).as_deref()),
                    partial: split && last.as_deref() != Some("true"),
                    text: text(log)?,
                };
                Some((container, line))
            })
            .collect()
    }
}

/// `[time, record]`.
fn pair(entry: Value) -> Option<(Value, Value)> {
    let Value::Array(items) = entry else {
        return None;
    };
    let mut items = items.into_iter();
    Some((items.next()?, items.next()?))
}

/// The `[time, record]` entries packed one after another in `bytes`.
fn unpacked(mut bytes: &[u8]) -> Vec<(Value, Value)> {
    let mut entries = Vec::new();
    while !bytes.is_empty() {
        match rmpv::decode::read_value(&mut bytes) {
            Ok(entry) => entries.extend(pair(entry)),
            Err(_) => break,
        }
    }
    entries
}

/// A map's member by its name.
fn member<'a>(map: &'a Value, name: &str) -> Option<&'a Value> {
    let Value::Map(members) = map else {
        return None;
    };
    members
        .iter()
        .find(|(key, _)| key.as_str() == Some(name))
        .map(|(_, value)| value)
}

/// A string or binary value as text (bytes that are not UTF-8 replaced, as the Engine's other
/// log readers do).
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(String::from_utf8_lossy(text.as_bytes()).into_owned()),
        Value::Binary(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        _ => None,
    }
}

/// A line's time as the protocol gives it: an EventTime (seconds and nanoseconds), or whole
/// seconds; now for anything else.
fn time_of(value: &Value) -> OffsetDateTime {
    let nanos = match value {
        Value::Ext(0, data) if data.len() == 8 => {
            let seconds = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
            let nanos = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
            Some(i128::from(seconds) * 1_000_000_000 + i128::from(nanos))
        }
        Value::Integer(seconds) => seconds.as_i64().map(|s| i128::from(s) * 1_000_000_000),
        _ => None,
    };
    nanos
        .and_then(|nanos| OffsetDateTime::from_unix_timestamp_nanos(nanos).ok())
        .unwrap_or_else(OffsetDateTime::now_utc)
}

/// Which output a record's `source` names.
fn output_of(source: Option<&str>) -> Output {
    match source {
        Some("stderr") => Output::Stderr,
        _ => Output::Stdout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const ID: &str = "5609902bb1459e1cc6e1fb90f9f5c14fdee6eaaf3696bb19b0903a0c05c4c30c";

    fn event_time(seconds: u32, nanos: u32) -> Value {
        let mut data = seconds.to_be_bytes().to_vec();
        data.extend(nanos.to_be_bytes());
        Value::Ext(0, data)
    }

    fn record(source: &str, log: &str, partial: Option<bool>) -> Value {
        let mut members = vec![
            (Value::from("container_id"), Value::from(ID)),
            (Value::from("container_name"), Value::from("/ah-run-9000-x")),
            (Value::from("source"), Value::from(source)),
            (Value::from("log"), Value::from(log)),
        ];
        if let Some(last) = partial {
            members.push((Value::from("partial_message"), Value::from("true")));
            members.push((Value::from("partial_last"), Value::from(last.to_string())));
        }
        Value::Map(members)
    }

    fn encoded(value: &Value) -> Vec<u8> {
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, value).unwrap();
        bytes
    }

    #[test]
    fn dockers_message_gives_the_line_its_nanoseconds_its_output_and_its_container() {
        // What Docker 20.10's driver sends: [tag, EventTime, record, {}].
        let message = Value::Array(vec![
            Value::from("5609902bb145"),
            event_time(1_764_345_770, 123_456_789),
            record(
                "stderr",
                "2026-11-28 16:02:50.123 | INFO | bot:run:1 | NONE - ready",
                None,
            ),
            Value::Map(Vec::new()),
        ]);
        let Decoded::Value(value, used) = decode(&encoded(&message)) else {
            panic!("a whole value");
        };
        assert_eq!(used, encoded(&message).len());
        let message = Message::of(value);
        assert_eq!(message.ack(), None);
        let lines = message.lines();
        assert_eq!(lines.len(), 1);
        let (container, line) = &lines[0];
        assert_eq!(container, ID);
        assert_eq!(line.at, datetime!(2025-11-28 16:02:50.123456789 UTC));
        assert_eq!(line.output, Output::Stderr);
        assert!(!line.partial);
        assert!(line.text.ends_with("NONE - ready"));
    }

    #[test]
    fn a_split_lines_parts_but_the_last_are_partial() {
        let entries = Value::Array(vec![
            Value::Array(vec![
                event_time(1, 0),
                record("stdout", "aaaa", Some(false)),
            ]),
            Value::Array(vec![event_time(1, 1), record("stdout", "bb", Some(true))]),
            Value::Array(vec![Value::from(2), record("stdout", "whole", None)]),
        ]);
        let message = Message::of(Value::Array(vec![Value::from("tag"), entries]));
        let parts: Vec<(bool, String)> = (message.lines().into_iter())
            .map(|(_, line)| (line.partial, line.text))
            .collect();
        assert_eq!(
            parts,
            [
                (true, "aaaa".into()),
                (false, "bb".into()),
                (false, "whole".into())
            ]
        );
    }

    #[test]
    fn packed_entries_are_read_and_a_chunk_is_acknowledged() {
        let mut packed = encoded(&Value::Array(vec![
            event_time(1, 0),
            record("stdout", "one", None),
        ]));
        packed.extend(encoded(&Value::Array(vec![
            event_time(1, 5),
            record("stdout", "two", None),
        ])));
        let option = Value::Map(vec![(Value::from("chunk"), Value::from("c-1"))]);
        let message = Message::of(Value::Array(vec![
            Value::from("tag"),
            Value::Binary(packed),
            option,
        ]));
        let ack = message.ack().expect("a chunk asks for an ack");
        let Decoded::Value(ack, _) = decode(&ack) else {
            panic!("an ack");
        };
        assert_eq!(
            ack,
            Value::Map(vec![(Value::from("ack"), Value::from("c-1"))])
        );
        let texts: Vec<String> = message.lines().into_iter().map(|(_, l)| l.text).collect();
        assert_eq!(texts, ["one", "two"]);
    }

    #[test]
    fn a_message_cut_short_waits_for_its_rest_and_garbage_is_refused() {
        let whole = encoded(&Value::Array(vec![
            Value::from("t"),
            event_time(1, 0),
            record("stdout", "line", None),
        ]));
        for cut in [1, whole.len() / 2, whole.len() - 1] {
            assert!(
                matches!(decode(&whole[..cut]), Decoded::Incomplete),
                "{cut}"
            );
        }
        // Arrays nested past rmpv's depth limit: never a message, whatever follows.
        assert!(matches!(decode(&[0x91; 2048]), Decoded::Invalid(_)));
        let nothing = Message::of(Value::from("not an array"));
        assert!(nothing.lines().is_empty());
    }
}
