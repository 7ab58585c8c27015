//! No capacity leaks (contract section 11): sessions the data plane never reports ended are
//! ended by the control plane, at their deadline (the sweep) or with their agent (a delete).
//! Each end is the same write a report's end is: conditioned on the session's version, it frees
//! the session's place in the same transaction, once, whoever gets there first. It also asks
//! the data plane to stop the session (`stopRequestedAt`, published as `Session Stop
//! Requested`), in case it still runs it: a session that starts after its start timed out must
//! not run unseen. One session's failure never keeps the others from being ended.

use time::{Duration, OffsetDateTime};

use super::reports::SessionRetention;
use crate::agent::AgentRecord;
use crate::agent::config::MAX_SESSION_DURATION;
use crate::error::StoreError;
use crate::races::Races;
use crate::session::listing::{SessionFilter, StatusFilter};
use crate::session::{
    EXPIRY_GRACE, START_TIMEOUT, SessionKey, SessionRecord, SessionState, SessionStore,
    SessionWrite, StartedWithin, SummaryReader, completion,
};
use crate::timestamp::rfc3339_millis;

/// Overdue sessions one sweep ends at most (the next sweep, a minute later, takes the rest).
pub const SWEEP_BATCH: usize = 500;
/// Sessions ended at once.
const AT_ONCE: usize = 10;

/// What a sweep or a delete did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ended {
    /// Sessions this call ended.
    pub ended: usize,
    /// Sessions found already ended, or no longer due (a report came first).
    pub passed: usize,
    /// Sessions that could not be ended this time (the store failed); the next sweep tries
    /// again.
    pub failed: usize,
}

/// A sweep or a delete that could not end every session it was to: what it did, and the first
/// failure.
#[derive(Debug, thiserror::Error)]
#[error("{} of the sessions could not be ended", .outcome.failed)]
pub struct NotAllEnded {
    pub outcome: Ended,
    #[source]
    pub first: StoreError,
}

impl NotAllEnded {
    /// The store failed before any session was ended: on reading which are to be.
    fn before_any(first: StoreError) -> Self {
        NotAllEnded {
            outcome: Ended::default(),
            first,
        }
    }
}

/// Ends `key`'s session as `end` says of it as read (`None`: leave it), read again after a lost
/// race; true when this call ended it.
async fn end_session<S: SessionStore>(
    sessions: &S,
    key: &SessionKey,
    retention: SessionRetention,
    now: OffsetDateTime,
    end: impl Fn(&SessionRecord) -> Option<SessionRecord>,
) -> Result<bool, StoreError> {
    let mut races = Races::new();
    loop {
        let Some(session) = sessions
            .get_session(&key.namespace, &key.service_id, &key.session_id)
            .await?
        else {
            return Ok(false);
        };
        let Some(mut next) = end(&session) else {
            return Ok(false);
        };
        next.expires_at = Some(retention.expires_at(now));
        match sessions.write_session(&session, &next).await? {
            SessionWrite::Written => {
                tracing::info!(
                    namespace = %key.namespace,
                    session = %key.session_id,
                    completion = next.completion_status.as_deref().unwrap_or_default(),
                    "session ended by the control plane"
                );
                return Ok(true);
            }
            SessionWrite::Conflict => races.lost().await?,
        }
    }
}

/// Ends each of `keys` as `end` says, a few at once; a failure is counted and the others go on.
async fn end_each<S: SessionStore>(
    sessions: &S,
    keys: &[SessionKey],
    retention: SessionRetention,
    now: OffsetDateTime,
    end: &(impl Fn(&SessionRecord) -> Option<SessionRecord> + Sync),
) -> Result<Ended, NotAllEnded> {
    let mut outcome = Ended::default();
    let mut first = None;
    for batch in keys.chunks(AT_ONCE) {
        let ends = batch
            .iter()
            .map(|key| end_session(sessions, key, retention, now, end));
        for (key, ended) in batch.iter().zip(futures_util::future::join_all(ends).await) {
            match ended {
                Ok(true) => outcome.ended += 1,
                Ok(false) => outcome.passed += 1,
                Err(error) => {
                    tracing::warn!(namespace = %key.namespace, session = %key.session_id, error = %crate::error::DisplayErrorContext(&error), "a session could not be ended");
                    outcome.failed += 1;
                    first.get_or_insert(error);
                }
            }
        }
    }
    match first {
        None => Ok(outcome),
        Some(first) => Err(NotAllEnded { outcome, first }),
    }
}

/// Ends the sessions whose deadline has passed at `now`: failed (`startTimeout`) while still
/// starting, ended (`expired`) once started. At most [`SWEEP_BATCH`] a call.
#[tracing::instrument(skip_all)]
pub async fn sweep<S: SessionStore>(
    sessions: &S,
    now: OffsetDateTime,
    retention: SessionRetention,
) -> Result<Ended, NotAllEnded> {
    let due = sessions
        .overdue_sessions(now.unix_timestamp(), SWEEP_BATCH)
        .await
        .map_err(NotAllEnded::before_any)?;
    let outcome = end_each(sessions, &due, retention, now, &|session| {
        session.overdue(now)
    })
    .await?;
    // A sweep that found nothing due says so at debug: it runs every minute.
    match due.is_empty() {
        true => tracing::debug!("no session past its deadline"),
        false => tracing::info!(due = due.len(), ended = outcome.ended, "sessions swept"),
    }
    Ok(outcome)
}

/// How long before now an active session can have started: still starting for
/// [`START_TIMEOUT`], then its longest `maxSessionDuration` and the grace, and an hour for what
/// can push its deadline later (a report delivered late, sweeps that failed). One that started
/// before that is past its deadline, and the sweep ends it.
pub fn longest_active() -> Duration {
    START_TIMEOUT
        + Duration::seconds(*MAX_SESSION_DURATION.end())
        + EXPIRY_GRACE
        + Duration::hours(1)
}

/// The active sessions of `agent`: those started within [`longest_active`] of `now`, read from
/// the newest.
async fn active_sessions_of<S: SessionStore>(
    sessions: &S,
    agent: &AgentRecord,
    now: OffsetDateTime,
) -> Result<Vec<SessionKey>, StoreError> {
    let namespace = agent.owner.namespace.as_str();
    let within = StartedWithin {
        from: Some((now - longest_active()).unix_timestamp()),
        until: None,
    };
    let active = SessionFilter {
        status: StatusFilter::Active,
        end_state: None,
        deployment_id: None,
    };
    let mut keys = Vec::new();
    let mut reader = SummaryReader::new(sessions, namespace, &agent.service_id, within);
    while let Some(summaries) = reader.next().await? {
        keys.extend(
            summaries
                .iter()
                .filter(|session| active.matches(session))
                .map(|session| SessionKey {
                    namespace: namespace.to_owned(),
                    service_id: agent.service_id.clone(),
                    session_id: session.session_id.clone(),
                }),
        );
    }
    Ok(keys)
}

/// Ends the active sessions of `agent`, deleted (`agentDeleted`): those started within
/// [`longest_active`] of `now`, read from the newest.
#[tracing::instrument(skip_all, fields(namespace = %agent.owner.namespace, agent = %agent.name))]
pub async fn end_sessions_of<S: SessionStore>(
    sessions: &S,
    agent: &AgentRecord,
    now: OffsetDateTime,
    retention: SessionRetention,
) -> Result<Ended, NotAllEnded> {
    let keys = active_sessions_of(sessions, agent, now)
        .await
        .map_err(NotAllEnded::before_any)?;
    let at = rfc3339_millis(now);
    let outcome = end_each(sessions, &keys, retention, now, &|session| {
        session.is_active().then(|| {
            session
                .ended(SessionState::Ended, completion::AGENT_DELETED, &at)
                .with_stop_requested(&at)
        })
    })
    .await?;
    tracing::info!(ended = outcome.ended, "the deleted agent's sessions ended");
    Ok(outcome)
}
