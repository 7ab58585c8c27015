//! A list by name, a page at a time (agents, secret sets): `limit` and a signed `cursor`
//! holding the page's last name, bound to the account whose list it is.

use serde::Serialize;

use crate::ApiError;
use crate::cursor::{CursorFormat, CursorKey};
use crate::validation::QueryParameters;

/// A `total` counts matches exactly up to this many, and says `gte` past it (contract section
/// 4, as Elasticsearch's result window): counting stops past it.
pub const TOTAL_BOUND: usize = 10_000;

/// Whether `total` is the exact count of matching items or a lower bound of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Relation {
    Eq,
    Gte,
}

impl std::fmt::Display for Relation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Relation::Eq => "eq",
            Relation::Gte => "gte",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Total {
    pub value: usize,
    pub relation: Relation,
}

impl Total {
    pub fn exact_or_bound(count: usize, complete: bool) -> Self {
        if count > TOTAL_BOUND {
            Total {
                value: TOTAL_BOUND,
                relation: Relation::Gte,
            }
        } else {
            Total {
                value: count,
                relation: if complete {
                    Relation::Eq
                } else {
                    Relation::Gte
                },
            }
        }
    }
}

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
