//! The one cursor format of every paged route: where the previous page stopped, bound to what it
//! was made for, and signed with the stack's key so that a caller can only hand back a cursor the
//! service made.
//!
//! Opaque to callers: base64url of a 16-byte tag and the position. The tag is an HMAC-SHA256
//! (truncated to 128 bits) under [`CursorKey`] of the route's [`CursorFormat::scope`], a
//! fingerprint of the request (its filters, its account) and the position; the fingerprint is
//! hashed from values a caller knows, so without the key it would bind nothing. A cursor is
//! checked in length before anything is decoded, in tag before its position is looked at, and
//! the position in shape: a forged position never reaches the store.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::ApiError;

const TAG_LENGTH: usize = 16;

/// What one paged route's cursors hold.
#[derive(Debug, Clone, Copy)]
pub struct CursorFormat {
    /// Signed first: a cursor of one route never opens on another.
    pub scope: &'static str,
    /// The longest position the route makes.
    pub max_position_length: usize,
    /// Whether a position has the route's shape.
    pub is_position: fn(&str) -> bool,
}

impl CursorFormat {
    /// The longest cursor of this format (base64url of the tag and the longest position).
    pub const fn max_cursor_length(&self) -> usize {
        (TAG_LENGTH + self.max_position_length).div_ceil(3) * 4
    }
}

/// The key cursors are signed with: 32 bytes, derived from the stack's secret (template.yaml
/// generates one per stack; [`crate::store::cursor_secret`] reads it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CursorKey([u8; 32]);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

#[derive(Debug, thiserror::Error)]
#[error(
    "the cursor secret must be at least {} bytes",
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

    fn mac(&self, format: &CursorFormat, fingerprint: &str, position: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(format.scope.as_bytes());
        mac.update(b"\0");
        mac.update(fingerprint.as_bytes());
        mac.update(b"\0");
        mac.update(position.as_bytes());
        mac
    }

    /// The cursor that continues after `position`, for requests of `fingerprint`.
    pub fn encode(&self, format: &CursorFormat, fingerprint: &str, position: &str) -> String {
        let tag = self
            .mac(format, fingerprint, position)
            .finalize()
            .into_bytes();
        let mut bytes = Vec::with_capacity(TAG_LENGTH + position.len());
        bytes.extend_from_slice(&tag[..TAG_LENGTH]);
        bytes.extend_from_slice(position.as_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position a cursor continues after, if this service made it for `fingerprint`; a 400
    /// naming `cursor` otherwise.
    pub fn decode(
        &self,
        format: &CursorFormat,
        cursor: &str,
        fingerprint: &str,
    ) -> Result<String, ApiError> {
        if cursor.len() > format.max_cursor_length() {
            return Err(invalid());
        }
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
        if bytes.len() <= TAG_LENGTH {
            return Err(invalid());
        }
        let (tag, position) = bytes.split_at(TAG_LENGTH);
        let position = std::str::from_utf8(position).map_err(|_| invalid())?;
        self.mac(format, fingerprint, position)
            .verify_truncated_left(tag)
            .map_err(|_| invalid())?;
        // Signed, hence made here; checked in shape all the same.
        if position.len() > format.max_position_length || !(format.is_position)(position) {
            return Err(invalid());
        }
        Ok(position.to_owned())
    }
}

fn invalid() -> ApiError {
    ApiError::bad_request(
        "cursor",
        "cursor is not valid for this request: pass nextCursor unchanged, with the same parameters",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: CursorKey = CursorKey::from_bytes([7; 32]);

    const DIGITS: CursorFormat = CursorFormat {
        scope: "digits",
        max_position_length: 8,
        is_position: |position| position.bytes().all(|b| b.is_ascii_digit()),
    };

    const OTHER: CursorFormat = CursorFormat {
        scope: "other",
        ..DIGITS
    };

    #[test]
    fn a_cursor_gives_back_its_position_for_its_route_and_fingerprint_only() {
        let cursor = KEY.encode(&DIGITS, "acme", "1234");
        assert_eq!(KEY.decode(&DIGITS, &cursor, "acme").unwrap(), "1234");
        for (format, fingerprint, what) in [
            (&DIGITS, "bob", "another fingerprint"),
            (&OTHER, "acme", "another route"),
        ] {
            let error = KEY.decode(format, &cursor, fingerprint).unwrap_err();
            assert_eq!(error.field(), Some("cursor"), "{what}");
        }
        assert!(
            CursorKey::from_bytes([8; 32])
                .decode(&DIGITS, &cursor, "acme")
                .is_err(),
            "another stack's key"
        );
    }

    #[test]
    fn forged_tampered_oversized_and_misshapen_cursors_are_a_400_naming_cursor() {
        let cursor = KEY.encode(&DIGITS, "f", "1234");
        let mut tampered = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        let last = tampered.len() - 1;
        tampered[last] = b'5';
        let unsigned = URL_SAFE_NO_PAD.encode("a1.1234");
        for bad in [
            URL_SAFE_NO_PAD.encode(tampered),
            unsigned,
            "garbage!".to_owned(),
            String::new(),
            "A".repeat(DIGITS.max_cursor_length() + 1),
            URL_SAFE_NO_PAD.encode([0u8; 16]),
            // Signed with the key, but not a position of the route: never used.
            KEY.encode(&DIGITS, "f", "12x4"),
            KEY.encode(&DIGITS, "f", "123456789"),
        ] {
            let error = KEY.decode(&DIGITS, &bad, "f").unwrap_err();
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
