//! Names a caller sent, as an error message may echo them.

/// Longest part of an unknown parameter's name an error echoes.
const MAX_ECHOED_NAME: usize = 64;

/// A name as an error message may echo it: cut to 64 characters, marked when cut.
pub fn echoed(name: &str) -> String {
    match name.char_indices().nth(MAX_ECHOED_NAME) {
        None => name.to_owned(),
        Some((cut, _)) => format!("{}…", &name[..cut]),
    }
}
