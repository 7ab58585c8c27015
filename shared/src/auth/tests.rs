//! The credential check's tests: key format, bearer parsing, both kinds of caller.

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

#[test]
fn bearer_credentials_are_a_key_or_a_jws_shaped_token_and_nothing_else() {
    let key = ApiKey::generate();
    let bearer = |value: &str| bearer_credential(&headers(&[format!("Bearer {value}").as_bytes()]));
    assert_eq!(bearer(key.expose()), Some(Credential::Key(key.clone())));
    let token = crate::people::testing::TestIssuer::global().access_token("p-1");
    assert_eq!(bearer(&token), Some(Credential::Token(token.clone())));
    assert_eq!(
        bearer("a-b_c.d.e"),
        Some(Credential::Token("a-b_c.d.e".into()))
    );
    let long = format!("{}.b.c", "a".repeat(MAX_TOKEN_BYTES));
    for refused in [
        "a.b",         // two segments
        "a.b.c.d",     // four (a JWE has five)
        "a..c",        // an empty one
        "a.b=.c",      // padding
        "a.b+/.c",     // base64, not base64url
        "ahk_short",   // a key's prefix, not a key
        long.as_str(), // over 4096 bytes
    ] {
        assert_eq!(bearer(refused), None, "{refused}");
    }
    // A token is no key: bearer_key stays the key's own check.
    assert_eq!(
        bearer_key(&headers(&[format!("Bearer {token}").as_bytes()])),
        None
    );
}

/// Keys and people on their own: no store needed beyond two maps.
#[derive(Default)]
struct People {
    people: Vec<PersonRecord>,
    key: Option<(ApiKey, KeyRecord)>,
}

impl KeyStore for People {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        Ok(self
            .key
            .as_ref()
            .filter(|(key, _)| &key.hash() == hash)
            .map(|(_, record)| record.clone()))
    }

    async fn find_person(&self, person_id: &str) -> Result<Option<PersonRecord>, StoreError> {
        Ok(self
            .people
            .iter()
            .find(|p| p.person_id == person_id)
            .cloned())
    }
}

fn person(person_id: &str, account_id: &str) -> PersonRecord {
    PersonRecord {
        person_id: person_id.into(),
        account_id: account_id.into(),
        namespace: format!("{account_id}-ns"),
        email: format!("{person_id}@example.test"),
        created_at: "2026-11-26T14:00:00.000Z".into(),
    }
}

fn with_key(kind: KeyKind) -> People {
    let key = ApiKey::generate_of(kind);
    let record = KeyRecord {
        key_id: key.hash().key_id().to_owned(),
        kind,
        account_id: "acme".into(),
        namespace: "acme-ns".into(),
        created_at: "2026-11-26T14:00:00.000Z".into(),
        revoked_at: None,
    };
    People {
        people: vec![person("p-1", "acme")],
        key: Some((key, record)),
    }
}

fn request(authorization: &str) -> lambda_http::Request {
    http::Request::builder()
        .uri("https://example.test/v1/keys")
        .header(http::header::AUTHORIZATION, authorization)
        .body(lambda_http::Body::Empty)
        .unwrap()
}

#[tokio::test]
async fn a_persons_token_is_their_accounts_caller_and_only_a_person_is_a_person_caller() {
    let store = with_key(KeyKind::Private);
    let issuer = crate::people::testing::TestIssuer::global();
    let token = request(&format!("Bearer {}", issuer.access_token("p-1")));
    let caller = session_caller(&token, &store).await.unwrap();
    assert_eq!(
        caller,
        Caller {
            principal: Principal {
                account_id: "acme".into(),
                namespace: "acme-ns".into()
            },
            kind: CallerKind::Person {
                person_id: "p-1".into()
            },
        }
    );
    assert_eq!(
        super::caller(&token, &store).await.unwrap().account_id,
        "acme"
    );
    assert_eq!(
        person_caller(&token, &store).await.unwrap(),
        person("p-1", "acme")
    );

    // Any API key, private or public, is a 403 on the people's routes.
    for kind in [KeyKind::Private, KeyKind::Public] {
        let store = with_key(kind);
        let key = store.key.as_ref().unwrap().0.expose().to_owned();
        let error = person_caller(&request(&format!("Bearer {key}")), &store).await;
        assert!(
            matches!(error, Err(ApiError::KeysNeedAPerson)),
            "{kind:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_bad_token_or_a_person_of_no_account_is_the_bad_key_401() {
    let store = with_key(KeyKind::Private);
    let issuer = crate::people::testing::TestIssuer::global();
    for token in [
        issuer.expired_token("p-1"),
        issuer.forged_token("p-1"),
        issuer.id_token("p-1"),
        issuer.other_client_token("p-1"),
        issuer.access_token("nobody"),
    ] {
        let request = request(&format!("Bearer {token}"));
        let error = session_caller(&request, &store).await;
        assert!(matches!(error, Err(ApiError::Unauthorized)), "{error:?}");
        assert!(matches!(
            person_caller(&request, &store).await,
            Err(ApiError::Unauthorized)
        ));
    }
}

/// A REST API request whose authorizer context holds `fields`.
fn through_gateway(fields: serde_json::Value) -> lambda_http::Request {
    let path = format!("{}/../events/get-agent.json", env!("CARGO_MANIFEST_DIR"));
    let mut event: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    event["requestContext"]["authorizer"] = fields;
    crate::lambda::request_from_event(&event.to_string()).unwrap()
}

fn context_caller(fields: serde_json::Value) -> Option<Caller> {
    use lambda_http::RequestExt;
    caller_from_context(through_gateway(fields).request_context_ref())
}

#[tokio::test]
async fn the_authorizers_context_names_a_person_by_person_id() {
    let person = context_caller(serde_json::json!({
        "principalId": "acme", "accountId": "acme", "namespace": "acme-ns", "personId": "p-1",
    }));
    assert_eq!(
        person.map(|caller| caller.kind),
        Some(CallerKind::Person {
            person_id: "p-1".into()
        })
    );
    let key = |kind: Option<&str>| {
        let mut fields = serde_json::json!({"accountId": "acme", "namespace": "acme-ns"});
        if let Some(kind) = kind {
            fields["keyKind"] = kind.into();
        }
        context_caller(fields).map(|caller| caller.kind)
    };
    assert_eq!(key(None), Some(CallerKind::Key(KeyKind::Private)));
    assert_eq!(key(Some("public")), Some(CallerKind::Key(KeyKind::Public)));
    // Both, or an empty person, is no context the authorizer writes.
    for fields in [
        serde_json::json!({"accountId": "a", "namespace": "n", "personId": "p", "keyKind": "private"}),
        serde_json::json!({"accountId": "a", "namespace": "n", "personId": ""}),
    ] {
        assert_eq!(context_caller(fields), None);
    }

    // Through the gateway, a person's context passes caller() and person_caller() (whose
    // GetItem finds the person still there), and a key's context is 403 on person routes.
    let store = with_key(KeyKind::Private);
    let request = through_gateway(serde_json::json!({
        "accountId": "acme", "namespace": "acme-ns", "personId": "p-1",
    }));
    assert_eq!(
        person_caller(&request, &store).await.unwrap().email,
        "p-1@example.test"
    );
    let removed = through_gateway(serde_json::json!({
        "accountId": "acme", "namespace": "acme-ns", "personId": "p-gone",
    }));
    assert!(matches!(
        person_caller(&removed, &store).await,
        Err(ApiError::Unauthorized)
    ));
    let key = through_gateway(serde_json::json!({"accountId": "acme", "namespace": "acme-ns"}));
    assert!(matches!(
        person_caller(&key, &store).await,
        Err(ApiError::KeysNeedAPerson)
    ));
}
