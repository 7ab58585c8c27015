//! API keys and the one code path that checks them (contract section 2).
//!
//! A key looks like `ahk_` (a private key) or `ahp_` (a public key) + 30 random base62
//! characters + a 6-character base62 CRC32 checksum (GitHub-token style): secret scanners
//! recognise the prefix, and a mistyped key is refused without a store read. Only the SHA-256 of
//! a key is stored; the key is shown once, at issue. A public key may only start sessions
//! (contract section 11): the kind is told here, and each route's policy (the HTTP edge's
//! `Callers`) admits or refuses it.
//!
//! The same `Authorization: Bearer` header also carries a person's Cognito access token (the
//! console's; docs/people.md): [`bearer_credential`] tells the two apart by shape, and
//! [`authenticate`] checks either, the token with [`crate::people::Verifier`] and then the
//! person's item in the accounts table. A person may do what a private key may, and alone may
//! manage keys.

use std::fmt;

use http::HeaderMap;
use rand::Rng;
use sha2::{Digest, Sha256};

use crate::error::StoreError;

/// The prefix of a private key (`KeyKind::Private`).
pub const KEY_PREFIX: &str = "ahk_";
/// The prefix of a public key (`KeyKind::Public`); as long as [`KEY_PREFIX`].
pub const PUBLIC_KEY_PREFIX: &str = "ahp_";
const RANDOM_LENGTH: usize = 30;
const CHECKSUM_LENGTH: usize = 6;
pub const KEY_LENGTH: usize = KEY_PREFIX.len() + RANDOM_LENGTH + CHECKSUM_LENGTH;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Names of the members the authorizer puts into the gateway's authorizer context.
pub const CONTEXT_ACCOUNT_ID: &str = "accountId";
pub const CONTEXT_NAMESPACE: &str = "namespace";
pub const CONTEXT_KEY_KIND: &str = "keyKind";
/// Present only for a person (then `keyKind` is absent): the user pool's `sub`.
pub const CONTEXT_PERSON_ID: &str = "personId";

/// The longest access token looked at: Cognito's are about 1 KB; a larger "token" is refused
/// without a signature check.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// What a key may do: a private key every route; a public key, meant to be shipped in a web or
/// mobile client, only a session start. Told by the key's prefix, which its hash covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyKind {
    /// Also every key stored before keys had kinds.
    #[default]
    Private,
    Public,
}

impl KeyKind {
    pub const fn prefix(self) -> &'static str {
        match self {
            KeyKind::Private => KEY_PREFIX,
            KeyKind::Public => PUBLIC_KEY_PREFIX,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            KeyKind::Private => "private",
            KeyKind::Public => "public",
        }
    }

    fn of_key(text: &str) -> Option<KeyKind> {
        [KeyKind::Private, KeyKind::Public]
            .into_iter()
            .find(|kind| text.starts_with(kind.prefix()))
    }
}

impl std::str::FromStr for KeyKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "private" => Ok(KeyKind::Private),
            "public" => Ok(KeyKind::Public),
            _ => Err(format!("{text:?} is not a key kind (private or public)")),
        }
    }
}

/// A well-formed API key. Its Debug output never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({}<redacted>)", self.kind().prefix())
    }
}

/// Why a string is not an API key (never echoed to the caller: every case is a plain 401).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyFormatError {
    #[error("not an agent hosting API key (wrong prefix or length)")]
    Shape,
    #[error("API key contains characters outside base62")]
    Alphabet,
    #[error("API key checksum does not match (mistyped?)")]
    Checksum,
}

fn checksum(body: &str) -> String {
    let mut value = crc32fast::hash(body.as_bytes());
    let mut digits = [b'0'; CHECKSUM_LENGTH];
    for digit in digits.iter_mut().rev() {
        *digit = BASE62[(value % 62) as usize];
        value /= 62;
    }
    // 62^6 > 2^32, so the value always fits: every byte is from BASE62.
    String::from_utf8_lossy(&digits).into_owned()
}

impl ApiKey {
    /// A new random private key from the operating system's CSPRNG.
    pub fn generate() -> Self {
        Self::generate_of(KeyKind::Private)
    }

    /// A new random key of `kind` from the operating system's CSPRNG.
    pub fn generate_of(kind: KeyKind) -> Self {
        let mut rng = rand::rng();
        let mut body = String::with_capacity(KEY_LENGTH);
        body.push_str(kind.prefix());
        for _ in 0..RANDOM_LENGTH {
            body.push(BASE62[rng.random_range(0..BASE62.len())] as char);
        }
        let checksum = checksum(&body);
        body.push_str(&checksum);
        ApiKey(body)
    }

    pub fn parse(text: &str) -> Result<Self, KeyFormatError> {
        if text.len() != KEY_LENGTH || KeyKind::of_key(text).is_none() {
            return Err(KeyFormatError::Shape);
        }
        if !text[KEY_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric())
        {
            return Err(KeyFormatError::Alphabet);
        }
        let (body, given) = text.split_at(KEY_LENGTH - CHECKSUM_LENGTH);
        if checksum(body) != given {
            return Err(KeyFormatError::Checksum);
        }
        Ok(ApiKey(text.to_owned()))
    }

    pub fn kind(&self) -> KeyKind {
        KeyKind::of_key(&self.0).unwrap_or_default()
    }

    /// The key itself, to show once to the operator who issued it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> KeyHash {
        KeyHash(
            Sha256::digest(self.0.as_bytes())
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect(),
        )
    }
}

/// The value of an account's API Gateway key (its usage-plan key) on one REST API: the
/// authorizer names it as `usageIdentifierKey` and the operator command creates the key with it,
/// so both derive it and the authorizer reads nothing more. Not a secret: with the API's key
/// source AUTHORIZER the gateway never takes a key from a client (contract section 9).
pub fn usage_plan_key_value(rest_api_id: &str, account_id: &str) -> String {
    Sha256::digest(format!(
        "agent-hosting/usage-plan-key/v1/{rest_api_id}/{account_id}"
    ))
    .iter()
    .map(|byte| format!("{byte:02x}"))
    .collect()
}

/// Hex SHA-256 of a key: what the store keeps and looks keys up by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyHash(String);

impl KeyHash {
    pub fn from_hex(hex: String) -> Self {
        KeyHash(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A public handle of the key for listing and revoking: the first 12 hex digits of its
    /// hash. It reveals nothing of the key.
    pub fn key_id(&self) -> &str {
        &self.0[..12]
    }
}

/// Who is calling: the account a key belongs to, and that account's namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub account_id: String,
    pub namespace: String,
}

/// A person of the console, as the accounts table ties them to one account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonRecord {
    /// The user pool's `sub`.
    pub person_id: String,
    pub account_id: String,
    pub namespace: String,
    pub email: String,
    pub created_at: String,
}

/// A person acts for the account the accounts table ties them to.
impl From<PersonRecord> for Principal {
    fn from(person: PersonRecord) -> Self {
        Principal {
            account_id: person.account_id,
            namespace: person.namespace,
        }
    }
}

/// Who holds the credential: a key of a kind, or a person signed in to the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallerKind {
    Key(KeyKind),
    Person { person_id: String },
}

/// A checked credential's caller, and what the credential may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub principal: Principal,
    pub kind: CallerKind,
}

/// What the store knows of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub key_id: String,
    pub kind: KeyKind,
    pub account_id: String,
    pub namespace: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// The port keys (and the people of the console) are looked up behind.
pub trait KeyStore: Send + Sync {
    fn find_key(
        &self,
        hash: &KeyHash,
    ) -> impl std::future::Future<Output = Result<Option<KeyRecord>, StoreError>> + Send;

    /// The person whose user-pool `sub` is `person_id`, if the accounts table ties them to an
    /// account. Default: a store that knows no people (test doubles).
    fn find_person(
        &self,
        person_id: &str,
    ) -> impl std::future::Future<Output = Result<Option<PersonRecord>, StoreError>> + Send {
        let _ = person_id;
        std::future::ready(Ok(None))
    }
}

/// What an `Authorization: Bearer` header carries, told apart by shape alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    Key(ApiKey),
    /// Three base64url segments of at most [`MAX_TOKEN_BYTES`]: a JWS, not yet checked.
    Token(String),
}

/// The credential of an `Authorization: Bearer <x>` header: exactly one header, the scheme word
/// in any case, one space, then a well-formed key or something shaped like a JWS. Anything else
/// is `None` (refused without a store read).
pub fn bearer_credential(headers: &HeaderMap) -> Option<Credential> {
    let value = bearer_value(headers)?;
    if KeyKind::of_key(value).is_some() {
        return ApiKey::parse(value).ok().map(Credential::Key);
    }
    is_jws_shaped(value).then(|| Credential::Token(value.to_owned()))
}

/// Three non-empty base64url segments (no padding), at most [`MAX_TOKEN_BYTES`] in all.
fn is_jws_shaped(text: &str) -> bool {
    let base64url = |segment: &str| {
        !segment.is_empty()
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    text.len() <= MAX_TOKEN_BYTES && {
        let segments: Vec<&str> = text.split('.').collect();
        segments.len() == 3 && segments.into_iter().all(base64url)
    }
}

/// The text after `Bearer ` of the one `Authorization` header.
fn bearer_value(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let (scheme, credential) = value.to_str().ok()?.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(credential)
}

/// The key of an `Authorization: Bearer <key>` header: exactly one header, the scheme word in
/// any case, one space, a well-formed key. Anything else is `None`.
pub fn bearer_key(headers: &HeaderMap) -> Option<ApiKey> {
    match bearer_credential(headers)? {
        Credential::Key(key) => Some(key),
        Credential::Token(_) => None,
    }
}

/// The one check of a credential: a key well-formed, known, not revoked; a token verified
/// ([`crate::people::Verifier::global`]: none configured refuses every token) and its person
/// tied to an account. `None` for every refusal alike; an error only when the store (or the
/// user pool's JWKS) could not say.
pub async fn authenticate<K: KeyStore>(
    headers: &HeaderMap,
    keys: &K,
) -> Result<Option<Caller>, StoreError> {
    match bearer_credential(headers) {
        None => Ok(None),
        Some(Credential::Key(key)) => authenticate_key(&key, keys).await,
        Some(Credential::Token(token)) => match crate::people::Verifier::global() {
            // Boxed as a trait object: the token path's future (JWS checks, a JWKS fetch over
            // hyper) is deep and rare; without it every handler's future type holds it (rustc's
            // query depth limit) and key traffic's futures stay as they were.
            Some(verifier) => {
                let check: std::pin::Pin<Box<dyn Future<Output = _> + Send + '_>> =
                    Box::pin(authenticate_token(verifier, &token, keys));
                check.await
            }
            None => {
                tracing::info!("access token refused: no user pool configured");
                Ok(None)
            }
        },
    }
}

async fn authenticate_key<K: KeyStore>(
    key: &ApiKey,
    keys: &K,
) -> Result<Option<Caller>, StoreError> {
    Ok(match keys.find_key(&key.hash()).await? {
        Some(record) if record.revoked_at.is_none() => Some(Caller {
            principal: Principal {
                account_id: record.account_id,
                namespace: record.namespace,
            },
            kind: CallerKind::Key(key.kind()),
        }),
        Some(record) => {
            tracing::info!(key_id = %record.key_id, "revoked API key refused");
            None
        }
        None => None,
    })
}

/// A token checked by `verifier`, then its person looked up: a verified token of a person the
/// accounts table does not know (never invited, or removed) is refused as a bad key is.
pub async fn authenticate_token<K: KeyStore>(
    verifier: &crate::people::Verifier,
    token: &str,
    keys: &K,
) -> Result<Option<Caller>, StoreError> {
    let Some(person_id) = verifier.verify(token).await? else {
        return Ok(None);
    };
    Ok(match keys.find_person(&person_id).await? {
        Some(person) => Some(Caller {
            kind: CallerKind::Person {
                person_id: person.person_id.clone(),
            },
            principal: person.into(),
        }),
        None => {
            tracing::info!(person_id = %person_id, "token of a person of no account refused");
            None
        }
    })
}

#[cfg(test)]
mod tests;
