//! What the simulated cluster sends, and when: reports for the bus (`Deployment Status`,
//! `Session Status`, as a data plane puts them there) and a session's log lines for the ingest
//! function (as its log stream's subscription delivers them).

use std::time::Duration;

use data_plane::ports::LineBatch;
use serde::Serialize;
use serde_json::Value;
use shared::agent::StatusReport;
use time::OffsetDateTime;

/// One thing to send.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Deployment(StatusReport),
    Session(SessionStatus),
    Lines(SessionLines),
    /// Lines of a replica's log stream, with their events made (the data plane on an engine).
    Batch(LineBatch),
}

/// A message to send `after` a delay.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    pub after: Duration,
    pub message: Message,
}

/// A `Session Status` report's detail: the data plane's own (its simulation and the data
/// plane on an engine send the same).
pub use data_plane::ports::SessionStatus;

/// Lines a session's agent writes.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionLines {
    pub namespace: String,
    pub agent: String,
    pub deployment_id: String,
    pub session_id: String,
    pub lines: Vec<String>,
}

impl Message {
    /// The message as it is sent now: a report stamped with the time it is observed at.
    pub fn stamped(&mut self, now: OffsetDateTime) {
        match self {
            Message::Deployment(report) => report.observed_at = now,
            Message::Session(report) => report.observed_at = now,
            Message::Lines(_) | Message::Batch(_) => {}
        }
    }

    /// The bus event of a report; `None` for lines, which go to the ingest function.
    pub fn bus_event(&self) -> Option<Value> {
        match self {
            Message::Deployment(report) => {
                Some(bus_event(shared::stream_events::DEPLOYMENT_STATUS, report))
            }
            Message::Session(report) => {
                Some(bus_event(shared::stream_events::SESSION_STATUS, report))
            }
            Message::Lines(_) | Message::Batch(_) => None,
        }
    }

    /// What it is about, for the data plane's log.
    pub fn describe(&self) -> String {
        match self {
            Message::Deployment(report) => format!(
                "{:?} for {}/{} deployment {}",
                report.state, report.namespace, report.agent, report.deployment_id
            ),
            Message::Session(report) => format!(
                "{} for {}/{} session {}",
                report.state, report.namespace, report.agent, report.session_id
            ),
            Message::Lines(lines) => format!(
                "{} lines of {}/{} session {}",
                lines.lines.len(),
                lines.namespace,
                lines.agent,
                lines.session_id
            ),
            Message::Batch(batch) => format!(
                "{} lines of {}/{} stream {}{}",
                batch.events.len(),
                batch.namespace,
                batch.agent,
                batch.deployment_id,
                batch
                    .session_id
                    .as_deref()
                    .map(|session| format!("/{session}"))
                    .unwrap_or_default()
            ),
        }
    }
}

/// An event with `detail`, as the data plane puts it on the bus and its rules deliver it.
fn bus_event(detail_type: &str, detail: &impl Serialize) -> Value {
    let now = shared::timestamp::now_rfc3339_millis();
    crate::rules::delivered("agent-hosting.data-plane", detail_type, detail, &now)
}
