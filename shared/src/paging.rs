//! A list by name, a page at a time (agents, secret sets): `limit` and a signed `cursor`
//! holding the page's last name, bound to the account whose list it is.

use crate::ApiError;
use crate::cursor::{CursorFormat, CursorKey};
use crate::validation::QueryParameters;

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 100;
/// The query parameters a list takes; any other is a 400 naming it.
pub const PARAMETERS: &[&str] = &["limit", "cursor"];

/// A list request: how many, and after which name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub limit: usize,
    pub after: Option<String>,
}

impl ListQuery {
    /// Reads the query parameters of a list of the account `namespace` whose cursors are of
    /// `format` (each parameter at most once; an empty value is an absent one).
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
        key: &CursorKey,
        format: &CursorFormat,
        namespace: &str,
    ) -> Result<Self, ApiError> {
        let params = QueryParameters::read(params, PARAMETERS)?;
        let limit = match params.get("limit") {
            None => DEFAULT_LIMIT,
            Some(value) => value
                .parse()
                .ok()
                .filter(|limit| (1..=MAX_LIMIT).contains(limit))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "limit",
                        format!("limit must be an integer from 1 to {MAX_LIMIT}"),
                    )
                })?,
        };
        let after = params
            .get("cursor")
            .map(|cursor| key.decode(format, cursor, namespace))
            .transpose()?;
        Ok(ListQuery { limit, after })
    }
}

/// A store's page from the `limit + 1` items it read in order: the first `limit`, and whether
/// more follow (the one extra says so).
pub fn split_page<T>(mut items: Vec<T>, limit: usize) -> (Vec<T>, bool) {
    let more = items.len() > limit;
    items.truncate(limit);
    (items, more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extra_item_says_more_follow() {
        assert_eq!(split_page(vec![1, 2, 3], 2), (vec![1, 2], true));
        assert_eq!(split_page(vec![1, 2], 2), (vec![1, 2], false));
        assert_eq!(split_page(Vec::<u8>::new(), 2), (vec![], false));
    }
}
