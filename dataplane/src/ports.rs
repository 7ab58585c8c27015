//! Where the data plane's reports and lines go (contract sections 5 and 7): `Deployment Status`
//! and `Session Status` onto the bus, a replica's lines to the ingest function as a log
//! stream's subscription delivers them. Locally devplane's delivery implements it (the bus's
//! rules, Lambda's Invoke API); on AWS, EventBridge's PutEvents and CloudWatch Logs.

use std::future::Future;

use serde::Serialize;
use shared::agent::StatusReport;
use time::OffsetDateTime;

/// A `Session Status` report's detail, as the data plane sends it. Its `Debug` hides the room
/// token, which is a credential.
#[derive(Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    pub namespace: String,
    pub agent: String,
    pub session_id: String,
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ws_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_room: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bot_start_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<bool>,
    /// Set when sent: a report's time orders it.
    #[serde(with = "time::serde::rfc3339")]
    pub observed_at: OffsetDateTime,
}

impl std::fmt::Debug for SessionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStatus")
            .field("namespace", &self.namespace)
            .field("agent", &self.agent)
            .field("session_id", &self.session_id)
            .field("state", &self.state)
            .field("ws_url", &self.ws_url)
            .field("daily_room", &self.daily_room)
            .field(
                "daily_token",
                &self.daily_token.as_ref().map(|_| "<redacted>"),
            )
            .field("completion_status", &self.completion_status)
            .field("bot_start_seconds", &self.bot_start_seconds)
            .field("cold_start", &self.cold_start)
            .field("observed_at", &self.observed_at)
            .finish()
    }
}

/// Lines of one log stream: a replica's, under `{deploymentId}` before it holds a session and
/// `{deploymentId}/{sessionId}` while it does (contract section 12).
#[derive(Debug, Clone, PartialEq)]
pub struct LineBatch {
    pub namespace: String,
    pub agent: String,
    pub deployment_id: String,
    pub session_id: Option<String>,
    /// (event id, Unix milliseconds, message) as a subscription delivers them; the message in
    /// CRI form (`<RFC 3339 nanos> <stdout|stderr> <F|P> <text>`), so the engine's nanoseconds
    /// are kept.
    pub events: Vec<(String, i64, String)>,
}

/// Where reports and lines are sent. Each call delivers (retrying as a bus's target retries)
/// or gives up and says so; the data plane goes on either way.
pub trait Reports: Send + Sync + 'static {
    /// Sends a deployment's report, stamped with the time it is sent.
    fn deployment(&self, report: StatusReport) -> impl Future<Output = ()> + Send;
    /// Sends a session's report, stamped with the time it is sent.
    fn session(&self, report: SessionStatus) -> impl Future<Output = ()> + Send;
    /// Sends lines to the ingest function.
    fn lines(&self, batch: LineBatch) -> impl Future<Output = ()> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_reports_debug_output_hides_its_room_token() {
        let report = SessionStatus {
            namespace: "ns".into(),
            agent: "voice".into(),
            session_id: "s-1".into(),
            state: "started",
            ws_url: None,
            daily_room: Some("https://acme.daily.co/room".into()),
            daily_token: Some("eyJ-room-token".into()),
            completion_status: None,
            bot_start_seconds: Some(0.2),
            cold_start: Some(false),
            observed_at: OffsetDateTime::UNIX_EPOCH,
        };
        let shown = format!("{report:?}");
        assert!(shown.contains("acme.daily.co"), "{shown}");
        assert!(!shown.contains("eyJ-room-token"), "{shown}");
    }
}
