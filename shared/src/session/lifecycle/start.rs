//! A session start: the agent read for the deployment a session runs on, the session recorded in
//! one conditioned write ([`crate::session::SessionStore`]), then a bounded wait for the data
//! plane's report.

use std::time::Duration;

use tokio::time::Instant;

use crate::ApiError;
use crate::agent::AgentStore;
use crate::auth::Principal;
use crate::races::Races;
use crate::session::{
    SessionRecord, SessionRequest, SessionState, SessionStore, StartOutcome, StartRefusal,
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
    now: time::OffsetDateTime,
) -> Result<SessionRecord, ApiError> {
    let mut races = Races::new();
    loop {
        let agent = agents
            .get_agent(&caller.namespace, agent_name)
            .await?
            .ok_or_else(ApiError::no_agent)?;
        let deployment =
            crate::session::serving_deployment(&agent).ok_or(ApiError::AgentNotReady)?;
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
    use crate::session::Connection;
    use crate::store::memory::MemoryStore;
    use crate::testing::started_session;
    use std::sync::Arc;

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
    async fn unless_told_a_start_answers_starting_after_ten_seconds_without_a_report() {
        let (store, session) = started_session().await;
        report_started(&store, &session, Duration::from_millis(10_100));
        let default = StartWait(crate::config::start_wait_of(None).unwrap());
        let began = Instant::now();
        let answered = reported(&*store, session, default).await.unwrap();
        assert_eq!(answered.state, SessionState::Starting);
        assert_eq!(began.elapsed(), Duration::from_secs(10));
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
}
