//! GET /v1/agents (contract section 6): the caller's agents by name, a page at a time.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;

use super::record::AgentRecord;
use crate::ApiError;
use crate::validation::{QueryParameters, is_dns_label};

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 100;
/// The query parameters the list takes; any other is a 400 naming it.
pub const PARAMETERS: &[&str] = &["limit", "cursor"];

/// One agent of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSummary {
    /// The agent's serviceId.
    pub id: String,
    pub name: String,
    pub active_deployment_id: String,
    pub ready: bool,
    pub active_deployment_ready: bool,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&AgentRecord> for AgentSummary {
    fn from(agent: &AgentRecord) -> Self {
        AgentSummary {
            id: agent.service_id.clone(),
            name: agent.name.clone(),
            active_deployment_id: agent.active.deployment.id.clone(),
            ready: agent.ready(),
            active_deployment_ready: agent.active.status.is_ready(),
            created_at: agent.created_at.clone(),
            updated_at: agent.updated_at.clone(),
        }
    }
}

/// The answer: `{"services": [...], "nextCursor"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentList {
    pub services: Vec<AgentSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A list request: how many, and after which name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub limit: usize,
    pub after: Option<String>,
}

const CURSOR_VERSION: &str = "a1.";

/// The cursor that continues after the agent `name`.
pub fn cursor(name: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_VERSION}{name}"))
}

fn bad_cursor() -> ApiError {
    ApiError::bad_request("cursor", "cursor is not valid: pass nextCursor unchanged")
}

impl ListQuery {
    /// Reads the query parameters (each at most once; an empty value is an absent one).
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
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
            .map(|cursor| {
                let text = URL_SAFE_NO_PAD
                    .decode(cursor)
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .ok_or_else(bad_cursor)?;
                text.strip_prefix(CURSOR_VERSION)
                    .filter(|name| is_dns_label(name))
                    .map(str::to_owned)
                    .ok_or_else(bad_cursor)
            })
            .transpose()?;
        let query = ListQuery { limit, after };
        Ok(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<ListQuery, ApiError> {
        ListQuery::from_params(pairs.iter().copied())
    }

    #[test]
    fn limit_and_cursor_follow_the_contract() {
        assert_eq!(
            parse(&[]).unwrap(),
            ListQuery {
                limit: 100,
                after: None
            }
        );
        assert_eq!(parse(&[("limit", "1")]).unwrap().limit, 1);
        assert_eq!(
            parse(&[("limit", "")]).unwrap().limit,
            100,
            "empty is absent"
        );
        for bad in ["0", "101", "-1", "ten", "1.5"] {
            assert_eq!(
                parse(&[("limit", bad)]).unwrap_err().field(),
                Some("limit"),
                "{bad}"
            );
        }
        let next = cursor("voice-bot");
        assert_eq!(
            parse(&[("cursor", &next)]).unwrap().after.as_deref(),
            Some("voice-bot")
        );
        let forged = URL_SAFE_NO_PAD.encode("a1.Not A Name");
        for bad in ["%%%", "djEuYQ", forged.as_str()] {
            assert_eq!(
                parse(&[("cursor", bad)]).unwrap_err().field(),
                Some("cursor"),
                "{bad}"
            );
        }
        assert_eq!(parse(&[("limt", "5")]).unwrap_err().field(), Some("limt"));
        assert_eq!(
            parse(&[("limit", "5"), ("limit", "6")])
                .unwrap_err()
                .field(),
            Some("limit")
        );
    }
}
