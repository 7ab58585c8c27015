//! GET /v1/agents (contract section 6): the caller's agents by name, a page at a time.

use serde::Serialize;

use super::record::AgentRecord;
use super::store::AgentStore;
use crate::ApiError;
use crate::cursor::{CursorFormat, CursorKey};
use crate::validation::{MAX_NAME_LENGTH, is_dns_label};

pub use crate::paging::ListQuery;

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

/// The list's cursors (the route's share of the one cursor format): the name of a page's last
/// agent, bound to the account whose list it is.
pub const CURSOR_FORMAT: CursorFormat = CursorFormat {
    scope: "agents-cursor-v1",
    max_position_length: MAX_NAME_LENGTH,
    is_position: is_dns_label,
};

/// The cursor that continues the account's list after the agent `name`.
pub fn cursor(key: &CursorKey, namespace: &str, name: &str) -> String {
    key.encode(&CURSOR_FORMAT, namespace, name)
}

/// A page of the account `namespace`'s agents, and the cursor after it when more follow.
pub async fn list<S: AgentStore>(
    store: &S,
    namespace: &str,
    query: &ListQuery,
    key: &CursorKey,
) -> Result<AgentList, ApiError> {
    let page = store
        .list_agents(namespace, query.after.as_deref(), query.limit)
        .await?;
    let next_cursor = page
        .agents
        .last()
        .filter(|_| page.more)
        .map(|last| cursor(key, namespace, &last.name));
    Ok(AgentList {
        services: page.agents.iter().map(AgentSummary::from).collect(),
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    const KEY: CursorKey = CursorKey::from_bytes([3; 32]);

    fn parse(pairs: &[(&str, &str)]) -> Result<ListQuery, ApiError> {
        ListQuery::from_params(pairs.iter().copied(), &KEY, &CURSOR_FORMAT, "acme-ns")
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
        let next = cursor(&KEY, "acme-ns", "voice-bot");
        assert_eq!(
            parse(&[("cursor", &next)]).unwrap().after.as_deref(),
            Some("voice-bot")
        );
        assert_eq!(parse(&[("limt", "5")]).unwrap_err().field(), Some("limt"));
        assert_eq!(
            parse(&[("limit", "5"), ("limit", "6")])
                .unwrap_err()
                .field(),
            Some("limit")
        );
    }

    #[test]
    fn a_cursor_the_service_did_not_make_for_this_account_is_a_400_naming_cursor() {
        // The unsigned cursors of earlier versions, which anyone could write: a name chosen
        // by the caller.
        let forged = URL_SAFE_NO_PAD.encode("a1.voice-bot");
        let other_account = cursor(&KEY, "bob-ns", "voice-bot");
        let other_stack = cursor(&CursorKey::from_bytes([4; 32]), "acme-ns", "voice-bot");
        let logs_cursor = KEY.encode(&crate::logs::cursor::FORMAT, "acme-ns", "voice-bot");
        for bad in [
            "%%%",
            "djEuYQ",
            forged.as_str(),
            other_account.as_str(),
            other_stack.as_str(),
            logs_cursor.as_str(),
        ] {
            assert_eq!(
                parse(&[("cursor", bad)]).unwrap_err().field(),
                Some("cursor"),
                "{bad}"
            );
        }
    }
}
