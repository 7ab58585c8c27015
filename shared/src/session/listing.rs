//! GET /v1/agents/{agentName}/sessions (contract section 11): an agent's sessions, newest
//! first, filtered, a page at a time with a signed cursor, and a `total` of every match.
//!
//! One algorithm over any [`SessionStore`]: the store answers stretches of the agent's sessions
//! in key order (newest first, within the time range); the filters, the page, its cursor and
//! the count are decided here.

use serde::Serialize;

use super::record::SessionRecord;
use super::store::{SessionStore, SessionSummary, StartedWithin, SummaryReader};
use super::view::{EndState, SessionView};
use crate::ApiError;
use crate::agent::AgentStore;
use crate::auth::Principal;
use crate::cursor::{CursorFormat, CursorKey};
use crate::paging::{TOTAL_BOUND, Total};
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
    is_position: |position| position.parse::<uuid::Uuid>().is_ok(),
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
    fn fingerprint(&self, namespace: &str, agent_name: &str) -> String {
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

/// A page of sessions: the answer is its [`SessionList::view`].
#[derive(Debug)]
pub struct SessionList {
    sessions: Vec<SessionRecord>,
    pub total: Total,
    pub next_cursor: Option<String>,
}

impl SessionList {
    pub fn sessions(&self) -> &[SessionRecord] {
        &self.sessions
    }

    /// The answer's JSON: each session as listed.
    pub fn view(&self) -> SessionListView<'_> {
        SessionListView {
            sessions: self.sessions.iter().map(SessionView::listed).collect(),
            total: &self.total,
            next_cursor: self.next_cursor.as_deref(),
        }
    }
}

/// The answer: `{"sessions": [...], "total": {"value", "relation"}, "nextCursor"?}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionListView<'a> {
    sessions: Vec<SessionView<'a>>,
    total: &'a Total,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<&'a str>,
}

/// Sessions a walk reads at most (a read unit per 8 KB of them): past it, the page ends where
/// the reading did, with a cursor to go on from there, and `total` says `gte`.
pub const READ_BUDGET: usize = 20_000;

/// What a walk through the agent's sessions does: the page after the cursor, the count, or both.
#[derive(Debug)]
struct Walk<'q> {
    query: &'q SessionQuery,
    budget: usize,
    paging: bool,
    counting: bool,
    /// Matches counted, up to one past [`TOTAL_BOUND`].
    counted: usize,
    /// The page's sessions, by id.
    page: Vec<String>,
    /// Where the next page starts, once known.
    next: Option<String>,
    page_done: bool,
    read: usize,
    last_read: Option<String>,
}

impl<'q> Walk<'q> {
    fn new(query: &'q SessionQuery, budget: usize, paging: bool, counting: bool) -> Self {
        Walk {
            query,
            budget,
            paging,
            counting,
            counted: 0,
            page: Vec::new(),
            next: None,
            page_done: !paging,
            read: 0,
            last_read: None,
        }
    }

    fn take(&mut self, session: &SessionSummary) {
        self.read += 1;
        self.last_read = Some(session.session_id.clone());
        if !self.query.filter.matches(session) {
            return;
        }
        if self.counting {
            self.counted = (self.counted + 1).min(TOTAL_BOUND + 1);
        }
        // Ids sort by start, so the cursor's place is found even if that session has changed
        // since (or is gone).
        let past_cursor = self
            .query
            .after
            .as_ref()
            .is_none_or(|after| session.session_id < *after);
        if self.page_done || !past_cursor {
            return;
        }
        match self.page.len() < self.query.limit {
            true => self.page.push(session.session_id.clone()),
            false => {
                self.next = self.page.last().cloned();
                self.page_done = true;
            }
        }
    }

    /// Whether what the walk is for is known.
    fn done(&self) -> bool {
        self.page_done && (!self.counting || self.counted > TOTAL_BOUND)
    }

    /// Reads with `reader` until the walk is done, the sessions end, or the budget is spent;
    /// whether every session was read.
    async fn run<S: SessionStore>(
        &mut self,
        mut reader: SummaryReader<'_, S>,
    ) -> Result<bool, crate::error::StoreError> {
        while let Some(summaries) = reader.next().await? {
            for session in &summaries {
                self.take(session);
            }
            if self.done() {
                return Ok(false);
            }
            if self.read >= self.budget {
                if self.paging && !self.page_done {
                    // Everything up to the last session read was looked at: go on after it.
                    self.next = self.last_read.clone();
                    self.page_done = true;
                }
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The page of `caller`'s agent `agent_name` that `query` asks for; 404 when the account has
/// no such agent. The first page's walk pages and counts at once; a later page's walk reads
/// from its cursor, and the count from the newest session.
#[tracing::instrument(skip_all, fields(namespace = %caller.namespace, agent = agent_name))]
pub async fn list<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    caller: &Principal,
    agent_name: &str,
    query: &SessionQuery,
    key: &CursorKey,
) -> Result<SessionList, ApiError> {
    list_reading(
        agents,
        sessions,
        caller,
        agent_name,
        query,
        key,
        READ_BUDGET,
    )
    .await
}

/// [`list`], reading at most `budget` sessions a walk.
async fn list_reading<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    caller: &Principal,
    agent_name: &str,
    query: &SessionQuery,
    key: &CursorKey,
    budget: usize,
) -> Result<SessionList, ApiError> {
    let agent = agents
        .get_agent(&caller.namespace, agent_name)
        .await?
        .ok_or_else(ApiError::no_agent)?;
    let (namespace, service) = (caller.namespace.as_str(), agent.service_id.as_str());
    let reader = || SummaryReader::new(sessions, namespace, service, query.within);
    let (walk, complete) = match &query.after {
        None => {
            let mut walk = Walk::new(query, budget, true, true);
            let complete = walk.run(reader()).await?;
            (walk, complete)
        }
        Some(after) => {
            let mut paging = Walk::new(query, budget, true, false);
            paging.run(reader().older_than(Some(after.clone()))).await?;
            let mut counting = Walk::new(query, budget, false, true);
            let complete = counting.run(reader()).await?;
            paging.counted = counting.counted;
            (paging, complete)
        }
    };
    // Read again whole (eventually consistent): a session that has moved since is left out of
    // the page if it no longer matches; the cursor is where the walk stopped, whatever it shows.
    let mut page: Vec<SessionRecord> = sessions
        .get_sessions(namespace, service, &walk.page)
        .await?
        .into_iter()
        .filter(|session| query.filter.matches(&SessionSummary::from(session)))
        .collect();
    page.sort_by(|a, b| b.session_id.cmp(&a.session_id));
    let next_cursor = walk.next.as_ref().map(|next| {
        let fingerprint = query.fingerprint(namespace, agent_name);
        key.encode(&CURSOR_FORMAT, &fingerprint, next)
    });
    tracing::info!(
        listed = page.len(),
        counted = walk.counted,
        read = walk.read,
        "sessions listed"
    );
    Ok(SessionList {
        sessions: page,
        total: Total::exact_or_bound(walk.counted, complete),
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: CursorKey = CursorKey::from_bytes([1; 32]);

    fn parse(query: &str) -> Result<SessionQuery, ApiError> {
        let pairs: Vec<(&str, &str)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect();
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

    /// An agent of the in-memory store with 60 sessions a second apart, the odd ones ended.
    async fn sixty_sessions() -> (crate::store::memory::MemoryStore, Principal, Vec<String>) {
        use crate::agent::{AgentStore, DeploymentState};
        use crate::session::{SessionRecord, SessionRequest, SessionState, SessionStore};
        let store = crate::store::memory::MemoryStore::default();
        let mut agent = crate::agent::record::tests::record();
        agent.active.status.state = DeploymentState::Ready;
        agent.active.config.auto_scaling.max_replicas = 50;
        store.create_agent(&agent, None).await.unwrap();
        let start = time::macros::datetime!(2026-11-25 10:00 UTC);
        let mut ids = Vec::new();
        for i in 0..60 {
            let at = start + time::Duration::seconds(i);
            let deployment = agent.active.deployment.id.clone();
            let session = SessionRecord::new(&agent, &deployment, SessionRequest::default(), at);
            store.start_session(&session).await.unwrap();
            if i % 2 == 1 {
                let ended = session.ended(SessionState::Ended, "completed", "t");
                store.write_session(&session, &ended).await.unwrap();
            }
            ids.push(session.session_id);
        }
        ids.reverse();
        (store, agent.owner.clone(), ids)
    }

    #[tokio::test]
    async fn past_its_read_budget_a_page_ends_where_it_read_and_the_next_goes_on_from_there() {
        let (store, owner, newest_first) = sixty_sessions().await;
        let ended: Vec<String> = newest_first.iter().step_by(2).cloned().collect();
        let name = crate::agent::record::tests::record().name;
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..20 {
            let mut params = vec![("status", "ended"), ("limit", "10")];
            if let Some(cursor) = &cursor {
                params.push(("cursor", cursor.as_str()));
            }
            let query = SessionQuery::from_params(params, &KEY, &owner.namespace, &name).unwrap();
            let page = list_reading(&store, &store, &owner, &name, &query, &KEY, 7)
                .await
                .unwrap();
            assert_eq!(
                page.total.relation,
                crate::paging::Relation::Gte,
                "not all read"
            );
            listed.extend(page.sessions().iter().map(|s| s.session_id.clone()));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(
            listed, ended,
            "every match once, newest first, over short pages"
        );

        let query = SessionQuery::from_params([("status", "ended")], &KEY, &owner.namespace, &name)
            .unwrap();
        let whole = list(&store, &store, &owner, &name, &query, &KEY)
            .await
            .unwrap();
        assert_eq!(
            (whole.total.value, whole.total.relation),
            (30, crate::paging::Relation::Eq)
        );
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
