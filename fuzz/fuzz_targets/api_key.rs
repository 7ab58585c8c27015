//! The key checker: any text as a key and as an Authorization header. Nothing may panic, and a
//! key that parses is exactly the text given (prefix, length and checksum all hold).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::auth::ApiKey;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(key) = ApiKey::parse(&text) {
        assert_eq!(key.expose(), text.as_ref());
        assert!(ApiKey::parse(&text[..text.len() - 1]).is_err());
        let _ = key.hash().key_id().to_owned();
    }
    let mut headers = http::HeaderMap::new();
    if let Ok(value) = http::HeaderValue::from_bytes(data) {
        headers.insert(http::header::AUTHORIZATION, value);
    }
    if let Some(key) = shared::auth::bearer_key(&headers) {
        assert!(ApiKey::parse(key.expose()).is_ok());
    }
});
