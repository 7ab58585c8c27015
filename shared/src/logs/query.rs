//! GET .../logs query strings: every rule of contract section 4, with its defaults.

use serde::Serialize;

use super::text;
use crate::ApiError;
use crate::validation::QueryParameters;

pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 1000;
/// offset + limit may not exceed this (Elasticsearch's result window), nor does `total` count
/// past it.
pub const RESULT_WINDOW: usize = crate::paging::TOTAL_BOUND;
pub const MAX_QUERY_LENGTH: usize = 256;
pub use crate::validation::{MAX_QUERY_ID_LENGTH as MAX_ID_LENGTH, MAX_UNIX_SECONDS};
/// Lines a text query may read per call; past it, `total` says `gte` and a cursor continues.
/// Lines are read in compressed chunks, a fifth of their size or less, so ten times the
/// result window costs about what 10,000 uncompressed lines would (docs/logs.md).
pub const QUERY_READ_BUDGET: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    Desc,
}

/// A validated GET .../logs query string with its defaults (contract section 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogQuery {
    pub limit: usize,
    pub offset: usize,
    pub order: Order,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    pub deployment_id: Option<String>,
    pub session_id: Option<String>,
    /// The text query, case-folded (matching is case-insensitive: [`text`]).
    pub query: Option<String>,
    pub cursor: Option<String>,
}

/// The query parameters GET logs accepts; any other is a 400.
pub const PARAMETERS: &[&str] = &[
    "limit",
    "offset",
    "order",
    "startTime",
    "endTime",
    "deploymentId",
    "sessionId",
    "query",
    "cursor",
];

impl LogQuery {
    /// Reads the parameters. An empty value is the same as an absent parameter; an unknown or
    /// repeated parameter is a 400 naming it (a filter is never silently dropped).
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ApiError> {
        let params = QueryParameters::read(params, PARAMETERS)?;
        let get = |name: &str| params.get(name);

        let limit = params.integer("limit", 1..=MAX_LIMIT as i64, DEFAULT_LIMIT as i64)? as usize;
        let offset = params.integer("offset", 0..=RESULT_WINDOW as i64, 0)? as usize;
        if offset + limit > RESULT_WINDOW {
            return Err(ApiError::bad_request(
                "offset",
                format!(
                    "offset + limit must be at most {RESULT_WINDOW}; use cursor (nextCursor of the previous page) to read further"
                ),
            ));
        }
        let order = match get("order") {
            None | Some("desc") => Order::Desc,
            Some("asc") => Order::Asc,
            Some(_) => return Err(ApiError::bad_request("order", "order must be asc or desc")),
        };
        let (start_time, end_time) = params.time_range("startTime", "endTime")?;
        let deployment_id = params.id("deploymentId")?;
        let session_id = params.id("sessionId")?;
        let query = match get("query") {
            Some(text) if text.chars().count() > MAX_QUERY_LENGTH => {
                return Err(ApiError::bad_request(
                    "query",
                    format!("query must be 1 to {MAX_QUERY_LENGTH} characters"),
                ));
            }
            other => other.map(|text| text::fold(text).into_owned()),
        };
        // With a cursor, offset skips entries after it.
        let cursor = get("cursor").map(str::to_owned);
        Ok(LogQuery {
            limit,
            offset,
            order,
            start_time,
            end_time,
            deployment_id,
            session_id,
            query,
            cursor,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn parse(query: &str) -> Result<LogQuery, ApiError> {
        let pairs = crate::validation::query_pairs(query);
        LogQuery::from_params(pairs)
    }

    fn rejected(query: &str, field: &str) {
        let error = parse(query).expect_err(query);
        assert_eq!(error.status().as_u16(), 400, "{query}");
        assert_eq!(error.field(), Some(field), "{query}");
    }

    #[test]
    fn defaults() {
        let query = parse("").unwrap();
        assert_eq!(
            (query.limit, query.offset, query.order),
            (10, 0, Order::Desc)
        );
        assert_eq!(
            parse("query=&limit=&order=").unwrap(),
            query,
            "empty values are absent"
        );
    }

    #[test]
    fn every_rule_of_contract_section_4() {
        for bad in [
            "limit=0",
            "limit=1001",
            "limit=abc",
            "limit=1.5",
            "limit=-1",
            "limit=99999999999999999999",
        ] {
            rejected(bad, "limit");
        }
        for bad in [
            "offset=-1",
            "offset=x",
            "offset=9991&limit=10",
            "offset=10000",
        ] {
            rejected(bad, "offset");
        }
        assert!(parse("offset=9990&limit=10").is_ok());
        assert!(parse("offset=0&limit=1000").is_ok());
        rejected("order=up", "order");
        rejected("order=ASC", "order");
        rejected("startTime=abc", "startTime");
        rejected("startTime=-5", "startTime");
        rejected("endTime=1.5", "endTime");
        rejected("startTime=100&endTime=100", "endTime");
        rejected("startTime=200&endTime=100", "endTime");
        rejected(&format!("query={}", "q".repeat(257)), "query");
        assert!(parse(&format!("query={}", "q".repeat(256))).is_ok());
        rejected("sesionId=abc", "sesionId");
        rejected("limit=5&limit=6", "limit");
        rejected(&format!("deploymentId={}", "d".repeat(257)), "deploymentId");
        let both = parse("cursor=abc&offset=5").unwrap();
        assert_eq!((both.offset, both.cursor.as_deref()), (5, Some("abc")));
    }

    #[test]
    fn milliseconds_get_a_hint() {
        let error = parse("startTime=1745008457153").unwrap_err();
        assert_eq!(error.field(), Some("startTime"));
        assert!(error.to_string().contains("milliseconds"), "{error}");
        assert!(parse(&format!("endTime={MAX_UNIX_SECONDS}")).is_ok());
    }
}
