//! The session port's reads and the control plane's ends over them: an agent's sessions newest
//! first within a time range and before a session (in as many reads as the store needs), the
//! list's filters, pages and total, the deadlines the sweep finds and ends, and a deleted
//! agent's sessions ended with it.
//!
//! Its sessions start in 2001 (ids are UUIDv7s of their start), before any other test's: a sweep
//! at a 2001 instant reaches only these, while other tests run on the same DynamoDB Local.

use time::macros::datetime;
use time::{Duration, OffsetDateTime};

use super::agent;
use crate::agent::{AgentRecord, AgentStore, Change, DeploymentState, WriteOutcome};
use crate::auth::Principal;
use crate::cursor::CursorKey;
use crate::paging::Relation;
use crate::session::lifecycle::{Ended, SessionRetention, end_sessions_of, sweep};
use crate::session::listing::{SessionFilter, SessionQuery, StatusFilter, list};
use crate::session::{
    Connection, EndState, SessionRecord, SessionRequest, SessionState, SessionStore, SessionWrite,
    StartOutcome, StartedWithin, completion,
};

const T0: OffsetDateTime = datetime!(2001-01-01 00:00 UTC);
const KEPT: SessionRetention = SessionRetention(Duration::days(30));
const KEY: CursorKey = CursorKey::from_bytes([9; 32]);
/// More than a read of the memory store answers, so that every loop takes several.
const SESSIONS: usize = 30;

/// An agent `name` of `ns` with room for 50 sessions, its deployment ready.
async fn ready_agent<S: AgentStore>(store: &S, ns: &str, name: &str) -> AgentRecord {
    let mut new = agent(ns, name, "ghcr.io/acme/agent:1.0");
    new.active.config.auto_scaling.max_replicas = 50;
    store.create_agent(&new, None).await.unwrap();
    let mut next = new.next_version();
    next.active.status.state = DeploymentState::Ready;
    let change = Change::Status {
        deployment_id: &next.active.deployment.id,
        status: &next.active.status,
    };
    let written = store
        .write_agent(new.version, &next, change, None)
        .await
        .unwrap();
    assert_eq!(written, WriteOutcome::Written);
    store.get_agent(ns, name).await.unwrap().unwrap()
}

/// Session `i` started `i` minutes after [`T0`].
fn started_at(i: usize) -> OffsetDateTime {
    T0 + Duration::minutes(i as i64)
}

/// [`SESSIONS`] sessions of `agent`, the `i`th started at [`started_at`]`(i)`; the odd ones
/// reported started 30 s later, the rest still starting. Oldest first.
async fn start_sessions<S: SessionStore>(store: &S, agent: &AgentRecord) -> Vec<SessionRecord> {
    let deployment = agent.active.deployment.id.clone();
    let mut made = Vec::new();
    for i in 0..SESSIONS {
        let at = started_at(i);
        let session = SessionRecord::new(agent, &deployment, SessionRequest::default(), at);
        assert_eq!(
            store.start_session(&session).await.unwrap(),
            StartOutcome::Started
        );
        if i % 2 == 0 {
            made.push(session);
            continue;
        }
        let reported = at + Duration::seconds(30);
        let running = session.started(Connection::default(), reported, reported);
        assert_eq!(
            store.write_session(&session, &running).await.unwrap(),
            SessionWrite::Written
        );
        made.push(running);
    }
    made
}

/// Reads of one walk before it is taken not to end (a `more` that never clears).
const MAX_CHUNKS: usize = 1_000;

/// Every session id `within`, newest first, before `before`, read to the end.
async fn ids_within<S: SessionStore>(
    store: &S,
    agent: &AgentRecord,
    within: StartedWithin,
    before: Option<&str>,
) -> Vec<String> {
    let mut ids = Vec::new();
    let mut before = before.map(str::to_owned);
    for _ in 0..MAX_CHUNKS {
        let chunk = store
            .session_summaries(
                &agent.owner.namespace,
                &agent.service_id,
                within,
                before.as_deref(),
            )
            .await
            .unwrap();
        ids.extend(chunk.summaries.iter().map(|s| s.session_id.clone()));
        match chunk.summaries.last() {
            Some(last) if chunk.more => before = Some(last.session_id.clone()),
            _ => return ids,
        }
    }
    panic!("the summaries {within:?} do not end within {MAX_CHUNKS} reads: {ids:?}");
}

fn ids_of(sessions: &[SessionRecord]) -> Vec<String> {
    sessions
        .iter()
        .rev()
        .map(|s| s.session_id.clone())
        .collect()
}

fn query(status: StatusFilter, limit: usize, after: Option<String>) -> SessionQuery {
    SessionQuery {
        filter: SessionFilter {
            status,
            end_state: None,
            deployment_id: None,
        },
        within: StartedWithin::default(),
        limit,
        after,
    }
}

/// Reads, lists, the sweep and a delete's end of sessions.
pub async fn session_reads<S: AgentStore + SessionStore>(store: &S) {
    let ns = "session-reads-ns";
    let owner = Principal {
        account_id: "session-reads".into(),
        namespace: ns.into(),
    };
    let agent = ready_agent(store, ns, "talker").await;
    let made = start_sessions(store, &agent).await;

    // Newest first, in as many reads as it takes; a time range is a range of ids.
    let everything = StartedWithin::default();
    assert_eq!(
        ids_within(store, &agent, everything, None).await,
        ids_of(&made)
    );
    let from_10 = StartedWithin {
        from: Some(started_at(10).unix_timestamp()),
        until: Some(started_at(20).unix_timestamp()),
    };
    assert_eq!(
        ids_within(store, &agent, from_10, None).await,
        ids_of(&made[10..20]),
        "startTime inclusive, endTime exclusive"
    );
    let before_15 = made[15].session_id.as_str();
    assert_eq!(
        ids_within(store, &agent, everything, Some(before_15)).await,
        ids_of(&made[..15]),
        "older than the session named, not it"
    );
    let some: Vec<String> = [3, 17, 4].map(|i| made[i].session_id.clone()).to_vec();
    let mut got = store
        .get_sessions(ns, &agent.service_id, &some)
        .await
        .unwrap();
    got.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    assert_eq!(
        got,
        vec![made[3].clone(), made[4].clone(), made[17].clone()]
    );

    // The list: pages of the filtered sessions, newest first, each with the total.
    let active = list(
        store,
        store,
        &owner,
        "talker",
        &query(StatusFilter::Active, 12, None),
        &KEY,
    )
    .await
    .unwrap();
    assert_eq!(active.total.value, SESSIONS);
    assert_eq!(active.total.relation, Relation::Eq);
    let first: Vec<&str> = active
        .sessions()
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    let newest_12: Vec<String> = ids_of(&made).into_iter().take(12).collect();
    assert_eq!(first, newest_12);
    let cursor = active.next_cursor.clone().expect("more follow");
    let params = [
        ("status", "active"),
        ("limit", "12"),
        ("cursor", cursor.as_str()),
    ];
    let next_query = SessionQuery::from_params(params, &KEY, ns, "talker").unwrap();
    let next = list(store, store, &owner, "talker", &next_query, &KEY)
        .await
        .unwrap();
    assert_eq!(
        next.sessions()[0].session_id,
        made[SESSIONS - 13].session_id
    );
    assert_eq!(
        next.total.value, SESSIONS,
        "the total counts every match, not the rest"
    );
    let other_agent = SessionQuery::from_params(params, &KEY, ns, "another");
    assert_eq!(other_agent.unwrap_err().field(), Some("cursor"));

    // The sweep at T0 + 5 min: the sessions still starting two minutes after their start fail
    // (startTimeout), the started ones are within their maximum duration; each frees its place.
    let at = started_at(5);
    let swept = sweep(store, at, KEPT).await.unwrap();
    assert_eq!(
        swept,
        Ended {
            ended: 2,
            ..Ended::default()
        },
        "sessions 0 and 2"
    );
    let failed = store
        .get_session(ns, &agent.service_id, &made[0].session_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(failed.state, SessionState::Failed);
    assert_eq!(
        failed.completion_status.as_deref(),
        Some(completion::START_TIMEOUT)
    );
    assert_eq!(EndState::of(&failed), EndState::AgentStartTimeout);
    assert_eq!(failed.deadline, None, "out of the deadlines index");
    assert!(
        failed.stop_requested_at.is_some(),
        "the data plane asked to stop what it may still run"
    );
    assert_eq!(failed.expires_at, Some(KEPT.expires_at(at)));
    let counted = store.get_agent(ns, "talker").await.unwrap().unwrap();
    assert_eq!(counted.active_sessions, (SESSIONS - 2) as u32);
    assert_eq!(
        sweep(store, at, KEPT).await.unwrap(),
        Ended::default(),
        "once"
    );
    let ended = list(
        store,
        store,
        &owner,
        "talker",
        &query(StatusFilter::Ended, 10, None),
        &KEY,
    )
    .await
    .unwrap();
    assert_eq!(ended.total.value, 2);

    // A started session never reported ended expires at its maximum duration and the grace.
    let duration = Duration::seconds(i64::from(made[1].max_duration_seconds));
    let last_started = started_at(SESSIONS - 1) + Duration::seconds(30);
    let past_every_deadline = last_started + duration + Duration::minutes(5);
    let swept = sweep(store, past_every_deadline, KEPT).await.unwrap();
    assert_eq!(swept.ended, SESSIONS - 2);
    let expired = store
        .get_session(ns, &agent.service_id, &made[1].session_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        expired.completion_status.as_deref(),
        Some(completion::EXPIRED)
    );
    assert_eq!(EndState::of(&expired), EndState::Unknown);
    let freed = store.get_agent(ns, "talker").await.unwrap().unwrap();
    assert_eq!(freed.active_sessions, 0, "every place free again");

    deleted_agent_ends_its_sessions(store).await;
}

/// A delete ends the agent's active sessions (`agentDeleted`), never another agent's.
async fn deleted_agent_ends_its_sessions<S: AgentStore + SessionStore>(store: &S) {
    let ns = "session-deletes-ns";
    let agent = ready_agent(store, ns, "talker").await;
    let bystander = ready_agent(store, ns, "bystander").await;
    let now = OffsetDateTime::now_utc();
    let start = |agent: &AgentRecord| {
        let deployment = agent.active.deployment.id.clone();
        SessionRecord::new(agent, &deployment, SessionRequest::default(), now)
    };
    let mut live = Vec::new();
    for _ in 0..3 {
        let session = start(&agent);
        assert_eq!(
            store.start_session(&session).await.unwrap(),
            StartOutcome::Started
        );
        live.push(session);
    }
    let other = start(&bystander);
    assert_eq!(
        store.start_session(&other).await.unwrap(),
        StartOutcome::Started
    );
    let current = store.get_agent(ns, "talker").await.unwrap().unwrap();
    assert_eq!(
        store.delete_agent(&current).await.unwrap(),
        WriteOutcome::Written
    );

    let ended = end_sessions_of(store, &current, now, KEPT).await.unwrap();
    assert_eq!(
        ended,
        Ended {
            ended: 3,
            ..Ended::default()
        }
    );
    for session in &live {
        let read = store
            .get_session(ns, &agent.service_id, &session.session_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.state, SessionState::Ended);
        assert_eq!(
            read.completion_status.as_deref(),
            Some(completion::AGENT_DELETED)
        );
        assert_eq!(EndState::of(&read), EndState::EndedBeforeAgentStart);
        assert!(read.stop_requested_at.is_some());
    }
    let again = end_sessions_of(store, &current, now, KEPT).await.unwrap();
    assert_eq!(again, Ended::default(), "nothing is ended twice");
    let untouched = store
        .get_session(ns, &bystander.service_id, &other.session_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(untouched, other, "another agent's session is not ended");
    let counted = store.get_agent(ns, "bystander").await.unwrap().unwrap();
    assert_eq!(counted.active_sessions, 1);
}
