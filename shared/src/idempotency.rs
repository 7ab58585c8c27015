//! `Idempotency-Key` on POST /v1/agents and POST /v1/agents/{agentName}, as Stripe does it: a
//! client that retries a create or an update with the same key and the same request within 24
//! hours gets the first answer again (status and body, marked `Idempotent-Replayed: true`) and
//! nothing is written again; the same key with another request (another body, or another agent)
//! is a 422. Keys are scoped to the caller's account.
//!
//! The record of the first answer is written in the create's own transaction, conditioned on no
//! live record of that key, so concurrent requests with one key create once: the losers find the
//! winner's record (returned by the failed condition itself) and replay it.

use http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::ApiError;

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The response header on a replayed answer.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
/// Longest key accepted (Stripe's bound).
pub const MAX_KEY_LENGTH: usize = 255;
/// How long a key's first answer is kept and replayed.
pub const RETENTION_SECONDS: i64 = 24 * 60 * 60;

/// A key as the client sent it: 1 to 255 visible ASCII characters (a UUID is the usual choice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key of a request, if it carries one; a malformed or repeated header is a 400.
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<Self>, ApiError> {
        let mut values = headers.get_all(HEADER).iter();
        let Some(value) = values.next() else {
            return Ok(None);
        };
        let rule = || {
            ApiError::bad_request(
                "Idempotency-Key",
                format!(
                    "Idempotency-Key must be given once, 1 to {MAX_KEY_LENGTH} visible ASCII \
                     characters (a UUID, for instance)"
                ),
            )
        };
        if values.next().is_some() {
            return Err(rule());
        }
        let bytes = value.as_bytes();
        if bytes.is_empty()
            || bytes.len() > MAX_KEY_LENGTH
            || !bytes.iter().all(u8::is_ascii_graphic)
        {
            return Err(rule());
        }
        // Visible ASCII is valid UTF-8.
        Ok(Some(IdempotencyKey(
            String::from_utf8_lossy(bytes).into_owned(),
        )))
    }

    /// What the store keys the record by: the SHA-256 of the key, in hex (fixed length, and the
    /// client's text is not kept).
    pub fn digest(&self) -> String {
        hex(&Sha256::digest(self.0.as_bytes()))
    }
}

/// The fingerprint of a create's body: the SHA-256 of its canonical JSON (members sorted, no
/// whitespace), so a retry that reorders members or spacing is still "the same body".
pub fn fingerprint(body: &serde_json::Value) -> String {
    let mut hasher = Sha256::new();
    hash_canonical(body, &mut hasher);
    hex(&hasher.finalize())
}

/// The fingerprint of an update of agent `agent` with `body`: the same key sent to create, or to
/// update another agent, is another request.
pub fn update_fingerprint(agent: &str, body: &serde_json::Value) -> String {
    fingerprint(&serde_json::json!({"update": agent, "body": body}))
}

/// Feeds `value` to the hasher as canonical JSON. The members are sorted here: serde_json keeps
/// insertion order once any crate in the build enables its `preserve_order` feature (the AWS
/// SDK's HTTP client does), so its own serialization is not canonical.
fn hash_canonical(value: &serde_json::Value, hasher: &mut Sha256) {
    use serde_json::Value;
    match value {
        Value::Object(members) => {
            let mut members: Vec<_> = members.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            hasher.update(b"{");
            for (index, (name, member)) in members.into_iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                hasher.update(Value::from(name.as_str()).to_string().as_bytes());
                hasher.update(b":");
                hash_canonical(member, hasher);
            }
            hasher.update(b"}");
        }
        Value::Array(items) => {
            hasher.update(b"[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                hash_canonical(item, hasher);
            }
            hasher.update(b"]");
        }
        scalar => hasher.update(scalar.to_string().as_bytes()),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// The first answer to a key: what a retry with the same body gets back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// [`IdempotencyKey::digest`].
    pub key_digest: String,
    /// [`fingerprint`] of the body that produced the answer.
    pub fingerprint: String,
    pub status: u16,
    /// The response body, byte for byte.
    pub body: String,
    pub created_at: String,
    /// Unix seconds after which the record is dead (the TTL attribute; DynamoDB deletes it
    /// within days, so readers check it too).
    pub expires_at: i64,
    /// The agent the request was for: deleting it deletes its records.
    pub agent: String,
}

impl IdempotencyRecord {
    /// When the record was written (Unix seconds): a put of it may replace only records dead
    /// by then.
    pub fn written_at(&self) -> i64 {
        self.expires_at - RETENTION_SECONDS
    }

    pub fn is_live(&self, now_unix: i64) -> bool {
        self.expires_at > now_unix
    }

    /// Whether this stored record keeps `new`, a record of the same key, from being written: it
    /// is still live when `new` is written (the DynamoDB adapter's condition states the same).
    pub fn holds_off(&self, new: &IdempotencyRecord) -> bool {
        self.is_live(new.written_at())
    }

    /// The answer to a request that reuses this record's key with a body of `fingerprint`.
    pub fn replay_for(&self, fingerprint: &str) -> Result<(u16, &str), ApiError> {
        if self.fingerprint == fingerprint {
            Ok((self.status, &self.body))
        } else {
            Err(ApiError::IdempotencyKeyReused)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(HEADER, HeaderValue::from_bytes(value).unwrap());
        }
        headers
    }

    #[test]
    fn a_key_is_one_header_of_visible_ascii() {
        assert_eq!(IdempotencyKey::from_headers(&headers(&[])).unwrap(), None);
        let uuid = b"7c9e6679-7425-40de-944b-e07fc1f90ae7";
        assert!(
            IdempotencyKey::from_headers(&headers(&[uuid]))
                .unwrap()
                .is_some()
        );
        let longest = vec![b'k'; MAX_KEY_LENGTH];
        assert!(IdempotencyKey::from_headers(&headers(&[&longest])).is_ok());
        let too_long = vec![b'k'; MAX_KEY_LENGTH + 1];
        for bad in [
            headers(&[b""]),
            headers(&[&too_long]),
            headers(&[b"has space"]),
            headers(&[b"tab\there"]),
            headers(&["caf\u{e9}".as_bytes()]),
            headers(&[b"one", b"two"]),
        ] {
            let error = IdempotencyKey::from_headers(&bad).unwrap_err();
            assert_eq!(error.status().as_u16(), 400);
            assert_eq!(error.field(), Some("Idempotency-Key"));
        }
    }

    #[test]
    fn the_digest_is_fixed_length_and_does_not_contain_the_key() {
        let key = IdempotencyKey("order-42".into());
        let digest = key.digest();
        assert_eq!(digest.len(), 64);
        assert!(!digest.contains("order-42"));
        assert_ne!(digest, IdempotencyKey("order-43".into()).digest());
    }

    #[test]
    fn member_order_and_spacing_do_not_change_the_fingerprint() {
        let a: serde_json::Value = serde_json::from_str(
            r#"{"serviceName":"a","image":"x","autoScaling":{"minAgents":1,"maxAgents":2}}"#,
        )
        .unwrap();
        let b: serde_json::Value = serde_json::from_str(
            r#"{ "image": "x", "autoScaling": {"maxAgents": 2, "minAgents": 1}, "serviceName": "a" }"#,
        )
        .unwrap();
        let c: serde_json::Value =
            serde_json::from_str(r#"{"serviceName":"b","image":"x"}"#).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        // Nested values count, and so does the order of array items.
        let nested = |text: &str| fingerprint(&serde_json::from_str(text).unwrap());
        assert_eq!(nested(r#"[{"b":1,"a":2}]"#), nested(r#"[{"a":2,"b":1}]"#));
        assert_ne!(nested(r#"[1,2]"#), nested(r#"[2,1]"#));
        assert_ne!(nested(r#"{"a":{"b":1}}"#), nested(r#"{"a":{"b":2}}"#));
        assert_ne!(nested(r#"{"a":"1"}"#), nested(r#"{"a":1}"#));
        // An update is another request than a create of the same body, or an update of another agent.
        assert_ne!(update_fingerprint("a", &c), fingerprint(&c));
        assert_ne!(update_fingerprint("a", &c), update_fingerprint("b", &c));
        assert_eq!(update_fingerprint("a", &a), update_fingerprint("a", &b));
    }

    #[test]
    fn a_record_replays_only_for_the_same_body() {
        let record = IdempotencyRecord {
            key_digest: "k".into(),
            fingerprint: "f1".into(),
            status: 201,
            body: "{}".into(),
            created_at: "2026-11-22T00:00:00.000Z".into(),
            expires_at: 100,
            agent: "a".into(),
        };
        assert_eq!(record.replay_for("f1").unwrap(), (201, "{}"));
        assert_eq!(record.replay_for("f2").unwrap_err().status().as_u16(), 422);
        assert!(record.is_live(99));
        assert!(!record.is_live(100));
    }
}
