//! What a session start does over the ports: reads the agent to find the deployment a session
//! runs on, then records the session in one conditioned write ([`super::SessionStore`]), reading
//! again after a write that lost a race; then waits, a bounded time, for the data plane's report.

use std::time::Duration;

use tokio::time::Instant;

use time::OffsetDateTime;

use super::report::{SessionReport, SessionReportOutcome, Unapplied};
use crate::ApiError;
use crate::agent::AgentStore;
use crate::auth::Principal;
use crate::error::StoreError;
use crate::races::Races;

use super::{
    SessionRecord, SessionRequest, SessionState, SessionStore, SessionWrite, StartOutcome,
    StartRefusal,
};

impl From<StartRefusal> for ApiError {
    fn from(refusal: StartRefusal) -> Self {
        match refusal {
            StartRefusal::NoAgent => ApiError::no_agent(),
            StartRefusal::NotReady => ApiError::AgentNotReady,
            StartRefusal::AtCapacity => ApiError::AgentAtCapacity,
        }
    }
}

/// A new session of `caller`'s agent `agent_name`, recorded and counted; 404, 503
/// `AGENT_NOT_READY` or 429 `AGENT_AT_CAPACITY` otherwise, with nothing written.
#[tracing::instrument(skip_all, fields(namespace = %caller.namespace, agent = agent_name))]
pub async fn start<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    caller: &Principal,
    agent_name: &str,
    request: &SessionRequest,
    now: &str,
) -> Result<SessionRecord, ApiError> {
    let mut races = Races::new();
    loop {
        let agent = agents
            .get_agent(&caller.namespace, agent_name)
            .await?
            .ok_or_else(ApiError::no_agent)?;
        let deployment = super::serving_deployment(&agent).ok_or(ApiError::AgentNotReady)?;
        let session = SessionRecord::new(&agent, deployment, request.clone(), now);
        match sessions.start_session(&session).await? {
            StartOutcome::Started => {
                tracing::info!(session = %session.session_id, "session started");
                return Ok(session);
            }
            StartOutcome::Refused(refusal) => return Err(refusal.into()),
            StartOutcome::Raced => races.lost().await?,
        }
    }
}

/// Session `session_id` of `caller`'s agent `agent_name`: 404 when the agent is absent, or has
/// no such session (an id that is no UUID names none).
pub async fn find<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    caller: &Principal,
    agent_name: &str,
    session_id: &str,
) -> Result<SessionRecord, ApiError> {
    let agent = agents
        .get_agent(&caller.namespace, agent_name)
        .await?
        .ok_or_else(ApiError::no_agent)?;
    if session_id.parse::<uuid::Uuid>().is_err() {
        return Err(ApiError::no_session());
    }
    sessions
        .get_session(&caller.namespace, &agent.service_id, session_id)
        .await?
        .ok_or_else(ApiError::no_session)
}

/// Asks the data plane to stop the session (`Session Stop Requested`, published from the write);
/// its report then ends it. A session ended, or already asked to stop, is answered again
/// without a write.
#[tracing::instrument(skip_all, fields(namespace = %caller.namespace, agent = agent_name))]
pub async fn stop<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    caller: &Principal,
    agent_name: &str,
    session_id: &str,
    now: &str,
) -> Result<SessionRecord, ApiError> {
    let mut races = Races::new();
    loop {
        let session = find(agents, sessions, caller, agent_name, session_id).await?;
        if !session.is_active() || session.stop_requested_at.is_some() {
            return Ok(session);
        }
        let stopping = session.stop_requested(now);
        match sessions.write_session(&session, &stopping).await? {
            SessionWrite::Written => {
                tracing::info!(session = session_id, "session stop requested");
                return Ok(stopping);
            }
            SessionWrite::Conflict => races.lost().await?,
        }
    }
}

/// How long an ended session is kept: the account's log retention (`LogRetentionDays`), as long
/// as the lines that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRetention(pub time::Duration);

impl SessionRetention {
    pub fn days(days: u32) -> Self {
        SessionRetention(time::Duration::days(i64::from(days)))
    }
}

/// Applies the data plane's `report` to the session it names, when it is the newest report of
/// an active session of that agent in that namespace; the outcome says why not otherwise. The
/// write that ends a session takes it out of its agent's count in the same transaction, and
/// sets when its item expires (`retention` after the report).
pub async fn apply_report<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    report: &SessionReport,
    retention: SessionRetention,
) -> Result<SessionReportOutcome, StoreError> {
    let mut races = Races::new();
    loop {
        let Some(agent) = agents.get_agent(&report.namespace, &report.agent).await? else {
            return Ok(SessionReportOutcome::UnknownAgent);
        };
        let id = report.session_id.as_str();
        let session = match id.parse::<uuid::Uuid>() {
            Ok(_) => {
                sessions
                    .get_session(&report.namespace, &agent.service_id, id)
                    .await?
            }
            Err(_) => None,
        };
        let Some(session) = session else {
            return Ok(SessionReportOutcome::UnknownSession);
        };
        let mut next = match session.apply(report, OffsetDateTime::now_utc()) {
            Ok(next) => next,
            Err(Unapplied::Stale) => return Ok(SessionReportOutcome::Stale),
            Err(Unapplied::Settled) => return Ok(SessionReportOutcome::Settled),
            Err(Unapplied::Refused) => return Ok(SessionReportOutcome::Refused),
        };
        if !next.is_active() {
            next.expires_at = Some((report.observed_at + retention.0).unix_timestamp());
        }
        match sessions.write_session(&session, &next).await? {
            SessionWrite::Written => return Ok(SessionReportOutcome::Applied),
            SessionWrite::Conflict => races.lost().await?,
        }
    }
}

/// How long a start waits for the data plane's report on its session (`SessionStartWaitSeconds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartWait(pub Duration);

/// The pauses between reads of a starting session: soon at first (a warm agent reports within
/// a few hundred milliseconds), then every half second.
const REREAD_AFTER: [Duration; 4] = [
    Duration::from_millis(100),
    Duration::from_millis(200),
    Duration::from_millis(400),
    Duration::from_millis(500),
];

/// `session` once the data plane has reported on it (started, or already ended), or as it is
/// when `wait` has passed: read again at growing intervals, strongly consistent.
#[tracing::instrument(skip_all, fields(session = %session.session_id))]
pub async fn reported<S: SessionStore>(
    sessions: &S,
    session: SessionRecord,
    wait: StartWait,
) -> Result<SessionRecord, ApiError> {
    let deadline = Instant::now() + wait.0;
    let mut latest = session;
    for pause in REREAD_AFTER
        .iter()
        .chain(std::iter::repeat(&REREAD_AFTER[3]))
    {
        if latest.state != SessionState::Starting {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            tracing::info!("no report within the start's wait");
            break;
        }
        tokio::time::sleep((*pause).min(deadline - now)).await;
        match sessions
            .get_session(&latest.namespace, &latest.service_id, &latest.session_id)
            .await?
        {
            Some(read) => latest = read,
            // Its agent was deleted meanwhile (and the session with it): answer what was made.
            None => break,
        }
    }
    Ok(latest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::DeploymentState;
    use crate::agent::record::tests::record;
    use crate::session::Connection;
    use crate::store::memory::MemoryStore;
    use std::sync::Arc;

    async fn started_session() -> (Arc<MemoryStore>, SessionRecord) {
        let store = Arc::new(MemoryStore::default());
        let mut agent = record();
        agent.active.status.state = DeploymentState::Ready;
        store.create_agent(&agent, None).await.unwrap();
        let at = "2026-11-25T10:00:00.000Z";
        let session = start(
            &*store,
            &*store,
            &agent.owner,
            &agent.name,
            &SessionRequest::default(),
            at,
        )
        .await
        .unwrap();
        (store, session)
    }

    /// The data plane's report, `after` the start.
    fn report_started(store: &Arc<MemoryStore>, session: &SessionRecord, after: Duration) {
        let (store, read) = (store.clone(), session.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let next = SessionRecord {
                state: SessionState::Started,
                version: read.version + 1,
                connection: Some(Connection {
                    ws_url: Some("ws://simulated.invalid/x".into()),
                    ..Connection::default()
                }),
                ..read.clone()
            };
            store.write_session(&read, &next).await.unwrap();
        });
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_answers_with_the_report_that_came_within_its_wait() {
        let (store, session) = started_session().await;
        report_started(&store, &session, Duration::from_millis(1_300));
        let began = Instant::now();
        let answered = reported(&*store, session, StartWait(Duration::from_secs(10)))
            .await
            .unwrap();
        assert_eq!(answered.state, SessionState::Started);
        let connection = answered.connection.unwrap();
        assert_eq!(
            connection.ws_url.as_deref(),
            Some("ws://simulated.invalid/x")
        );
        assert!(
            began.elapsed() < Duration::from_millis(1_800),
            "read again within half a second of the report: {:?}",
            began.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_answers_starting_once_its_wait_has_passed() {
        let (store, session) = started_session().await;
        report_started(&store, &session, Duration::from_secs(30));
        let began = Instant::now();
        let answered = reported(&*store, session, StartWait(Duration::from_secs(10)))
            .await
            .unwrap();
        assert_eq!(answered.state, SessionState::Starting);
        assert!(answered.connection.is_none());
        assert_eq!(
            began.elapsed(),
            Duration::from_secs(10),
            "no longer than the wait"
        );
    }

    #[tokio::test]
    async fn a_stop_is_asked_once_and_answered_again_without_a_write() {
        let (store, session) = started_session().await;
        let owner = crate::auth::Principal {
            account_id: "acme".into(),
            namespace: session.namespace.clone(),
        };
        let (agent, id) = (session.agent_name.as_str(), session.session_id.as_str());
        let at = "2026-11-25T10:01:00.000Z";
        let stopping = stop(&*store, &*store, &owner, agent, id, at).await.unwrap();
        assert_eq!(stopping.stop_requested_at.as_deref(), Some(at));
        assert_eq!(stopping.version, session.version + 1);
        assert!(stopping.is_active(), "the data plane's report ends it");

        let later = "2026-11-25T10:02:00.000Z";
        let again = stop(&*store, &*store, &owner, agent, id, later)
            .await
            .unwrap();
        assert_eq!(again, stopping, "asked once");

        let ended = stopping.ended(SessionState::Ended, "completed", later);
        store.write_session(&stopping, &ended).await.unwrap();
        let after = stop(&*store, &*store, &owner, agent, id, later)
            .await
            .unwrap();
        assert_eq!(after, ended, "an ended session answers as it is");
    }

    #[tokio::test]
    async fn a_session_is_found_only_under_its_agent_and_by_a_uuid() {
        let (store, session) = started_session().await;
        let owner = crate::auth::Principal {
            account_id: "acme".into(),
            namespace: session.namespace.clone(),
        };
        let agent = session.agent_name.as_str();
        let found = find(&*store, &*store, &owner, agent, &session.session_id).await;
        assert_eq!(found.unwrap(), session);
        for (agent, id) in [
            (agent, "not-a-uuid"),
            (agent, "0193a000-0000-7000-8000-000000000000"),
            ("another-agent", session.session_id.as_str()),
        ] {
            let error = find(&*store, &*store, &owner, agent, id).await.unwrap_err();
            assert_eq!(error.status().as_u16(), 404, "{agent} {id}");
        }
    }
}
