//! A cursor: where the previous page stopped, bound to the filters it was made under, and signed
//! with the deployment's key so that a caller can only hand back a cursor the service made.
//!
//! Opaque to callers: base64url of a 16-byte tag and the position. The tag is an HMAC-SHA256
//! (truncated to 128 bits) of the filters' fingerprint and the position, under [`CursorKey`];
//! the fingerprint is hashed from values a caller knows (its filters), so without the key it
//! would bind nothing. A cursor is checked in length before anything is decoded, and in tag
//! before its position is used: a forged position never reaches the store.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::line::{MAX_EVENT_ID_LENGTH, PART_SUFFIX_LENGTH, position_nanos};
use crate::ApiError;

/// The environment variable holding the secret cursors are signed with (at least
/// [`CursorKey::MIN_SECRET_LENGTH`] bytes; template.yaml generates one per stack).
pub const CURSOR_KEY_VARIABLE: &str = "LOGS_CURSOR_KEY";

const TAG_LENGTH: usize = 16;
/// The longest position: 20 digits, `#`, an event id (of a part of a split line, perhaps).
const MAX_POSITION_LENGTH: usize = 21 + MAX_EVENT_ID_LENGTH + PART_SUFFIX_LENGTH;
/// The longest cursor the service makes (base64url of the tag and the longest position).
pub const MAX_CURSOR_LENGTH: usize = (TAG_LENGTH + MAX_POSITION_LENGTH).div_ceil(3) * 4;

/// The key cursors are signed with: 32 bytes, derived from the deployment's secret.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CursorKey([u8; 32]);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

#[derive(Debug, thiserror::Error)]
#[error(
    "{CURSOR_KEY_VARIABLE} must be a secret of at least {} bytes",
    CursorKey::MIN_SECRET_LENGTH
)]
pub struct WeakCursorSecret;

impl CursorKey {
    pub const MIN_SECRET_LENGTH: usize = 32;

    /// The key of a secret (its SHA-256), refused when shorter than [`Self::MIN_SECRET_LENGTH`].
    pub fn from_secret(secret: &str) -> Result<Self, WeakCursorSecret> {
        if secret.len() < Self::MIN_SECRET_LENGTH {
            return Err(WeakCursorSecret);
        }
        Ok(CursorKey(Sha256::digest(secret.as_bytes()).into()))
    }

    /// A key of the given bytes (tests and benches, which need no secret).
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        CursorKey(bytes)
    }

    fn mac(&self, fingerprint: &str, position: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(b"logs-cursor-v2\0");
        mac.update(fingerprint.as_bytes());
        mac.update(b"\0");
        mac.update(position.as_bytes());
        mac
    }

    pub fn encode(&self, fingerprint: &str, position: &str) -> String {
        let tag = self.mac(fingerprint, position).finalize().into_bytes();
        let mut bytes = Vec::with_capacity(TAG_LENGTH + position.len());
        bytes.extend_from_slice(&tag[..TAG_LENGTH]);
        bytes.extend_from_slice(position.as_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position a cursor continues after, if this service made it under `fingerprint`.
    pub fn decode(&self, cursor: &str, fingerprint: &str) -> Result<String, ApiError> {
        if cursor.len() > MAX_CURSOR_LENGTH {
            return Err(invalid());
        }
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
        if bytes.len() <= TAG_LENGTH {
            return Err(invalid());
        }
        let (tag, position) = bytes.split_at(TAG_LENGTH);
        let position = std::str::from_utf8(position).map_err(|_| invalid())?;
        self.mac(fingerprint, position)
            .verify_truncated_left(tag)
            .map_err(|_| invalid())?;
        // Signed, hence made here; checked in shape all the same.
        if !is_position(position) {
            return Err(invalid());
        }
        Ok(position.to_owned())
    }
}

/// A line's position (`{nanoseconds:020}#{eventId}`), or a bare 20-digit timestamp: where a pass
/// stopped by its read budget continues, every line before that nanosecond seen.
fn is_position(position: &str) -> bool {
    let timestamp = position_nanos(position).is_some();
    let bare = position.len() == 20;
    let line = position.len() <= MAX_POSITION_LENGTH
        && position.as_bytes().get(20) == Some(&b'#')
        && position.len() > 21;
    timestamp && (bare || line)
}

fn invalid() -> ApiError {
    ApiError::bad_request(
        "cursor",
        "cursor is not valid for this request: pass nextCursor unchanged, with the same filters and order",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::position;

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
        let cursor = KEY.encode(fingerprint, &position);
        assert_eq!(KEY.decode(&cursor, fingerprint).unwrap(), position);
        let error = KEY.decode(&cursor, "ffffffffffffffffffffffff").unwrap_err();
        assert_eq!(error.field(), Some("cursor"), "other filters");
        let other_key = CursorKey::from_bytes([8; 32]);
        assert!(
            other_key.decode(&cursor, fingerprint).is_err(),
            "another deployment's key"
        );
        let bare = "01745008457000000000";
        assert_eq!(
            KEY.decode(&KEY.encode(fingerprint, bare), fingerprint)
                .unwrap(),
            bare
        );
        let longest = KEY.encode(fingerprint, &longest_position());
        assert!(longest.len() <= MAX_CURSOR_LENGTH);
        assert_eq!(
            KEY.decode(&longest, fingerprint).unwrap(),
            longest_position()
        );
    }

    #[test]
    fn forged_tampered_and_oversized_cursors_are_a_400_naming_cursor() {
        let fingerprint = "f";
        let at = position(1_745_008_457_153_744_602, "1");
        let cursor = KEY.encode(fingerprint, &at);
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
            let error = KEY.decode(&bad, fingerprint).unwrap_err();
            assert_eq!(error.field(), Some("cursor"), "{bad}");
            assert_eq!(error.status().as_u16(), 400);
        }
    }

    #[test]
    fn secrets_shorter_than_32_bytes_are_refused_and_keys_never_print() {
        assert!(CursorKey::from_secret(&"s".repeat(31)).is_err());
        let key = CursorKey::from_secret(&"s".repeat(32)).unwrap();
        assert_eq!(format!("{key:?}"), "CursorKey(..)");
    }
}
