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

/// The pauses between reads of a starting session, each while the wait is shorter than its
/// bound, then [`REREAD_LATER`]: every 25 ms for its first 300 ms (a warm start is reported
/// within ~100 ms locally, and its answer should not wait for a read), every 100 ms to 2 s (a
/// cold start: the engine's start and the image's readiness, then the report).
///
/// Each read is a strongly consistent GetItem of the session, an item under 4 KB: one read
/// request unit on demand ($0.125 per million in us-east-1). A start reported at 100 ms reads 4
/// times, at 1 s 19 times (about $2.40 per million such starts; every 500 ms from the start it
/// was 4 reads), and one that waits out 10 s 45 times; the Lambda duration billed for the wait
/// only shrinks, as each answer comes sooner after its report.
const REREAD_AFTER: [(Duration, Duration); 2] = [
    (Duration::from_millis(300), Duration::from_millis(25)),
    (Duration::from_secs(2), Duration::from_millis(100)),
];
/// The pause between reads once the wait has lasted past every bound of [`REREAD_AFTER`].
const REREAD_LATER: Duration = Duration::from_millis(500);

/// The pause before the next read, `waited` into the start's wait.
fn reread_after(waited: Duration) -> Duration {
    REREAD_AFTER
        .iter()
        .find(|(bound, _)| waited < *bound)
        .map_or(REREAD_LATER, |(_, pause)| *pause)
}

/// `session` once the data plane has reported on it (started, or already ended), or as it is
/// when `wait` has passed: read again at growing intervals, strongly consistent.
#[tracing::instrument(skip_all, fields(session = %session.session_id))]
pub async fn reported<S: SessionStore>(
    sessions: &S,
    session: SessionRecord,
    wait: StartWait,
) -> Result<SessionRecord, ApiError> {
    let began = Instant::now();
    let deadline = began + wait.0;
    let mut latest = session;
    while latest.state == SessionState::Starting {
        let now = Instant::now();
        if now >= deadline {
            tracing::info!("no report within the start's wait");
            break;
        }
        let pause = reread_after(now - began);
        tokio::time::sleep(pause.min(deadline - now)).await;
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

    /// The report `after` the start, and how long the start took to answer it.
    async fn answered_after(after: Duration) -> Duration {
        let (store, session) = started_session().await;
        report_started(&store, &session, after);
        let began = Instant::now();
        let answered = reported(&*store, session, StartWait(Duration::from_secs(10)))
            .await
            .unwrap();
        assert_eq!(answered.state, SessionState::Started);
        began.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn a_warm_starts_report_is_read_within_25_ms_of_its_write() {
        let answered = answered_after(Duration::from_millis(60)).await;
        assert!(answered <= Duration::from_millis(85), "{answered:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_cold_starts_report_is_read_within_100_ms_of_its_write() {
        let answered = answered_after(Duration::from_millis(1_250)).await;
        assert!(answered <= Duration::from_millis(1_350), "{answered:?}");
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
