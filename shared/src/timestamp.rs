//! Timestamps as the API writes them: RFC 3339, UTC, a fixed number of fraction digits.

use time::OffsetDateTime;
use time::format_description::FormatItem;
use time::macros::format_description;

const MILLIS: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// `2026-11-22T19:04:05.123Z`: resource timestamps (createdAt, updatedAt).
pub fn rfc3339_millis(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(MILLIS)
        .unwrap_or_else(|_| unreachable_format())
}

/// The current time as a resource timestamp.
pub fn now_rfc3339_millis() -> String {
    rfc3339_millis(OffsetDateTime::now_utc())
}

// Formatting a UTC date between years 0 and 9999 with a fixed description cannot fail; the
// system clock is the only input. Fall back to the epoch rather than panic.
#[cold]
fn unreachable_format() -> String {
    "1970-01-01T00:00:00.000Z".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_are_fixed_width_utc() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_745_008_457_153_744_602).unwrap();
        assert_eq!(rfc3339_millis(at), "2025-04-18T20:34:17.153Z");
        let whole = OffsetDateTime::from_unix_timestamp(0).unwrap();
        assert_eq!(rfc3339_millis(whole), "1970-01-01T00:00:00.000Z");
    }
}
