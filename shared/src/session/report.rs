//! The data plane's `Session Status` reports (contract section 11) and what one does to a
//! session. Applied as deployment reports are: at least once and in any order, so a report not
//! newer than the last one applied changes nothing, and an ended or failed session never moves
//! again. The report that ends a session takes it out of its agent's count, once.

use serde::Deserialize;
use time::OffsetDateTime;

use super::record::completion;
use super::record::{Connection, SessionRecord, SessionState};
use crate::agent::config::MAX_SESSION_DURATION;
use crate::agent::status::{is_newer, observed_nanos};
use crate::timestamp::rfc3339_millis;
use crate::validation::{OutOfBounds, keys_out_of_bounds};

/// The longest `completionStatus` kept, in characters, and the longest connection detail, in
/// bytes: the session item keeps them, and a detail past that is no address or token.
pub const MAX_COMPLETION_STATUS_CHARS: usize = 64;
pub const MAX_CONNECTION_DETAIL_BYTES: usize = 8 * 1024;
/// The most `botStartSeconds` a report may give, and the least is 0: a bot starts within its
/// session, and no session lives longer than the longest `maxSessionDuration` (14,400 s). Not
/// the start timeout (2 minutes): that is the control plane's clock from the start's record,
/// and a start the data plane took longer over may still be reported before the sweep ends it.
pub const MAX_BOT_START_SECONDS: f64 = *MAX_SESSION_DURATION.end() as f64;

/// The states a report may give a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportedState {
    Started,
    Ended,
    Failed,
}

/// One report: the `detail` of a `Session Status` event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionReport {
    pub namespace: String,
    pub agent: String,
    pub session_id: String,
    pub state: ReportedState,
    /// What to connect with, on `started`.
    #[serde(flatten)]
    pub connection: Connection,
    /// Why it ended, on `ended` and `failed`.
    #[serde(default)]
    pub completion_status: Option<String>,
    #[serde(default)]
    pub bot_start_seconds: Option<f64>,
    #[serde(default)]
    pub cold_start: Option<bool>,
    /// When the data plane observed this state (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    pub observed_at: OffsetDateTime,
}

/// What became of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionReportOutcome {
    Applied,
    /// Not newer than the last report applied to the session (a duplicate or a late one).
    Stale,
    /// The session has ended or failed: nothing moves it again.
    Settled,
    /// No agent of that name in that namespace (deleted, or never there).
    UnknownAgent,
    /// The agent has no such session (another agent's, another account's, or none).
    UnknownSession,
    /// `observedAt` outside the window reports are taken from, or a member past its bound
    /// ([`SessionReport::out_of_bounds`]).
    Refused,
}

/// Why a report leaves a session as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unapplied {
    Stale,
    Settled,
    Refused,
}

impl SessionReport {
    /// The first member past its bound, if any: names the contract's names allow, the
    /// session's id a UUID, `botStartSeconds` from 0 to [`MAX_BOT_START_SECONDS`], each
    /// connection detail at most [`MAX_CONNECTION_DETAIL_BYTES`], `completionStatus` at most
    /// [`MAX_COMPLETION_STATUS_CHARS`].
    pub fn out_of_bounds(&self) -> Option<OutOfBounds> {
        keys_out_of_bounds(
            &self.namespace,
            &self.agent,
            &self.session_id,
            OutOfBounds::SessionId,
        )
        .or_else(|| self.detail_out_of_bounds())
    }

    fn detail_out_of_bounds(&self) -> Option<OutOfBounds> {
        let bot_start = self
            .bot_start_seconds
            .is_none_or(|seconds| (0.0..=MAX_BOT_START_SECONDS).contains(&seconds));
        let connection = [
            &self.connection.daily_room,
            &self.connection.daily_token,
            &self.connection.ws_url,
            &self.connection.token,
        ]
        .iter()
        .all(|detail| {
            detail
                .as_ref()
                .is_none_or(|d| d.len() <= MAX_CONNECTION_DETAIL_BYTES)
        });
        let completion = self
            .completion_status
            .as_ref()
            .is_none_or(|status| status.chars().count() <= MAX_COMPLETION_STATUS_CHARS);
        [
            (bot_start, OutOfBounds::BotStartSeconds),
            (connection, OutOfBounds::Connection),
            (completion, OutOfBounds::CompletionStatus),
        ]
        .into_iter()
        .find_map(|(within, member)| (!within).then_some(member))
    }

    fn state(&self) -> SessionState {
        match self.state {
            ReportedState::Started => SessionState::Started,
            ReportedState::Ended => SessionState::Ended,
            ReportedState::Failed => SessionState::Failed,
        }
    }
}

impl SessionRecord {
    /// The session after `report` (which names it, within its bounds), at `now`: started with
    /// what to connect with, or ended (its connection dropped, `completionStatus` as reported:
    /// `terminated` for a stop asked for, else `completed` or, failed, `agentError`, when none
    /// is given).
    pub fn apply(
        &self,
        report: &SessionReport,
        now: OffsetDateTime,
    ) -> Result<SessionRecord, Unapplied> {
        let observed = observed_nanos(report.observed_at, now).ok_or(Unapplied::Refused)?;
        if !self.is_active() {
            return Err(Unapplied::Settled);
        }
        if !is_newer(observed, self.observed_at_nanos, now) {
            return Err(Unapplied::Stale);
        }
        let mut next = match report.state() {
            SessionState::Started => {
                self.started(report.connection.clone(), report.observed_at, now)
            }
            ended => {
                let at = rfc3339_millis(report.observed_at);
                let completion_status = report.completion_status.clone().unwrap_or_else(|| {
                    match (ended, &self.stop_requested_at) {
                        (SessionState::Failed, _) => completion::AGENT_ERROR,
                        (_, Some(_)) => completion::TERMINATED,
                        _ => completion::COMPLETED,
                    }
                    .to_owned()
                });
                self.ended(ended, &completion_status, &at)
            }
        };
        next.observed_at_nanos = Some(observed);
        next.bot_start_seconds = report.bot_start_seconds.or(self.bot_start_seconds);
        next.cold_start = report.cold_start.or(self.cold_start);
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionRequest;
    use serde_json::json;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-25 10:00 UTC);

    fn session() -> SessionRecord {
        let agent = crate::agent::record::tests::record();
        SessionRecord::new(
            &agent,
            "dep-1",
            SessionRequest::default(),
            datetime!(2026-11-25 09:59 UTC),
        )
    }

    fn report(state: &str, at: &str, extra: serde_json::Value) -> SessionReport {
        let mut detail = json!({"namespace": "ns", "agent": "a", "sessionId": "s",
                                "state": state, "observedAt": at});
        for (key, value) in extra.as_object().unwrap() {
            detail[key] = value.clone();
        }
        serde_json::from_value(detail).unwrap()
    }

    #[test]
    fn started_then_ended_in_order_each_move_once() {
        let started = report(
            "started",
            "2026-11-25T09:59:01Z",
            json!({"wsUrl": "wss://x", "botStartSeconds": 0.8, "coldStart": true}),
        );
        let session = session().apply(&started, NOW).unwrap();
        assert_eq!(session.state, SessionState::Started);
        assert_eq!(
            session.connection.as_ref().unwrap().ws_url.as_deref(),
            Some("wss://x")
        );
        assert_eq!(
            (session.bot_start_seconds, session.cold_start),
            (Some(0.8), Some(true))
        );
        assert_eq!(
            session.apply(&started, NOW),
            Err(Unapplied::Stale),
            "a duplicate"
        );

        let ended = report(
            "ended",
            "2026-11-25T09:59:30Z",
            json!({"completionStatus": "hangup"}),
        );
        let over = session.apply(&ended, NOW).unwrap();
        assert_eq!(over.state, SessionState::Ended);
        assert_eq!(over.completion_status.as_deref(), Some("hangup"));
        assert_eq!(over.ended_at.as_deref(), Some("2026-11-25T09:59:30.000Z"));
        assert!(over.connection.is_none());
        assert_eq!(over.bot_start_seconds, Some(0.8), "kept from the start");
        let late = report("started", "2026-11-25T09:59:50Z", json!({}));
        assert_eq!(over.apply(&late, NOW), Err(Unapplied::Settled));
    }

    #[test]
    fn an_ended_report_before_a_late_started_one_settles_it() {
        let ended = report("ended", "2026-11-25T09:59:30Z", json!({}));
        let over = session().apply(&ended, NOW).unwrap();
        assert_eq!(over.completion_status.as_deref(), Some("completed"));
        let older_start = report(
            "started",
            "2026-11-25T09:59:01Z",
            json!({"wsUrl": "wss://x"}),
        );
        assert_eq!(over.apply(&older_start, NOW), Err(Unapplied::Settled));
    }

    #[test]
    fn a_stop_asked_for_ends_terminated_and_a_failure_agent_error() {
        let stopping = session().stop_requested("2026-11-25T09:59:10.000Z");
        let ended = report("ended", "2026-11-25T09:59:30Z", json!({}));
        let over = stopping.apply(&ended, NOW).unwrap();
        assert_eq!(
            over.completion_status.as_deref(),
            Some(completion::TERMINATED)
        );
        let failed = report("failed", "2026-11-25T09:59:30Z", json!({}));
        let broken = session().apply(&failed, NOW).unwrap();
        assert_eq!(broken.state, SessionState::Failed);
        assert_eq!(broken.completion_status.as_deref(), Some("agentError"));
    }

    #[test]
    fn reports_out_of_their_window_are_refused() {
        let zero = report("started", "0001-01-01T00:00:00Z", json!({}));
        assert_eq!(session().apply(&zero, NOW), Err(Unapplied::Refused));
        let ahead = report("started", "2026-11-25T10:06:00Z", json!({}));
        assert_eq!(session().apply(&ahead, NOW), Err(Unapplied::Refused));
    }

    /// A report of the contract's names and ids, `extra` members over them.
    fn named(extra: serde_json::Value) -> SessionReport {
        let mut detail = json!({"namespace": "tiny-ferret-maroon-123", "agent": "voice-bot",
                                "sessionId": "019ab7c2-4e10-7a3c-9f21-6d0e5b8c1a2f",
                                "state": "started", "observedAt": "2026-11-25T09:59:01Z"});
        for (key, value) in extra.as_object().unwrap() {
            detail[key] = value.clone();
        }
        serde_json::from_value(detail).unwrap()
    }

    #[test]
    fn every_member_of_a_report_is_held_to_its_bound() {
        let detail = "x".repeat(MAX_CONNECTION_DETAIL_BYTES);
        let at_bounds = named(json!({
            "dailyRoom": detail, "dailyToken": detail, "wsUrl": detail, "token": detail,
            "botStartSeconds": MAX_BOT_START_SECONDS, "completionStatus": "c".repeat(64)}));
        assert_eq!(at_bounds.out_of_bounds(), None);
        assert_eq!(named(json!({"botStartSeconds": 0.0})).out_of_bounds(), None);
        let past = "x".repeat(MAX_CONNECTION_DETAIL_BYTES + 1);
        for (extra, member) in [
            (
                json!({"namespace": "n".repeat(1 << 20)}),
                OutOfBounds::Namespace,
            ),
            (json!({"agent": "a".repeat(100_000)}), OutOfBounds::Agent),
            (json!({"agent": "Voice"}), OutOfBounds::Agent),
            (json!({"sessionId": "s"}), OutOfBounds::SessionId),
            (json!({"botStartSeconds": -1}), OutOfBounds::BotStartSeconds),
            (
                json!({"botStartSeconds": -0.001}),
                OutOfBounds::BotStartSeconds,
            ),
            (
                json!({"botStartSeconds": 1e200}),
                OutOfBounds::BotStartSeconds,
            ),
            (
                json!({"botStartSeconds": 14_400.5}),
                OutOfBounds::BotStartSeconds,
            ),
            (json!({"token": past}), OutOfBounds::Connection),
            (json!({"dailyRoom": past}), OutOfBounds::Connection),
            (
                json!({"completionStatus": "c".repeat(65)}),
                OutOfBounds::CompletionStatus,
            ),
        ] {
            assert_eq!(named(extra).out_of_bounds(), Some(member), "{member}");
        }
    }

    #[test]
    fn a_report_of_another_state_is_no_report() {
        let detail = json!({"namespace": "ns", "agent": "a", "sessionId": "s",
                            "state": "starting", "observedAt": "2026-11-25T09:59:01Z"});
        assert!(serde_json::from_value::<SessionReport>(detail).is_err());
    }
}
