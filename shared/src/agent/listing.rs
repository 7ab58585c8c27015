//! GET /v1/agents (contract section 6): the caller's agents by name, a page at a time; with the
//! anchor CLI's `include` and `region` (docs/api.md, "Reading an agent"), which `pipecat cloud
//! agent list` sends.

use serde::Serialize;

use super::record::AgentRecord;
use super::store::AgentStore;
use crate::ApiError;
use crate::cursor::{CursorFormat, CursorKey};
use crate::validation::{MAX_NAME_LENGTH, QueryParameters, is_dns_label};

pub use crate::paging::ListQuery;

/// The parameters of the list: the pages', and the anchor CLI's two.
pub const PARAMETERS: &[&str] = &["limit", "cursor", "include", "region"];

/// What `include` may name: the anchor's `git` (its GitHub binding, which no agent here has, so
/// the summaries carry no `git` member).
const INCLUDABLE: &[&str] = &["git"];

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
    /// The region of this service (the anchor's CLI prints it).
    pub region: String,
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
            region: crate::config::region(),
        }
    }
}

/// A list request: the page, and whether the `region` asked for (if any) is this service's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentListQuery {
    pub page: ListQuery,
    /// `false` when `region` names another region: no agent is there, the list is empty.
    pub in_region: bool,
}

impl AgentListQuery {
    /// Reads the query of a list of the account `namespace`'s agents by a service in `region`:
    /// `limit` and `cursor` as every list, `include` a comma list of `git`, `region` any region
    /// (a filter: only this service's region has agents). An unknown or repeated parameter is a
    /// 400 naming it; an empty value is an absent one.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
        key: &CursorKey,
        namespace: &str,
        region: &str,
    ) -> Result<Self, ApiError> {
        let pairs: Vec<(&str, &str)> = params.into_iter().collect();
        let params = QueryParameters::read(pairs.iter().copied(), PARAMETERS)?;
        if let Some(include) = params.get("include")
            && !include.split(',').all(|item| INCLUDABLE.contains(&item))
        {
            return Err(ApiError::bad_request(
                "include",
                "include must be 'git', or be left out",
            ));
        }
        let in_region = params.get("region").is_none_or(|given| given == region);
        let page = ListQuery::from_params(
            pairs
                .into_iter()
                .filter(|(name, _)| crate::paging::PARAMETERS.contains(name)),
            key,
            &CURSOR_FORMAT,
            namespace,
        )?;
        Ok(AgentListQuery { page, in_region })
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
    query: &AgentListQuery,
    key: &CursorKey,
) -> Result<AgentList, ApiError> {
    if !query.in_region {
        return Ok(AgentList {
            services: Vec::new(),
            next_cursor: None,
        });
    }
    let query = &query.page;
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

    fn parse_list(pairs: &[(&str, &str)]) -> Result<AgentListQuery, ApiError> {
        AgentListQuery::from_params(pairs.iter().copied(), &KEY, "acme-ns", "us-east-1")
    }

    #[test]
    fn include_git_is_accepted_as_the_anchors_cli_sends_it_and_nothing_else() {
        for include in ["git", "git,git", ""] {
            let query = parse_list(&[("include", include)]).unwrap();
            assert_eq!(query.page, parse(&[]).unwrap(), "{include}");
            assert!(query.in_region);
        }
        for bad in ["gti", "git,deployments", "git,", ",git", "GIT", " git"] {
            let error = parse_list(&[("include", bad)]).unwrap_err();
            assert_eq!(error.field(), Some("include"), "{bad}");
            assert_eq!(error.to_string(), "include must be 'git', or be left out");
        }
        assert_eq!(
            parse_list(&[("include", "git"), ("include", "git")])
                .unwrap_err()
                .field(),
            Some("include")
        );
    }

    #[test]
    fn region_filters_this_services_region_in_and_any_other_out() {
        assert!(parse_list(&[("region", "us-east-1")]).unwrap().in_region);
        assert!(
            parse_list(&[("region", "")]).unwrap().in_region,
            "empty is absent"
        );
        assert!(!parse_list(&[("region", "eu-west-1")]).unwrap().in_region);
        let both = parse_list(&[("include", "git"), ("region", "us-east-1"), ("limit", "7")]);
        assert_eq!(both.unwrap().page.limit, 7, "the page is read beside them");
        // The page's own rules are unchanged, and an unknown parameter still named.
        assert_eq!(
            parse_list(&[("limit", "0")]).unwrap_err().field(),
            Some("limit")
        );
        assert_eq!(
            parse_list(&[("regoin", "x")]).unwrap_err().field(),
            Some("regoin")
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
