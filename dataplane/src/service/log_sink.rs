//! A replica's lines into section 5's log streams (CloudWatch Logs), whose group's subscription
//! delivers them to the ingest function. Each group is ensured once a process (created,
//! its retention and the subscription set before its first line, or that line would never
//! reach the ingest function), each stream once; a group or stream found gone is ensured again.
//!
//! CloudWatch gives every line put a new event id, and a restarted data plane reads each replica
//! it adopts again from the start: so that no line is stored twice (section 5), a stream that
//! exists when the process first writes to it has its tail read ([`Tail`]) and the lines already
//! there are left out.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use aws_sdk_cloudwatchlogs::Client;
use aws_sdk_cloudwatchlogs::error::{DisplayErrorContext, SdkError};
use aws_sdk_cloudwatchlogs::types::InputLogEvent;

mod tail;
pub use tail::Tail;

/// (event id, Unix milliseconds, message in CRI form), as `ports::LineBatch` carries them.
pub type Event = (String, i64, String);

/// The group's subscription filter to the ingest function.
pub const SUBSCRIPTION_FILTER: &str = "agent-hosting-ingest";
/// PutLogEvents' bounds: events a call, bytes a call (each event's UTF-8 message and 26 bytes),
/// and the time one call may span.
pub const MAX_EVENTS: usize = 10_000;
pub const MAX_BYTES: usize = 1_048_576;
pub const EVENT_OVERHEAD: usize = 26;
pub const MAX_SPAN_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// The retention periods CloudWatch Logs takes (PutRetentionPolicy), in days.
const RETENTION_DAYS: [i32; 22] = [
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
    3288, 3653,
];

/// The shortest retention CloudWatch Logs takes that keeps lines at least `days`; `None`
/// beyond the longest (the group then keeps them forever).
pub fn retention_days(days: u32) -> Option<i32> {
    RETENTION_DAYS
        .into_iter()
        .find(|&allowed| i64::from(allowed) >= i64::from(days))
}

/// `events` (in chronological order, each small enough for a call) as PutLogEvents calls,
/// each within the call's bounds, in order.
pub fn calls(events: &[Event]) -> Vec<&[Event]> {
    let mut calls = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (_, at, message)) in events.iter().enumerate() {
        let size = message.len() + EVENT_OVERHEAD;
        let full = i - start == MAX_EVENTS
            || bytes + size > MAX_BYTES
            || at - events[start].1 >= MAX_SPAN_MILLIS;
        if i > start && full {
            calls.push(&events[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < events.len() {
        calls.push(&events[start..]);
    }
    calls
}

/// The events of a stream's tail read back; reading fewer means the tail is the whole stream.
pub const TAIL_EVENTS: i32 = 1_000;
/// GetLogEvents may answer an empty page while older events remain: so many pages are read at
/// most to find the tail.
const TAIL_READS: usize = 3;

/// Whether one event fits a call at all.
pub fn fits(event: &Event) -> bool {
    event.2.len() + EVENT_OVERHEAD <= MAX_BYTES
}

/// The calls the sink makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    CreateLogGroup,
    PutRetentionPolicy,
    PutSubscriptionFilter,
    CreateLogStream,
    GetLogEvents,
    PutLogEvents,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A call that failed (after the SDK's own retries). Never holds a line's text.
#[derive(Debug, thiserror::Error)]
#[error("{operation} failed: {message}")]
pub struct SinkError {
    pub operation: Operation,
    pub message: String,
}

fn failed<E, R>(operation: Operation, error: SdkError<E, R>) -> SinkError
where
    E: std::error::Error + 'static,
    R: fmt::Debug,
{
    SinkError {
        operation,
        message: DisplayErrorContext(error).to_string(),
    }
}

/// Groups and streams this process has ensured; each stream with its tail when it existed
/// before this process wrote to it.
#[derive(Debug, Default)]
struct Ensured {
    groups: HashSet<String>,
    streams: HashMap<(String, String), Option<Tail>>,
}

/// Section 5's log groups, written through one client.
#[derive(Debug)]
pub struct LogSink {
    client: Client,
    ingest_function_arn: String,
    retention_days: Option<i32>,
    ensured: Mutex<Ensured>,
}

impl LogSink {
    pub fn new(client: Client, ingest_function_arn: String, log_retention_days: u32) -> Self {
        LogSink {
            client,
            ingest_function_arn,
            retention_days: retention_days(log_retention_days),
            ensured: Mutex::default(),
        }
    }

    fn ensured(&self) -> MutexGuard<'_, Ensured> {
        self.ensured.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `events` less those `stream` held before this process first wrote to it (see [`Tail`]);
    /// all of them if this process made it. The stream is to be ensured first.
    pub fn unseen(&self, group: &str, stream: &str, events: Vec<Event>) -> Vec<Event> {
        let key = (group.to_owned(), stream.to_owned());
        match self.ensured().streams.get_mut(&key) {
            Some(Some(tail)) => tail.unseen(events),
            _ => events,
        }
    }

    /// Puts `events` (one call's, in order) into `group`'s `stream`, ensuring both first.
    pub async fn put(&self, group: &str, stream: &str, events: &[Event]) -> Result<(), SinkError> {
        self.ensure(group, stream).await?;
        let events = events
            .iter()
            .map(|(_, at, message)| {
                InputLogEvent::builder()
                    .timestamp(*at)
                    .message(message)
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| SinkError {
                operation: Operation::PutLogEvents,
                message: error.to_string(),
            })?;
        let output = self
            .client
            .put_log_events()
            .log_group_name(group)
            .log_stream_name(stream)
            .set_log_events(Some(events))
            .send()
            .await;
        let output = match output {
            Ok(output) => output,
            Err(error) => {
                let gone = error
                    .as_service_error()
                    .is_some_and(|error| error.is_resource_not_found_exception());
                if gone {
                    self.forget(group, stream);
                }
                return Err(failed(Operation::PutLogEvents, error));
            }
        };
        // Lines too old (14 days, or the retention) or too new (2 hours ahead) are left out
        // by CloudWatch Logs; the rest is taken.
        if let Some(rejected) = output.rejected_log_events_info() {
            tracing::warn!(
                group,
                stream,
                too_new_from = rejected.too_new_log_event_start_index(),
                too_old_until = rejected.too_old_log_event_end_index(),
                expired_until = rejected.expired_log_event_end_index(),
                "CloudWatch Logs left lines out"
            );
        }
        Ok(())
    }

    /// The group and stream are taken as gone: the next put ensures them again.
    fn forget(&self, group: &str, stream: &str) {
        let mut ensured = self.ensured();
        ensured.groups.remove(group);
        ensured
            .streams
            .remove(&(group.to_owned(), stream.to_owned()));
    }

    /// Ensures `group` and its `stream`, once a process; a stream that existed has its tail read.
    pub async fn ensure(&self, group: &str, stream: &str) -> Result<(), SinkError> {
        if !self.ensured().groups.contains(group) {
            self.ensure_group(group).await?;
            self.ensured().groups.insert(group.to_owned());
        }
        let key = (group.to_owned(), stream.to_owned());
        if self.ensured().streams.contains_key(&key) {
            return Ok(());
        }
        let created = self
            .client
            .create_log_stream()
            .log_group_name(group)
            .log_stream_name(stream)
            .send()
            .await;
        let tail = match created {
            Ok(_) => None,
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|error| error.is_resource_already_exists_exception()) =>
            {
                Some(self.read_tail(group, stream).await?)
            }
            Err(error) => {
                self.forget(group, stream);
                return Err(failed(Operation::CreateLogStream, error));
            }
        };
        let mut ensured = self.ensured();
        match tail {
            // Made by this process (a concurrent first write may have read it meanwhile): all
            // it holds, this process wrote.
            None => {
                ensured.streams.insert(key, None);
            }
            Some(tail) => {
                ensured.streams.entry(key).or_insert(Some(tail));
            }
        }
        Ok(())
    }

    /// The stream's last events, at most [`TAIL_EVENTS`]; empty pages followed back a few times.
    async fn read_tail(&self, group: &str, stream: &str) -> Result<Tail, SinkError> {
        let mut token: Option<String> = None;
        for _ in 0..TAIL_READS {
            let page = self
                .client
                .get_log_events()
                .log_group_name(group)
                .log_stream_name(stream)
                .start_from_head(false)
                .limit(TAIL_EVENTS)
                .set_next_token(token.clone())
                .send()
                .await
                .map_err(|error| failed(Operation::GetLogEvents, error))?;
            let events = page.events();
            if !events.is_empty() {
                let whole = events.len() < TAIL_EVENTS as usize;
                let read = events
                    .iter()
                    .filter_map(|event| Some((event.timestamp()?, event.message()?)));
                return Ok(Tail::new(read, whole));
            }
            let older = page.next_backward_token();
            if older.is_none() || older == token.as_deref() {
                break;
            }
            token = older.map(str::to_owned);
        }
        Ok(Tail::new([], true))
    }

    /// Creates the group (one that exists is fine), sets its retention and its subscription
    /// to the ingest function; both settings are idempotent, so a process sets them again.
    async fn ensure_group(&self, group: &str) -> Result<(), SinkError> {
        let created = self
            .client
            .create_log_group()
            .log_group_name(group)
            .send()
            .await;
        if let Err(error) = created {
            let exists = error
                .as_service_error()
                .is_some_and(|error| error.is_resource_already_exists_exception());
            if !exists {
                return Err(failed(Operation::CreateLogGroup, error));
            }
        }
        if let Some(days) = self.retention_days {
            self.client
                .put_retention_policy()
                .log_group_name(group)
                .retention_in_days(days)
                .send()
                .await
                .map_err(|error| failed(Operation::PutRetentionPolicy, error))?;
        }
        self.client
            .put_subscription_filter()
            .log_group_name(group)
            .filter_name(SUBSCRIPTION_FILTER)
            .filter_pattern("")
            .destination_arn(&self.ingest_function_arn)
            .send()
            .await
            .map_err(|error| failed(Operation::PutSubscriptionFilter, error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at: i64, message: &str) -> Event {
        (String::new(), at, message.to_owned())
    }

    #[test]
    fn the_retention_is_the_shortest_allowed_that_keeps_lines_as_long_as_asked() {
        assert_eq!(retention_days(1), Some(1));
        assert_eq!(retention_days(2), Some(3));
        assert_eq!(retention_days(30), Some(30));
        assert_eq!(retention_days(31), Some(60));
        assert_eq!(retention_days(366), Some(400));
        assert_eq!(retention_days(3650), Some(3653));
        assert_eq!(retention_days(3654), None);
    }

    #[test]
    fn a_call_holds_at_most_ten_thousand_events() {
        let events: Vec<Event> = (0..20_001).map(|i| event(i, "x")).collect();
        let sizes: Vec<usize> = calls(&events).iter().map(|call| call.len()).collect();
        assert_eq!(sizes, vec![10_000, 10_000, 1]);
    }

    #[test]
    fn a_call_holds_at_most_a_mebibyte_counting_26_bytes_an_event() {
        // Four events of exactly a quarter of the bound each fill one call.
        let quarter = "q".repeat(MAX_BYTES / 4 - EVENT_OVERHEAD);
        let events: Vec<Event> = (0..5).map(|i| event(i, &quarter)).collect();
        let sizes: Vec<usize> = calls(&events).iter().map(|call| call.len()).collect();
        assert_eq!(sizes, vec![4, 1]);
    }

    #[test]
    fn a_call_spans_less_than_a_day() {
        let events = vec![
            event(0, "a"),
            event(MAX_SPAN_MILLIS - 1, "b"),
            event(MAX_SPAN_MILLIS, "c"),
            event(MAX_SPAN_MILLIS + 5, "d"),
        ];
        let calls = calls(&events);
        assert_eq!(calls, vec![&events[..2], &events[2..]]);
    }

    #[test]
    fn no_events_make_no_call_and_an_oversized_one_does_not_fit() {
        assert!(calls(&[]).is_empty());
        assert!(fits(&event(0, &"x".repeat(MAX_BYTES - EVENT_OVERHEAD))));
        assert!(!fits(&event(
            0,
            &"x".repeat(MAX_BYTES - EVENT_OVERHEAD + 1)
        )));
    }
}
