//! Reports and lines recorded as the data plane sends them, with bounded waits for the one a
//! test expects (each wait fails after its bound, naming what was recorded instead).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use shared::agent::StatusReport;
use tokio::sync::Notify;

use crate::ports::{LineBatch, Reports, SessionStatus};

#[derive(Debug, Default)]
struct Recorded {
    deployments: Vec<StatusReport>,
    sessions: Vec<SessionStatus>,
    lines: Vec<LineBatch>,
}

/// Every report and line batch sent, in order.
#[derive(Debug, Default)]
pub struct RecordingReports {
    recorded: Mutex<Recorded>,
    sent: Notify,
}

impl Reports for RecordingReports {
    async fn deployment(&self, report: StatusReport) {
        self.record().deployments.push(report);
        self.sent.notify_waiters();
    }

    async fn session(&self, report: SessionStatus) {
        self.record().sessions.push(report);
        self.sent.notify_waiters();
    }

    async fn lines(&self, batch: LineBatch) {
        self.record().lines.push(batch);
        self.sent.notify_waiters();
    }
}

impl RecordingReports {
    fn record(&self) -> MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn deployments(&self) -> Vec<StatusReport> {
        self.record().deployments.clone()
    }

    pub fn sessions(&self) -> Vec<SessionStatus> {
        self.record().sessions.clone()
    }

    pub fn lines(&self) -> Vec<LineBatch> {
        self.record().lines.clone()
    }

    /// The session's reports, in the order sent.
    pub fn session_reports(&self, session_id: &str) -> Vec<SessionStatus> {
        self.sessions()
            .into_iter()
            .filter(|report| report.session_id == session_id)
            .collect()
    }

    /// The text of every line shipped under the session's stream.
    pub fn session_lines(&self, session_id: &str) -> Vec<String> {
        (self.session_events(session_id).into_iter())
            .map(|(_, message)| message)
            .collect()
    }

    /// The event id and text of every line shipped under the session's stream: a line the
    /// logs table stores once, whichever data plane shipped it, has one id.
    pub fn session_events(&self, session_id: &str) -> Vec<(String, String)> {
        self.lines()
            .into_iter()
            .filter(|batch| batch.session_id.as_deref() == Some(session_id))
            .flat_map(|batch| {
                batch
                    .events
                    .into_iter()
                    .map(|(id, _, message)| (id, message))
            })
            .collect()
    }

    /// The first deployment report `matches` accepts, waiting up to `within` for it.
    pub async fn wait_for_deployment(
        &self,
        within: Duration,
        what: &str,
        matches: impl Fn(&StatusReport) -> bool,
    ) -> StatusReport {
        let found = self
            .wait(within, || {
                self.record()
                    .deployments
                    .iter()
                    .find(|r| matches(r))
                    .cloned()
            })
            .await;
        found.unwrap_or_else(|| {
            panic!(
                "no deployment report {what} within {within:?}; sent: {:#?}",
                self.deployments()
            )
        })
    }

    /// The first session report `matches` accepts, waiting up to `within` for it.
    pub async fn wait_for_session(
        &self,
        within: Duration,
        what: &str,
        matches: impl Fn(&SessionStatus) -> bool,
    ) -> SessionStatus {
        let found = self
            .wait(within, || {
                self.record().sessions.iter().find(|r| matches(r)).cloned()
            })
            .await;
        found.unwrap_or_else(|| {
            panic!(
                "no session report {what} within {within:?}; sent: {:#?}",
                self.sessions()
            )
        })
    }

    /// The session's report in `state`, waiting up to `within` for it.
    pub async fn wait_for_session_state(
        &self,
        within: Duration,
        session_id: &str,
        state: &str,
    ) -> SessionStatus {
        let what = format!("{state} of {session_id}");
        self.wait_for_session(within, &what, |report| {
            report.session_id == session_id && report.state == state
        })
        .await
    }

    /// The first line of the session's stream containing `text`, waiting up to `within`.
    pub async fn wait_for_session_line(
        &self,
        within: Duration,
        session_id: &str,
        text: &str,
    ) -> String {
        let found = self
            .wait(within, || {
                self.session_lines(session_id)
                    .into_iter()
                    .find(|line| line.contains(text))
            })
            .await;
        found.unwrap_or_else(|| {
            panic!(
                "no line {text:?} in session {session_id}'s stream within {within:?}; lines: {:#?}",
                self.session_lines(session_id)
            )
        })
    }

    /// `look` until it finds something, woken by each report, for at most `within`.
    async fn wait<T>(&self, within: Duration, look: impl Fn() -> Option<T>) -> Option<T> {
        tokio::time::timeout(within, async {
            loop {
                let sent = self.sent.notified();
                tokio::pin!(sent);
                sent.as_mut().enable();
                if let Some(found) = look() {
                    return found;
                }
                sent.await;
            }
        })
        .await
        .ok()
    }
}
