//! The text query: a substring of the line under Unicode case folding (the default, full
//! folding of CaseFolding.txt: `ß` matches `ss`, a final `ς` matches `σ` and `Σ`, `K` the Kelvin
//! sign). Turkic dotted and dotless i fold as in every language but Turkish and Azeri: `I` is
//! `i`, and `İ` is `i̇` (i and a combining dot), which a plain `i` does not match.

use std::borrow::Cow;

/// The form a query is kept in and lines are compared in.
pub fn fold(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        }
    } else {
        Cow::Owned(caseless::default_case_fold_str(text))
    }
}

/// Whether a line matches a text query already [`fold`]ed.
pub fn matches_query(text: &str, folded_query: &str) -> bool {
    // ASCII folds to ASCII lowercase: compare without allocating. A non-ASCII line can match
    // an ASCII query (`ß` against `ss`), so only both ASCII take this path.
    if text.is_ascii() && folded_query.is_ascii() {
        let needle = folded_query.as_bytes();
        return needle.is_empty()
            || text
                .as_bytes()
                .windows(needle.len())
                .any(|window| window.eq_ignore_ascii_case(needle));
    }
    fold(text).contains(folded_query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_matches_under_unicode_case_folding() {
        // (line, query, matches)
        let cases = [
            ("An Error occurred", "error", true),
            ("all good", "error", false),
            ("ÉCHEC total", "échec", true),
            // Greek final sigma: the same letter as σ and Σ.
            ("ΟΔΟΣ κλειστή", "οδος", true),
            ("η οδός", "ΟΔΌΣ", true),
            ("ΟΔΟΣ", "Σ", true),
            ("οδος", "ς", true),
            // German sharp s folds to ss, and the capital ẞ too.
            ("Straße gesperrt", "STRASSE", true),
            ("STRASSE", "straße", true),
            ("GROẞ", "groß", true),
            // Turkish: I is i (default folding), İ is i + combining dot above.
            ("ISTANBUL", "istanbul", true),
            ("İSTANBUL", "i̇stanbul", true),
            ("İSTANBUL", "istanbul", false),
            ("ıstanbul", "istanbul", false),
            // Cherokee lowercase folds to uppercase.
            ("ᏣᎳᎩ", "ꮳꮃꭹ", true),
            ("ꮳꮃꭹ", "ᏣᎳᎩ", true),
            // The Kelvin sign is K.
            ("273 K", "273 k", true),
            // Emoji and other symbols are themselves.
            ("deploy 🚀 done", "🚀", true),
            ("deploy 🚀 done", "🛸", false),
            ("👍🏽 ok", "👍🏽", true),
        ];
        for (line, query, expected) in cases {
            assert_eq!(
                matches_query(line, &fold(query)),
                expected,
                "{line:?} against {query:?}"
            );
        }
    }

    #[test]
    fn ascii_is_folded_without_allocating_when_already_lowercase() {
        assert!(matches!(fold("error 42"), Cow::Borrowed(_)));
        assert_eq!(fold("ERROR"), "error");
    }
}
