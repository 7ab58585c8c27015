//! A log line and its position in its agent's log.

use time::OffsetDateTime;

/// The longest event id kept (CloudWatch's are 56 digits); a line with a longer one is dropped.
pub const MAX_EVENT_ID_LENGTH: usize = 128;
/// What a part of a split line adds to its event id (`-002`: [`super::ingest::split_text`]).
pub const PART_SUFFIX_LENGTH: usize = 4;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
