//! Query strings read against the parameters an endpoint knows, and the values they take.

use super::echo::echoed;
use crate::ApiError;

/// A query string read against the parameters an endpoint knows: an unknown or repeated
/// parameter is a 400 naming it (a filter is never silently dropped), and an empty value is the
/// same as an absent parameter (contract section 4).
#[derive(Debug)]
pub struct QueryParameters<'a> {
    given: Vec<(&'a str, &'a str)>,
}

impl<'a> QueryParameters<'a> {
    pub fn read(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
        known: &[&str],
    ) -> Result<Self, ApiError> {
        let mut given: Vec<(&str, &str)> = Vec::new();
        for (name, value) in params {
            if !known.contains(&name) {
                let name = echoed(name);
                return Err(ApiError::bad_request(
                    name.clone(),
                    format!(
                        "Unknown query parameter {name}; known: {}",
                        known.join(", ")
                    ),
                ));
            }
            if given.iter().any(|(seen, _)| *seen == name) {
                return Err(ApiError::bad_request(
                    name,
                    format!("{name} is given more than once"),
                ));
            }
            given.push((name, value));
        }
        Ok(QueryParameters { given })
    }

    /// The value of a parameter, unless absent or empty.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.given
            .iter()
            .find(|(given, _)| *given == name)
            .map(|(_, value)| *value)
            .filter(|value| !value.is_empty())
    }

    /// An integer parameter within `range`, or `default` when absent; a 400 naming it with
    /// `hint` otherwise.
    pub fn integer(
        &self,
        name: &str,
        range: std::ops::RangeInclusive<i64>,
        default: i64,
    ) -> Result<i64, ApiError> {
        self.get(name)
            .map_or(Ok(default), |value| integer(name, value, range, ""))
    }

    /// `start` (inclusive) and `end` (exclusive) parameters in Unix seconds, `end` after
    /// `start` when both are given (contract section 4).
    pub fn time_range(
        &self,
        start: &str,
        end: &str,
    ) -> Result<(Option<i64>, Option<i64>), ApiError> {
        let start_time = self
            .get(start)
            .map(|v| unix_seconds(start, v))
            .transpose()?;
        let end_time = self.get(end).map(|v| unix_seconds(end, v)).transpose()?;
        if let (Some(from), Some(until)) = (start_time, end_time)
            && until <= from
        {
            return Err(ApiError::bad_request(
                end,
                format!(
                    "{end} must be greater than {start} ({start} is inclusive, {end} exclusive)"
                ),
            ));
        }
        Ok((start_time, end_time))
    }

    /// An id parameter of at most [`MAX_QUERY_ID_LENGTH`] characters (matched exactly).
    pub fn id(&self, name: &str) -> Result<Option<String>, ApiError> {
        match self.get(name) {
            Some(value) if value.chars().count() > MAX_QUERY_ID_LENGTH => {
                Err(ApiError::bad_request(
                    name,
                    format!("{name} must be at most {MAX_QUERY_ID_LENGTH} characters"),
                ))
            }
            other => Ok(other.map(str::to_owned)),
        }
    }
}

/// The longest id a filter takes.
pub const MAX_QUERY_ID_LENGTH: usize = 256;
/// The last second of year 9999: a larger value is almost surely milliseconds sent by mistake.
pub const MAX_UNIX_SECONDS: i64 = 253_402_300_799;

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

/// The name and value pairs of a query string as written (`a=1&b`), undecoded: what the
/// readers' tests give them.
#[cfg(test)]
pub(crate) fn pairs(query: &str) -> Vec<(&str, &str)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_refuse_unknown_and_repeated_names_and_echo_at_most_64_characters() {
        let known = ["limit", "cursor"];
        let read = |pairs: &[(&'static str, &'static str)]| {
            QueryParameters::read(pairs.iter().copied(), &known)
        };
        let params = read(&[("limit", "5"), ("cursor", "")]).unwrap();
        assert_eq!(params.get("limit"), Some("5"));
        assert_eq!(params.get("cursor"), None, "empty is absent");
        assert_eq!(read(&[("limt", "5")]).unwrap_err().field(), Some("limt"));
        assert_eq!(
            read(&[("limit", "1"), ("limit", "2")]).unwrap_err().field(),
            Some("limit")
        );
        let long: &'static str = Box::leak("x".repeat(60_000).into_boxed_str());
        let error = read(&[(long, "1")]).unwrap_err();
        assert_eq!(error.field().unwrap().chars().count(), 65);
        assert!(error.to_string().len() < 200, "{}", error.to_string().len());
        let accents: &'static str = Box::leak("é".repeat(70).into_boxed_str());
        assert!(
            read(&[(accents, "1")])
                .unwrap_err()
                .field()
                .unwrap()
                .ends_with('…')
        );
    }
}
