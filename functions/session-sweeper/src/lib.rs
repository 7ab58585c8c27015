//! The sweep (contract section 11, no capacity leaks), run every minute by the template's
//! schedule: each active session whose deadline has passed is ended by the control plane, as a
//! report would end it, freeing its place. A session still `starting` two minutes after its start
//! fails (`startTimeout`); a started one the data plane never reported ended is ended
//! (`expired`) at its `maxSessionDuration` plus five minutes.
//!
//! The sweep's "now" is the scheduled event's `time` (when the schedule fired), never later
//! than the function's own clock: an event dated ahead ends nothing early. Local stacks set
//! `SESSION_SWEEP_AT_EVENT_TIME=true`, so that a test can sweep ahead with an event dated later
//! ([`SweepClock::EventTime`]).

use aws_lambda_events::eventbridge::EventBridgeEvent;
use shared::session::SessionStore;
use shared::session::lifecycle::{self, Ended, NotAllEnded, SessionRetention};

/// The detail-type of EventBridge's scheduled events.
pub const SCHEDULED: &str = "Scheduled Event";

/// What time a sweep takes as now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepClock {
    /// The scheduled event's time, at most the function's clock (deployed).
    Bounded,
    /// The scheduled event's time, as given (local stacks and their tests).
    EventTime,
}

impl SweepClock {
    /// `SESSION_SWEEP_AT_EVENT_TIME=true`: [`SweepClock::EventTime`]; otherwise bounded.
    pub fn from_env() -> Self {
        match std::env::var("SESSION_SWEEP_AT_EVENT_TIME").as_deref() {
            Ok("true") => SweepClock::EventTime,
            _ => SweepClock::Bounded,
        }
    }

    fn now(self, event_time: time::OffsetDateTime) -> time::OffsetDateTime {
        match self {
            SweepClock::Bounded => event_time.min(time::OffsetDateTime::now_utc()),
            SweepClock::EventTime => event_time,
        }
    }
}

/// Why a sweep could not run, or not end every session due; the next one, a minute later,
/// sweeps what this one left.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("not a scheduled event (detail-type {0:?})")]
    NotScheduled(String),
    #[error("the event has no time, or one out of range")]
    Time,
    #[error(transparent)]
    NotAllEnded(#[from] NotAllEnded),
}

#[tracing::instrument(skip_all, fields(at = ?event.time))]
pub async fn handle<S: SessionStore>(
    sessions: &S,
    retention: SessionRetention,
    clock: SweepClock,
    event: EventBridgeEvent<serde_json::Value>,
) -> Result<Ended, SweepError> {
    if event.detail_type != SCHEDULED {
        return Err(SweepError::NotScheduled(event.detail_type));
    }
    let nanos = event.time.and_then(|at| at.timestamp_nanos_opt());
    let event_time = nanos
        .and_then(|nanos| time::OffsetDateTime::from_unix_timestamp_nanos(nanos.into()).ok())
        .ok_or(SweepError::Time)?;
    Ok(lifecycle::sweep(sessions, clock.now(event_time), retention).await?)
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

        let swept = handle(
            &store,
            KEPT,
            SweepClock::EventTime,
            event("session-sweeper.json"),
        )
        .await;
        assert_eq!(
            swept.unwrap(),
            Ended {
                ended: 1,
                ..Ended::default()
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

        let again = handle(
            &store,
            KEPT,
            SweepClock::EventTime,
            event("session-sweeper.json"),
        )
        .await;
        assert_eq!(again.unwrap(), Ended::default(), "nothing is ended twice");
    }

    #[tokio::test]
    async fn deployed_an_event_dated_ahead_ends_nothing_early() {
        let store = shared::testing::seeded_memory_store().await;
        let ahead = handle(
            &store,
            KEPT,
            SweepClock::Bounded,
            event("session-sweeper.json"),
        )
        .await;
        assert_eq!(
            ahead.unwrap(),
            Ended::default(),
            "swept at the function's clock"
        );
    }

    #[tokio::test]
    async fn an_event_that_is_not_the_schedule_s_is_refused() {
        let store = shared::testing::seeded_memory_store().await;
        let mut other = event("session-sweeper.json");
        other.detail_type = "Session Status".into();
        let refused = handle(&store, KEPT, SweepClock::EventTime, other).await;
        assert!(matches!(refused, Err(SweepError::NotScheduled(_))));
    }
}
