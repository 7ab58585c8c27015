//! GET /v1/agents/{agentName}/sessions (contract section 11): an agent's sessions, newest
//! first, filtered, a page at a time with a signed cursor, and a `total` of every match.
//!
//! One algorithm over any [`SessionStore`]: the store answers stretches of the agent's sessions
//! in key order (newest first, within the time range); the filters, the page, its cursor and
//! the count are decided here.

mod query;
mod walk;

use serde::Serialize;

pub use query::{
    CURSOR_FORMAT, DEFAULT_LIMIT, MAX_LIMIT, PARAMETERS, SessionFilter, SessionQuery, StatusFilter,
};
pub use walk::READ_BUDGET;

use super::record::SessionRecord;
use super::store::{SessionStore, SessionSummary, SummaryReader};
use super::view::SessionView;
use crate::ApiError;
use crate::agent::AgentStore;
use crate::auth::Principal;
use crate::cursor::CursorKey;
use crate::paging::Total;
use walk::Walk;

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
}
