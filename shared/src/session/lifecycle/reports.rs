//! The data plane's `Session Status` reports applied over the ports (the rules are
//! [`crate::session::report`]).

use time::OffsetDateTime;

use super::stored::stored_session;
use crate::agent::AgentStore;
use crate::error::StoreError;
use crate::races::Races;
use crate::session::report::{SessionReport, SessionReportOutcome, Unapplied};
use crate::session::{SessionStore, SessionWrite};

/// How long an ended session is kept: the account's log retention (`LogRetentionDays`), as long
/// as the lines that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRetention(pub time::Duration);

impl SessionRetention {
    pub fn days(days: u32) -> Self {
        SessionRetention(time::Duration::days(i64::from(days)))
    }

    /// When the item of a session that ended at `ended` expires (Unix seconds).
    pub fn expires_at(self, ended: OffsetDateTime) -> i64 {
        (ended + self.0).unix_timestamp()
    }
}

/// Applies the data plane's `report` to the session it names, when it is the newest report of
/// an active session of that agent in that namespace; the outcome says why not otherwise (a
/// member past its bound is refused before anything is read). The
/// write that ends a session takes it out of its agent's count in the same transaction, and
/// sets when its item expires (`retention` after the report).
pub async fn apply_report<A: AgentStore, S: SessionStore>(
    agents: &A,
    sessions: &S,
    report: &SessionReport,
    retention: SessionRetention,
) -> Result<SessionReportOutcome, StoreError> {
    if report.out_of_bounds().is_some() {
        return Ok(SessionReportOutcome::Refused);
    }
    let mut races = Races::new();
    loop {
        let Some(agent) = agents.get_agent(&report.namespace, &report.agent).await? else {
            return Ok(SessionReportOutcome::UnknownAgent);
        };
        let id = report.session_id.as_str();
        let stored = stored_session(sessions, &report.namespace, &agent.service_id, id).await?;
        let Some(session) = stored else {
            return Ok(SessionReportOutcome::UnknownSession);
        };
        let mut next = match session.apply(report, OffsetDateTime::now_utc()) {
            Ok(next) => next,
            Err(Unapplied::Stale) => return Ok(SessionReportOutcome::Stale),
            Err(Unapplied::Settled) => return Ok(SessionReportOutcome::Settled),
            Err(Unapplied::Refused) => return Ok(SessionReportOutcome::Refused),
        };
        if !next.is_active() {
            next.expires_at = Some(retention.expires_at(report.observed_at));
        }
        match sessions.write_session(&session, &next).await? {
            SessionWrite::Written => return Ok(SessionReportOutcome::Applied),
            SessionWrite::Conflict => races.lost().await?,
        }
    }
}
