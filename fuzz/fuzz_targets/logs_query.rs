//! The logs query parameters and cursors: any names and values (split from the input at `&` and
//! `=`), and any text as a cursor. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let pairs: Vec<(&str, &str)> = text
        .split('&')
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .collect();
    let _ = shared::logs::LogQuery::from_params(pairs.iter().copied());
    // Any key: the length and shape checks run before the tag's, and none may panic.
    let key = shared::cursor::CursorKey::from_bytes([7; 32]);
    let _ = shared::logs::cursor::decode(&key, &text, "fingerprint");
});
