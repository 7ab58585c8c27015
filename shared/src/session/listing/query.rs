//! The list's request: its query parameters read into filters, a time range, a limit and a
//! position, and the cursor that carries that position bound to what it was made for.

use crate::ApiError;
use crate::cursor::{CursorFormat, CursorKey};
use crate::session::store::{SessionSummary, StartedWithin};
use crate::session::view::EndState;
use crate::validation::QueryParameters;

pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 100;

/// The query parameters the list takes; any other is a 400 naming it. `endState` is the anchor
/// CLI's filter (`pipecat cloud agent sessions --end-state`), in its vocabulary.
pub const PARAMETERS: &[&str] = &[
    "status",
    "endState",
    "deploymentId",
    "startTime",
    "endTime",
    "limit",
    "cursor",
];

/// The `status` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFilter {
    /// `starting` or `started`.
    Active,
    /// `ended` or `failed`.
    Ended,
    All,
}

/// What a session must be to be listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFilter {
    pub status: StatusFilter,
    pub end_state: Option<EndState>,
    pub deployment_id: Option<String>,
}

impl SessionFilter {
    pub fn matches(&self, session: &SessionSummary) -> bool {
        let status = match self.status {
            StatusFilter::Active => session.state.is_active(),
            StatusFilter::Ended => !session.state.is_active(),
            StatusFilter::All => true,
        };
        status
            && self
                .end_state
                .is_none_or(|wanted| EndState::of_summary(session) == wanted)
            && self
                .deployment_id
                .as_ref()
                .is_none_or(|id| *id == session.deployment_id)
    }
}

/// A validated list request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionQuery {
    pub filter: SessionFilter,
    pub within: StartedWithin,
    pub limit: usize,
    /// The id of the previous page's last session: this page lists older ones.
    pub after: Option<String>,
}

/// The list's cursors: the id of a page's last session, bound to the account, the agent and
/// the filters it was made for.
pub const CURSOR_FORMAT: CursorFormat = CursorFormat {
    scope: "sessions-cursor-v1",
    max_position_length: 36,
    is_position: crate::validation::is_uuid,
};

impl SessionQuery {
    /// Reads the query parameters of a list of `agent_name` in the account `namespace`.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
        key: &CursorKey,
        namespace: &str,
        agent_name: &str,
    ) -> Result<Self, ApiError> {
        let params = QueryParameters::read(params, PARAMETERS)?;
        let status = match params.get("status") {
            None | Some("all") => StatusFilter::All,
            Some("active") => StatusFilter::Active,
            Some("ended") => StatusFilter::Ended,
            Some(_) => {
                return Err(ApiError::bad_request(
                    "status",
                    "status must be active, ended or all",
                ));
            }
        };
        let end_state = params
            .get("endState")
            .map(|given| {
                EndState::ALL
                    .into_iter()
                    .find(|state| state.as_str() == given)
                    .ok_or_else(|| {
                        let known: Vec<&str> = EndState::ALL.iter().map(|s| s.as_str()).collect();
                        ApiError::bad_request(
                            "endState",
                            format!("endState must be one of {}", known.join(", ")),
                        )
                    })
            })
            .transpose()?;
        let (from, until) = params.time_range("startTime", "endTime")?;
        let limit = params.integer("limit", 1..=MAX_LIMIT as i64, DEFAULT_LIMIT as i64)? as usize;
        let mut query = SessionQuery {
            filter: SessionFilter {
                status,
                end_state,
                deployment_id: params.id("deploymentId")?,
            },
            within: StartedWithin { from, until },
            limit,
            after: None,
        };
        if let Some(cursor) = params.get("cursor") {
            let fingerprint = query.fingerprint(namespace, agent_name);
            query.after = Some(key.decode(&CURSOR_FORMAT, cursor, &fingerprint)?);
        }
        Ok(query)
    }

    /// What a cursor is bound to: the account, the agent, and every filter.
    pub(super) fn fingerprint(&self, namespace: &str, agent_name: &str) -> String {
        let SessionFilter {
            status,
            end_state,
            deployment_id,
        } = &self.filter;
        format!(
            "{namespace}\0{agent_name}\0{status:?}\0{end_state:?}\0{deployment_id:?}\0{:?}\0{:?}",
            self.within.from, self.within.until
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: CursorKey = CursorKey::from_bytes([1; 32]);

    fn parse(query: &str) -> Result<SessionQuery, ApiError> {
        let pairs = crate::validation::query_pairs(query);
        SessionQuery::from_params(pairs, &KEY, "ns", "voice")
    }

    fn rejected(query: &str, field: &str) {
        let error = parse(query).expect_err(query);
        assert_eq!(error.status().as_u16(), 400, "{query}");
        assert_eq!(error.field(), Some(field), "{query}");
    }

    #[test]
    fn defaults_and_every_filter() {
        let query = parse("").unwrap();
        assert_eq!(query.limit, DEFAULT_LIMIT);
        assert_eq!(query.filter.status, StatusFilter::All);
        assert_eq!(
            parse("status=&limit=&endState=").unwrap(),
            query,
            "empty is absent"
        );
        let full = parse(
            "status=ended&endState=agent_start_timeout&deploymentId=d&startTime=10&endTime=20&limit=100",
        )
        .unwrap();
        assert_eq!(full.filter.status, StatusFilter::Ended);
        assert_eq!(full.filter.end_state, Some(EndState::AgentStartTimeout));
        assert_eq!(full.filter.deployment_id.as_deref(), Some("d"));
        assert_eq!(
            full.within,
            StartedWithin {
                from: Some(10),
                until: Some(20)
            }
        );
        for state in EndState::ALL {
            let parsed = parse(&format!("endState={}", state.as_str())).unwrap();
            assert_eq!(parsed.filter.end_state, Some(state));
        }
    }

    #[test]
    fn every_rule_is_a_400_naming_its_parameter() {
        for bad in ["status=live", "status=ACTIVE"] {
            rejected(bad, "status");
        }
        for bad in ["endState=finished", "endState=Active"] {
            rejected(bad, "endState");
        }
        for bad in ["limit=0", "limit=101", "limit=x", "limit=1.5"] {
            rejected(bad, "limit");
        }
        rejected("startTime=-1", "startTime");
        rejected("startTime=1745008457153", "startTime");
        rejected("startTime=20&endTime=20", "endTime");
        rejected(&format!("deploymentId={}", "d".repeat(257)), "deploymentId");
        rejected("cursor=forged", "cursor");
        rejected("sesionId=s", "sesionId");
        rejected("limit=5&limit=6", "limit");
    }

    #[test]
    fn a_cursor_continues_only_the_list_it_was_made_for() {
        let id = "0193a000-0000-7000-8000-000000000000";
        let query = parse("status=active").unwrap();
        let cursor = KEY.encode(&CURSOR_FORMAT, &query.fingerprint("ns", "voice"), id);
        let pairs = [("status", "active"), ("cursor", cursor.as_str())];
        let next = SessionQuery::from_params(pairs, &KEY, "ns", "voice").unwrap();
        assert_eq!(next.after.as_deref(), Some(id));
        for (namespace, agent, status) in [
            ("other-ns", "voice", "active"),
            ("ns", "other", "active"),
            ("ns", "voice", "ended"),
        ] {
            let pairs = [("status", status), ("cursor", cursor.as_str())];
            let error = SessionQuery::from_params(pairs, &KEY, namespace, agent).unwrap_err();
            assert_eq!(
                error.field(),
                Some("cursor"),
                "{namespace} {agent} {status}"
            );
        }
    }
}
