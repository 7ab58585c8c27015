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
