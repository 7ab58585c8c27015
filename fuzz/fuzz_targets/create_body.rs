//! The create body parser: any bytes, under any Content-Type, through the same steps as the
//! handler (size and type check, JSON, the contract's rules, the manifest, the answer and its
//! idempotency fingerprint). Nothing may panic; an accepted body must make an agent that
//! serializes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shared::agent::{Agent, AgentSpec};

fuzz_target!(|input: (u8, &[u8])| {
    let (content_type, body) = input;
    let mut headers = http::HeaderMap::new();
    let types: [&[u8]; 4] = [b"application/json", b"text/plain", b"application/x+json", b""];
    if let Ok(value) = http::HeaderValue::from_bytes(types[usize::from(content_type % 4)]) {
        if content_type % 5 != 0 {
            headers.insert(http::header::CONTENT_TYPE, value);
        }
    }
    let Ok(json) = shared::http::json_body(&headers, &lambda_http::Body::Binary(body.to_vec()))
    else {
        return;
    };
    let _ = shared::idempotency::fingerprint(&json);
    if let Ok(spec) = AgentSpec::from_json(json) {
        let agent = Agent::new(&spec, "tiny-ferret-maroon-123", "2026-11-22T00:00:00.000Z");
        serde_json::to_vec(&agent).expect("an accepted agent serializes");
    }
});
