//! The sweep (contract section 11, no capacity leaks), run every minute by the template's
//! schedule: each active session whose deadline has passed is ended by the control plane, as a
//! report would end it, freeing its place. A session still `starting` two minutes after its start
//! fails (`startTimeout`); a started one the data plane never reported ended is ended
//! (`expired`) at its `maxSessionDuration` plus five minutes.
//!
//! The scheduled event's `time` is the sweep's "now": EventBridge sets it to when the schedule
//! fired, and a test (or an operator) invokes the function with a later one to sweep ahead.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use shared::StoreError;
use shared::session::SessionStore;
use shared::session::lifecycle::{self, Ended, SessionRetention};

/// The detail-type of EventBridge's scheduled events.
pub const SCHEDULED: &str = "Scheduled Event";

/// Why a sweep could not run; the next one, a minute later, sweeps what this one left.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("not a scheduled event (detail-type {0:?})")]
    NotScheduled(String),
    #[error("the event has no time, or one out of range")]
    Time,
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[tracing::instrument(skip_all, fields(at = ?event.time))]
pub async fn handle<S: SessionStore>(
    sessions: &S,
    retention: SessionRetention,
    event: EventBridgeEvent<serde_json::Value>,
) -> Result<Ended, SweepError> {
    if event.detail_type != SCHEDULED {
        return Err(SweepError::NotScheduled(event.detail_type));
    }
    let nanos = event.time.and_then(|at| at.timestamp_nanos_opt());
    let now = nanos
        .and_then(|nanos| time::OffsetDateTime::from_unix_timestamp_nanos(nanos.into()).ok())
        .ok_or(SweepError::Time)?;
    Ok(lifecycle::sweep(sessions, now, retention).await?)
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs the sweep
    //! against DynamoDB Local.

    use super::*;
    use shared::session::{SessionState, completion};
    use shared::testing::{SESSION_FIXTURE_AGENT, SESSION_FIXTURE_ID, session_fixtures_owner};

    const KEPT: SessionRetention = SessionRetention(time::Duration::days(30));

    fn event(name: &str) -> EventBridgeEvent<serde_json::Value> {
        shared::testing::fixture_event(name)
    }

    #[tokio::test]
    async fn a_sweep_past_the_seeded_session_s_deadline_ends_it_expired_and_frees_its_place() {
        let store = shared::testing::seeded_memory_store().await;
        let owner = session_fixtures_owner();
        let agent = store
            .agent(&owner.namespace, SESSION_FIXTURE_AGENT)
            .unwrap();
        assert_eq!(agent.active_sessions, 1);

        let swept = handle(&store, KEPT, event("session-sweeper.json")).await;
        assert_eq!(
            swept.unwrap(),
            Ended {
                ended: 1,
                passed: 0
            }
        );
        let session = store
            .get_session(&owner.namespace, &agent.service_id, SESSION_FIXTURE_ID)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(session.state, SessionState::Ended);
        assert_eq!(
            session.completion_status.as_deref(),
            Some(completion::EXPIRED)
        );
        assert!(session.expires_at.is_some(), "kept as long as its lines");
        let agent = store
            .agent(&owner.namespace, SESSION_FIXTURE_AGENT)
            .unwrap();
        assert_eq!(agent.active_sessions, 0, "its place is free");

        let again = handle(&store, KEPT, event("session-sweeper.json")).await;
        assert_eq!(again.unwrap(), Ended::default(), "nothing is ended twice");
    }

    #[tokio::test]
    async fn an_event_that_is_not_the_schedule_s_is_refused() {
        let store = shared::testing::seeded_memory_store().await;
        let mut other = event("session-sweeper.json");
        other.detail_type = "Session Status".into();
        let refused = handle(&store, KEPT, other).await;
        assert!(matches!(refused, Err(SweepError::NotScheduled(_))));
    }
}
