//! GET .../logs query strings: every rule of contract section 4, with its defaults.

use serde::Serialize;

use super::text;
use crate::ApiError;
use crate::validation::QueryParameters;

pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 1000;
/// offset + limit may not exceed this (Elasticsearch's result window), nor does `total` count
/// past it.
pub const RESULT_WINDOW: usize = 10_000;
pub const MAX_QUERY_LENGTH: usize = 256;
pub const MAX_ID_LENGTH: usize = 256;
/// The last second of year 9999: a larger value is almost surely milliseconds sent by mistake.
pub const MAX_UNIX_SECONDS: i64 = 253_402_300_799;
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

fn integer(
    name: &str,
    value: &str,
    range: std::ops::RangeInclusive<i64>,
    hint: &str,
) -> Result<i64, ApiError> {
    match value.parse::<i64>() {
        Ok(number) if range.contains(&number) => Ok(number),
        _ => Err(ApiError::bad_request(
            name,
            format!(
                "{name} must be an integer from {} to {}{hint}",
                range.start(),
                range.end()
            ),
        )),
    }
}

fn unix_seconds(name: &str, value: &str) -> Result<i64, ApiError> {
    let hint = match value.parse::<i64>() {
        Ok(number) if number > MAX_UNIX_SECONDS => {
            "; it is Unix time in seconds, and this value looks like milliseconds (divide by 1000)"
        }
        _ => " (Unix time in seconds)",
    };
    integer(name, value, 0..=MAX_UNIX_SECONDS, hint)
}

impl LogQuery {
    /// Reads the parameters. An empty value is the same as an absent parameter; an unknown or
    /// repeated parameter is a 400 naming it (a filter is never silently dropped).
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ApiError> {
        let params = QueryParameters::read(params, PARAMETERS)?;
        let get = |name: &str| params.get(name);

        let limit = match get("limit") {
            None => DEFAULT_LIMIT,
            Some(value) => integer("limit", value, 1..=MAX_LIMIT as i64, "")? as usize,
        };
        let offset = match get("offset") {
            None => 0,
            Some(value) => integer("offset", value, 0..=RESULT_WINDOW as i64, "")? as usize,
        };
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
        let start_time = get("startTime")
            .map(|v| unix_seconds("startTime", v))
            .transpose()?;
        let end_time = get("endTime")
            .map(|v| unix_seconds("endTime", v))
            .transpose()?;
        if let (Some(start), Some(end)) = (start_time, end_time)
            && end <= start
        {
            return Err(ApiError::bad_request(
                "endTime",
                "endTime must be greater than startTime (startTime is inclusive, endTime exclusive)",
            ));
        }
        let id = |name: &str| -> Result<Option<String>, ApiError> {
            match get(name) {
                Some(value) if value.chars().count() > MAX_ID_LENGTH => Err(ApiError::bad_request(
                    name,
                    format!("{name} must be at most {MAX_ID_LENGTH} characters"),
                )),
                other => Ok(other.map(str::to_owned)),
            }
        };
        let deployment_id = id("deploymentId")?;
        let session_id = id("sessionId")?;
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
        let pairs: Vec<(&str, &str)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect();
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
