//! API keys and the one code path that checks them (contract section 2).
//!
//! A key looks like `ahk_` (a private key) or `ahp_` (a public key) + 30 random base62
//! characters + a 6-character base62 CRC32 checksum (GitHub-token style): secret scanners
//! recognise the prefix, and a mistyped key is refused without a store read. Only the SHA-256 of
//! a key is stored; the key is shown once, at issue. A public key may only start sessions
//! (contract section 11): [`caller`] refuses it with 403, [`session_caller`] takes both kinds.

use std::fmt;

use http::HeaderMap;
use lambda_http::request::RequestContext;
use rand::Rng;
use sha2::{Digest, Sha256};

use crate::ApiError;
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

/// A checked key's caller, and what the key may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub principal: Principal,
    pub kind: KeyKind,
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

/// The port keys are looked up behind.
pub trait KeyStore: Send + Sync {
    fn find_key(
        &self,
        hash: &KeyHash,
    ) -> impl std::future::Future<Output = Result<Option<KeyRecord>, StoreError>> + Send;
}

/// The key of an `Authorization: Bearer <key>` header: exactly one header, the scheme word in
/// any case, one space, a well-formed key. Anything else is `None`.
pub fn bearer_key(headers: &HeaderMap) -> Option<ApiKey> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let (scheme, key) = value.to_str().ok()?.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    ApiKey::parse(key).ok()
}

/// The one check of a key: well-formed, known, not revoked. `None` for every refusal alike (no
/// header, a malformed, unknown or revoked key); an error only when the store could not say.
pub async fn authenticate<K: KeyStore>(
    headers: &HeaderMap,
    keys: &K,
) -> Result<Option<Caller>, StoreError> {
    let Some(key) = bearer_key(headers) else {
        return Ok(None);
    };
    Ok(match keys.find_key(&key.hash()).await? {
        Some(record) if record.revoked_at.is_none() => Some(Caller {
            principal: Principal {
                account_id: record.account_id,
                namespace: record.namespace,
            },
            kind: key.kind(),
        }),
        Some(record) => {
            tracing::info!(key_id = %record.key_id, "revoked API key refused");
            None
        }
        None => None,
    })
}

/// The caller the gateway's authorizer put into the request context, if any. Only the REST
/// API's context (payload 1.0) counts: that is what the deployed gateway and `sam local` send. A
/// payload 2.0 request (cargo lambda watch, a function URL) always has its key checked here. A
/// context without `keyKind` is a private key's: the authorizer names public keys, and none
/// existed before it did.
pub fn caller_from_context(context: Option<&RequestContext>) -> Option<Caller> {
    let Some(RequestContext::ApiGatewayV1(context)) = context else {
        return None;
    };
    let fields = &context.authorizer.fields;
    let text = |name: &str| fields.get(name)?.as_str().map(str::to_owned);
    let kind = match text(CONTEXT_KEY_KIND) {
        None => KeyKind::Private,
        Some(kind) => kind.parse().ok()?,
    };
    Some(Caller {
        principal: Principal {
            account_id: text(CONTEXT_ACCOUNT_ID)?,
            namespace: text(CONTEXT_NAMESPACE)?,
        },
        kind,
    })
}

/// The caller of a session start, with a key of either kind: from the gateway authorizer's
/// context when the request came through the gateway, otherwise (cargo lambda watch, a function
/// URL) by checking the key here with the same code the authorizer runs. No route is ever
/// unauthenticated.
pub async fn session_caller<K: KeyStore>(
    request: &lambda_http::Request,
    keys: &K,
) -> Result<Caller, ApiError> {
    use lambda_http::RequestExt;
    match caller_from_context(request.request_context_ref()) {
        Some(caller) => Ok(caller),
        None => authenticate(request.headers(), keys)
            .await?
            .ok_or(ApiError::Unauthorized),
    }
}

/// The caller of every other route: a private key's account; a public key is a 403.
pub async fn caller<K: KeyStore>(
    request: &lambda_http::Request,
    keys: &K,
) -> Result<Principal, ApiError> {
    let caller = session_caller(request, keys).await?;
    match caller.kind {
        KeyKind::Private => Ok(caller.principal),
        KeyKind::Public => Err(ApiError::Forbidden),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn generated_keys_parse_and_have_the_documented_shape() {
        let key = ApiKey::generate();
        assert_eq!(key.expose().len(), KEY_LENGTH);
        assert!(key.expose().starts_with("ahk_"));
        assert_eq!(ApiKey::parse(key.expose()), Ok(key.clone()));
        assert_ne!(ApiKey::generate(), key);
    }

    #[test]
    fn public_keys_have_their_own_prefix_and_the_same_shape() {
        let key = ApiKey::generate_of(KeyKind::Public);
        assert!(key.expose().starts_with("ahp_"));
        assert_eq!(key.expose().len(), KEY_LENGTH);
        assert_eq!(key.kind(), KeyKind::Public);
        assert_eq!(ApiKey::parse(key.expose()), Ok(key.clone()));
        assert_eq!(ApiKey::generate().kind(), KeyKind::Private);
        // The prefix is part of what is hashed and checksummed: a public key's text with the
        // private prefix is no key.
        let swapped = format!("{KEY_PREFIX}{}", &key.expose()[4..]);
        assert_eq!(ApiKey::parse(&swapped), Err(KeyFormatError::Checksum));
        assert!(format!("{key:?}").starts_with("ApiKey(ahp_"));
        assert!(!format!("{key:?}").contains(&key.expose()[4..]));
    }

    #[test]
    fn checksum_rejects_any_single_character_typo() {
        let key = ApiKey::generate();
        let text = key.expose();
        for position in KEY_PREFIX.len()..KEY_LENGTH {
            let mut typo = text.as_bytes().to_vec();
            typo[position] = if typo[position] == b'x' { b'y' } else { b'x' };
            let typo = String::from_utf8(typo).unwrap();
            assert_eq!(
                ApiKey::parse(&typo),
                Err(KeyFormatError::Checksum),
                "position {position}"
            );
        }
    }

    #[test]
    fn malformed_keys_are_rejected_by_shape() {
        let key = ApiKey::generate();
        assert_eq!(ApiKey::parse(""), Err(KeyFormatError::Shape));
        assert_eq!(
            ApiKey::parse(&key.expose()[1..]),
            Err(KeyFormatError::Shape)
        );
        assert_eq!(
            ApiKey::parse(&format!("ghp_{}", &key.expose()[4..])),
            Err(KeyFormatError::Shape)
        );
        let mut dashed = key.expose().to_owned();
        dashed.replace_range(10..11, "-");
        assert_eq!(ApiKey::parse(&dashed), Err(KeyFormatError::Alphabet));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let key = ApiKey::generate();
        assert!(!format!("{key:?}").contains(&key.expose()[4..]));
    }

    #[test]
    fn usage_plan_keys_are_per_api_and_account_and_fit_api_gateway() {
        let key = usage_plan_key_value("abc123", "acme");
        // API Gateway key values: 20 to 128 alphanumeric characters.
        assert_eq!(key.len(), 64);
        assert!(key.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(key, usage_plan_key_value("abc123", "acme"));
        assert_ne!(key, usage_plan_key_value("abc123", "acme2"));
        assert_ne!(key, usage_plan_key_value("def456", "acme"));
    }

    #[test]
    fn hash_is_sha256_hex_and_key_id_its_prefix() {
        let key = ApiKey::parse(&{
            let body = format!("{KEY_PREFIX}{}", "a".repeat(30));
            format!("{body}{}", checksum(&body))
        })
        .unwrap();
        let hash = key.hash();
        assert_eq!(hash.as_str().len(), 64);
        assert!(
            hash.as_str()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(hash.key_id(), &hash.as_str()[..12]);
        assert_eq!(hash, key.hash());
    }

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(
                http::header::AUTHORIZATION,
                HeaderValue::from_bytes(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn bearer_header_forms() {
        let key = ApiKey::generate();
        let k = key.expose();
        for good in [
            format!("Bearer {k}"),
            format!("bearer {k}"),
            format!("BEARER {k}"),
        ] {
            assert_eq!(
                bearer_key(&headers(&[good.as_bytes()])),
                Some(key.clone()),
                "{good}"
            );
        }
        for bad in [
            format!("Bearer  {k}"),
            format!("Bearer {k} "),
            format!("Basic {k}"),
            format!("Bearer{k}"),
            k.to_owned(),
            "Bearer ".to_owned(),
            String::new(),
        ] {
            assert_eq!(bearer_key(&headers(&[bad.as_bytes()])), None, "{bad:?}");
        }
        assert_eq!(bearer_key(&HeaderMap::new()), None);
        assert_eq!(bearer_key(&headers(&[b"Bearer \xff\xfe"])), None);
        let one = format!("Bearer {k}");
        assert_eq!(
            bearer_key(&headers(&[one.as_bytes(), one.as_bytes()])),
            None
        );
    }
}
