//! The logs route's cursors, in the one cursor format of every paged route ([`crate::cursor`]):
//! where the previous page stopped (a line's position, or a bare timestamp where a pass stopped
//! by its read budget), bound to the filters, time range and order it was made under.

use super::line::{MAX_EVENT_ID_LENGTH, PART_SUFFIX_LENGTH, position_nanos};
use crate::ApiError;
use crate::cursor::{CursorFormat, CursorKey};

/// The longest position: 20 digits, `#`, an event id (of a part of a split line, perhaps).
const MAX_POSITION_LENGTH: usize = 21 + MAX_EVENT_ID_LENGTH + PART_SUFFIX_LENGTH;

/// The logs route's cursors. The scope is the one logs cursors were signed under before the
/// format was shared, so cursors handed out then still continue.
pub const FORMAT: CursorFormat = CursorFormat {
    scope: "logs-cursor-v2",
    max_position_length: MAX_POSITION_LENGTH,
    is_position,
};

/// The longest cursor the route makes.
pub const MAX_CURSOR_LENGTH: usize = FORMAT.max_cursor_length();

/// The cursor continuing after `position` for requests of the filters' `fingerprint`.
pub fn encode(key: &CursorKey, fingerprint: &str, position: &str) -> String {
    key.encode(&FORMAT, fingerprint, position)
}

/// The position a cursor continues after, if this service made it under `fingerprint`.
pub fn decode(key: &CursorKey, cursor: &str, fingerprint: &str) -> Result<String, ApiError> {
    key.decode(&FORMAT, cursor, fingerprint)
}

/// A line's position (`{nanoseconds:020}#{eventId}`), or a bare 20-digit timestamp: where a pass
/// stopped by its read budget continues, every line before that nanosecond seen.
fn is_position(position: &str) -> bool {
    let timestamp = position_nanos(position).is_some();
    let bare = position.len() == 20;
    let line = position.as_bytes().get(20) == Some(&b'#') && position.len() > 21;
    timestamp && (bare || line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::position;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    const KEY: CursorKey = CursorKey::from_bytes([7; 32]);

    fn longest_position() -> String {
        position(
            u64::MAX,
            &"9".repeat(MAX_EVENT_ID_LENGTH + PART_SUFFIX_LENGTH),
        )
    }

    #[test]
    fn a_cursor_gives_back_its_position_for_its_filters_only() {
        let fingerprint = "0123456789abcdef01234567";
        let position = position(
            1_745_008_457_153_744_602,
            "38000000000000000000000000000001",
        );
        let cursor = encode(&KEY, fingerprint, &position);
        assert_eq!(decode(&KEY, &cursor, fingerprint).unwrap(), position);
        let error = decode(&KEY, &cursor, "ffffffffffffffffffffffff").unwrap_err();
        assert_eq!(error.field(), Some("cursor"), "other filters");
        let other_key = CursorKey::from_bytes([8; 32]);
        assert!(
            decode(&other_key, &cursor, fingerprint).is_err(),
            "another deployment's key"
        );
        let bare = "01745008457000000000";
        assert_eq!(
            decode(&KEY, &encode(&KEY, fingerprint, bare), fingerprint).unwrap(),
            bare
        );
        let longest = encode(&KEY, fingerprint, &longest_position());
        assert!(longest.len() <= MAX_CURSOR_LENGTH);
        assert_eq!(
            decode(&KEY, &longest, fingerprint).unwrap(),
            longest_position()
        );
    }

    #[test]
    fn forged_tampered_and_oversized_cursors_are_a_400_naming_cursor() {
        let fingerprint = "f";
        let at = position(1_745_008_457_153_744_602, "1");
        let cursor = encode(&KEY, fingerprint, &at);
        let mut tampered = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        let last = tampered.len() - 1;
        tampered[last] = b'2';
        // The old unsigned shape, a position the caller chose (1,100 bytes: past DynamoDB's
        // 1,024-byte sort key, once a 500).
        let unsigned = URL_SAFE_NO_PAD.encode(format!(
            "v1.{fingerprint}.{}",
            position(1, &"1".repeat(1_079))
        ));
        let forged_long = URL_SAFE_NO_PAD.encode([vec![0u8; 16], vec![b'1'; 1_100]].concat());
        for bad in [
            URL_SAFE_NO_PAD.encode(tampered),
            unsigned,
            forged_long,
            "garbage!".to_owned(),
            String::new(),
            "A".repeat(MAX_CURSOR_LENGTH + 1),
            URL_SAFE_NO_PAD.encode([0u8; 16]),
        ] {
            let error = decode(&KEY, &bad, fingerprint).unwrap_err();
            assert_eq!(error.field(), Some("cursor"), "{bad}");
            assert_eq!(error.status().as_u16(), 400);
        }
    }
}
