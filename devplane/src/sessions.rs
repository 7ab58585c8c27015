//! The simulated cluster's sessions (contract section 11, locally): it takes each `Session
//! Requested`, reports it `started` after [`START_DELAY`] (or `body.simulatedStartSeconds`: a
//! slow agent, which a start answers `starting`) with a `wsUrl` on `simulated.invalid`
//! (a name that resolves nowhere: the label that says it is a simulation), writes a few lines
//! under the session's log stream through the ingest function, and ends it after
//! `body.simulatedDurationSeconds` (default [`DEFAULT_DURATION`]) or at once on `Session Stop
//! Requested`. Both ends may come for one session: the second is a report of a settled session,
//! which the control plane drops.

use std::time::Duration;

use serde_json::Value;
use shared::stream_events::DetailType;
use time::OffsetDateTime;

use crate::outbox::{Message, Scheduled, SessionLines, SessionStatus};

/// How long a simulated session lasts unless its start's body says otherwise.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(30);
/// The longest `simulatedDurationSeconds` taken (a longer one is cut to it).
pub const MAX_DURATION: Duration = Duration::from_secs(3_600);
/// How long a simulated agent takes to start.
pub const START_DELAY: Duration = Duration::from_millis(400);
/// How long a stop takes.
pub const STOP_DELAY: Duration = Duration::from_millis(200);
/// The least time between a session's reports (their `observedAt` orders them).
pub const REPORT_GAP: Duration = Duration::from_millis(100);

/// The session an event is about.
struct Named {
    namespace: String,
    agent: String,
    deployment_id: String,
    session_id: String,
}

impl Named {
    fn of(event: &Value) -> Self {
        let detail = &event["detail"];
        let text = |name: &str| detail[name].as_str().unwrap_or_default().to_owned();
        Named {
            namespace: text("namespace"),
            agent: text("agentName"),
            deployment_id: text("deploymentId"),
            session_id: text("sessionId"),
        }
    }

    fn report(&self, state: &'static str) -> SessionStatus {
        SessionStatus {
            namespace: self.namespace.clone(),
            agent: self.agent.clone(),
            session_id: self.session_id.clone(),
            state,
            ws_url: None,
            daily_room: None,
            daily_token: None,
            completion_status: None,
            bot_start_seconds: None,
            cold_start: None,
            observed_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn lines(&self, lines: &[&str]) -> Message {
        Message::Lines(SessionLines {
            namespace: self.namespace.clone(),
            agent: self.agent.clone(),
            deployment_id: self.deployment_id.clone(),
            session_id: self.session_id.clone(),
            lines: lines
                .iter()
                .map(|line| format!("{line} (simulated)"))
                .collect(),
        })
    }
}

/// How long the session asked for lasts: the start body's `simulatedDurationSeconds` (the
/// event carries the body as the JSON text it was given in), else [`DEFAULT_DURATION`].
pub fn duration_of(event: &Value) -> Duration {
    simulated(event, "simulatedDurationSeconds").unwrap_or(DEFAULT_DURATION)
}

/// How long the simulated agent takes to start: the start body's `simulatedStartSeconds`, else
/// [`START_DELAY`].
pub fn start_delay_of(event: &Value) -> Duration {
    simulated(event, "simulatedStartSeconds").unwrap_or(START_DELAY)
}

/// The start body's member `name`, a number of seconds (at most [`MAX_DURATION`]), if it is one.
fn simulated(event: &Value, name: &str) -> Option<Duration> {
    let request = shared::stream_events::untyped(&event["detail"]["request"]);
    request["body"]
        .as_str()
        .and_then(|body| serde_json::from_str::<Value>(body).ok())
        .and_then(|body| body[name].as_f64())
        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        .map(|seconds| Duration::from_secs_f64(seconds.min(MAX_DURATION.as_secs_f64())))
}

/// What the simulated cluster sends for a session event; nothing for other events.
pub fn respond(event: &Value) -> Vec<Scheduled> {
    let session = Named::of(event);
    let at = |after: Duration, message: Message| Scheduled { after, message };
    match DetailType::of(event) {
        Some(DetailType::SessionRequested) => {
            let starts_after = start_delay_of(event);
            let started = SessionStatus {
                ws_url: Some(format!("ws://simulated.invalid/{}", session.session_id)),
                bot_start_seconds: Some(starts_after.as_secs_f64()),
                cold_start: Some(false),
                ..session.report("started")
            };
            let lasts = duration_of(event);
            let ended = SessionStatus {
                completion_status: Some("completed"),
                ..session.report("ended")
            };
            let greeting = ["session started", "user joined", "bot said hello"];
            // The end comes at least REPORT_GAP after the start, so that it is observed (and
            // ordered) after it even for a session of no length.
            let ends_at = starts_after + lasts.max(REPORT_GAP);
            vec![
                at(starts_after, Message::Session(started)),
                at(starts_after, session.lines(&greeting)),
                at(ends_at, session.lines(&["session completed"])),
                at(ends_at, Message::Session(ended)),
            ]
        }
        Some(DetailType::SessionStopRequested) => vec![
            at(STOP_DELAY, session.lines(&["session stopped on request"])),
            at(STOP_DELAY, Message::Session(session.report("ended"))),
        ],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn requested(body: Option<&str>) -> Value {
        let mut request = json!({"createDailyRoom": {"BOOL": false}});
        if let Some(body) = body {
            request["body"] = json!({"S": body});
        }
        json!({
            "detail-type": "Session Requested",
            "detail": {"namespace": "ns", "agentName": "voice-bot", "serviceId": "svc",
                       "deploymentId": "dep-1", "sessionId": "s-1", "request": {"M": request}}
        })
    }

    fn reports(scheduled: &[Scheduled]) -> Vec<(Duration, &'static str)> {
        scheduled
            .iter()
            .filter_map(|s| match &s.message {
                Message::Session(report) => Some((s.after, report.state)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_requested_session_starts_with_a_simulated_address_logs_and_ends_after_its_duration() {
        let scheduled = respond(&requested(Some(r#"{"simulatedDurationSeconds": 2}"#)));
        assert_eq!(
            reports(&scheduled),
            [
                (START_DELAY, "started"),
                (START_DELAY + Duration::from_secs(2), "ended")
            ]
        );
        let Message::Session(started) = &scheduled[0].message else {
            panic!("{:?}", scheduled[0])
        };
        assert_eq!(
            started.ws_url.as_deref(),
            Some("ws://simulated.invalid/s-1")
        );
        let Message::Lines(lines) = &scheduled[1].message else {
            panic!("{:?}", scheduled[1])
        };
        assert_eq!(
            (lines.deployment_id.as_str(), lines.session_id.as_str()),
            ("dep-1", "s-1")
        );
        assert!(lines.lines.iter().all(|line| line.ends_with("(simulated)")));
    }

    #[test]
    fn a_slow_agent_starts_after_the_bodys_simulated_start() {
        let body = r#"{"simulatedStartSeconds": 30, "simulatedDurationSeconds": 2}"#;
        let scheduled = respond(&requested(Some(body)));
        let starts = Duration::from_secs(30);
        assert_eq!(
            reports(&scheduled),
            [
                (starts, "started"),
                (starts + Duration::from_secs(2), "ended")
            ]
        );
        let Message::Session(started) = &scheduled[0].message else {
            panic!("{:?}", scheduled[0])
        };
        assert_eq!(started.bot_start_seconds, Some(30.0));
        assert_eq!(start_delay_of(&requested(None)), START_DELAY);
    }

    #[test]
    fn a_session_of_no_length_still_ends_after_it_started() {
        let scheduled = respond(&requested(Some(r#"{"simulatedDurationSeconds": 0}"#)));
        assert_eq!(
            reports(&scheduled),
            [
                (START_DELAY, "started"),
                (START_DELAY + REPORT_GAP, "ended")
            ]
        );
    }

    #[test]
    fn a_duration_not_given_or_not_a_number_is_the_default_and_a_long_one_is_cut() {
        assert_eq!(duration_of(&requested(None)), DEFAULT_DURATION);
        assert_eq!(duration_of(&requested(Some("[1]"))), DEFAULT_DURATION);
        let odd = r#"{"simulatedDurationSeconds": "soon"}"#;
        assert_eq!(duration_of(&requested(Some(odd))), DEFAULT_DURATION);
        let long = r#"{"simulatedDurationSeconds": 1e9}"#;
        assert_eq!(duration_of(&requested(Some(long))), MAX_DURATION);
    }

    #[test]
    fn a_stop_ends_the_session_soon() {
        let event = json!({"detail-type": "Session Stop Requested",
                           "detail": {"namespace": "ns", "agentName": "a", "sessionId": "s-1"}});
        assert_eq!(reports(&respond(&event)), [(STOP_DELAY, "ended")]);
        assert!(respond(&json!({"detail-type": "Agent Deleted"})).is_empty());
    }
}
