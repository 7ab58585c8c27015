//! The data plane's `Deployment Status` reports (contract section 7) and what one does to an
//! agent. Reports come through EventBridge, at least once and in any order: a report older than
//! the last one applied to its deployment changes nothing, and a report of a deployment the
//! agent no longer runs (superseded) or never had changes nothing either.

use serde::{Deserialize, Deserializer, Serialize};
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

use super::record::{AgentRecord, DeploymentError, DeploymentState, DeploymentStatus};
use crate::timestamp::rfc3339_millis;
use crate::validation::{OutOfBounds, keys_out_of_bounds};

/// The window a report's `observedAt` must lie in (contract section 7): not before 2000, and at
/// most 5 minutes ahead of the status function's clock. A report outside it (Go's zero time
/// from a data plane that forgot the field, a clock years off) is refused: applied, it would
/// decide the order of every later report of its deployment.
pub const OLDEST_OBSERVED_AT: OffsetDateTime = datetime!(2000-01-01 0:00 UTC);
pub const MAX_OBSERVED_AHEAD: Duration = Duration::minutes(5);

/// The longest `error.code` kept, in characters, and the longest `error.message`, in bytes
/// (contract section 7): the agent item keeps its errors, and DynamoDB's items stop at 400 KB.
pub const MAX_ERROR_CODE_CHARS: usize = 64;
pub const MAX_ERROR_MESSAGE_BYTES: usize = 1024;
/// What ends a code or a message that was cut to its bound.
pub const CUT_MARK: &str = " [cut]";

/// One report: the `detail` of a `Deployment Status` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    pub namespace: String,
    pub agent: String,
    pub deployment_id: String,
    pub state: DeploymentState,
    #[serde(default)]
    pub ready_replicas: u32,
    #[serde(default)]
    pub active_session_count: u32,
    /// How many times in a row the deployment's replicas failed (exited, or could not start)
    /// since it last had one ready; bounded by its type, as the other counts.
    #[serde(default)]
    pub restart_count: u32,
    /// How many replicas of the deployment the data plane has started (tried to start) so far.
    #[serde(default)]
    pub replicas_started: u32,
    /// The exit code of the deployment's last replica that exited, when one did (137: killed,
    /// out of memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_exit_code: Option<i32>,
    /// Cut to its bounds as it is read ([`bounded_error`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded_error"
    )]
    pub error: Option<DeploymentError>,
    /// When the data plane observed this state (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    pub observed_at: OffsetDateTime,
}

/// What became of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ReportOutcome {
    Applied,
    /// Not newer than the last report applied to its deployment (a duplicate or a late one).
    Stale,
    /// A deployment of the agent that is neither active nor serving any more.
    Superseded,
    /// No agent of that name in that namespace (deleted, or never there).
    UnknownAgent,
    /// The agent has no such deployment (another agent's, or another account's).
    UnknownDeployment,
    /// `observedAt` outside the window reports are taken from ([`OLDEST_OBSERVED_AT`],
    /// [`MAX_OBSERVED_AHEAD`]), or a member past its bound ([`StatusReport::out_of_bounds`]).
    Refused,
}

/// Why a report leaves an agent as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unapplied {
    Stale,
    /// Neither the active nor the serving deployment: superseded or unknown.
    NotCurrent,
    /// `observedAt` outside the window.
    OutOfWindow,
}

/// The latest `observedAt` taken at `now`, as Unix nanoseconds.
fn latest_taken_nanos(now: OffsetDateTime) -> i128 {
    (now + MAX_OBSERVED_AHEAD).unix_timestamp_nanos()
}

/// A report's time `observed` as Unix nanoseconds, when it lies in the window reports are taken
/// from at `now` (within it, it always fits an i64: i64 nanoseconds reach the year 2262). Every
/// report of the data plane's (deployments', sessions') is ordered by it.
pub fn observed_nanos(observed: OffsetDateTime, now: OffsetDateTime) -> Option<i64> {
    let nanos = observed.unix_timestamp_nanos();
    if observed < OLDEST_OBSERVED_AT || nanos > latest_taken_nanos(now) {
        return None;
    }
    i64::try_from(nanos).ok()
}

/// Whether a report observed at `observed` is newer than the last one applied (`last`). A kept
/// time later than any report taken at `now` can have (kept before reports had a window)
/// orders nothing.
pub fn is_newer(observed: i64, last: Option<i64>, now: OffsetDateTime) -> bool {
    last.filter(|&last| i128::from(last) <= latest_taken_nanos(now))
        .is_none_or(|last| observed > last)
}

impl StatusReport {
    /// The first member past its bound, if any: names the contract's names allow, the
    /// deployment's id a UUID (the counts are bounded by their type, the error cut as it is
    /// read).
    pub fn out_of_bounds(&self) -> Option<OutOfBounds> {
        keys_out_of_bounds(
            &self.namespace,
            &self.agent,
            &self.deployment_id,
            OutOfBounds::DeploymentId,
        )
    }

    /// The report's time as Unix nanoseconds, within the window ([`observed_nanos`]).
    pub fn observed_nanos(&self, now: OffsetDateTime) -> Option<i64> {
        observed_nanos(self.observed_at, now)
    }

    fn status(&self, observed_nanos: i64) -> DeploymentStatus {
        DeploymentStatus {
            state: self.state,
            ready_replicas: self.ready_replicas,
            active_session_count: self.active_session_count,
            restart_count: self.restart_count,
            replicas_started: self.replicas_started,
            last_exit_code: self.last_exit_code,
            error: match self.state {
                DeploymentState::Failed => self.error.clone(),
                DeploymentState::Pending | DeploymentState::Ready => None,
            },
            observed_at_nanos: Some(observed_nanos),
        }
    }
}

/// `text` cut to at most `max` bytes, ending in [`CUT_MARK`] when it was cut (at a character
/// boundary).
fn cut_to_bytes(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max - CUT_MARK.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT_MARK}", &text[..end])
}

/// `text` cut to at most `max` characters, ending in [`CUT_MARK`] when it was cut.
fn cut_to_chars(text: String, max: usize) -> String {
    if text.char_indices().nth(max).is_none() {
        return text;
    }
    let keep = max - CUT_MARK.chars().count();
    let end = text
        .char_indices()
        .nth(keep)
        .map_or(text.len(), |(at, _)| at);
    format!("{}{CUT_MARK}", &text[..end])
}

/// A report's error as the data plane sent it, its code and message cut to their bounds.
fn bounded_error<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<DeploymentError>, D::Error> {
    let error = Option::<DeploymentError>::deserialize(deserializer)?;
    Ok(error.map(|error| DeploymentError {
        code: cut_to_chars(error.code, MAX_ERROR_CODE_CHARS),
        message: cut_to_bytes(error.message, MAX_ERROR_MESSAGE_BYTES),
    }))
}

impl DeploymentStatus {
    /// Whether a report observed at `observed` is newer than the last one applied. A kept time
    /// later than any report taken at `now` can have (kept before reports had a window) orders
    /// nothing.
    fn is_older_than(&self, observed: i64, now: OffsetDateTime) -> bool {
        is_newer(observed, self.observed_at_nanos, now)
    }
}

impl AgentRecord {
    /// The agent after `report` (which names this agent), at `now`. When the active deployment
    /// is ready, the deployment served from before it is superseded.
    pub fn apply(
        &self,
        report: &StatusReport,
        now: OffsetDateTime,
    ) -> Result<AgentRecord, Unapplied> {
        let observed = report.observed_nanos(now).ok_or(Unapplied::OutOfWindow)?;
        let mut next = self.clone();
        if report.deployment_id == self.active.deployment.id {
            if !self.active.status.is_older_than(observed, now) {
                return Err(Unapplied::Stale);
            }
            next.active.status = report.status(observed);
            next.active.deployment.updated_at = rfc3339_millis(now);
            if next.active.status.is_ready() {
                next.serving = None;
            }
        } else if let Some(serving) = next
            .serving
            .as_mut()
            .filter(|serving| serving.deployment_id == report.deployment_id)
        {
            if !serving.status.is_older_than(observed, now) {
                return Err(Unapplied::Stale);
            }
            serving.status = report.status(observed);
        } else {
            return Err(Unapplied::NotCurrent);
        }
        next.version = self.version + 1;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::record::tests::{config, record};
    use serde_json::json;

    fn report(
        agent: &AgentRecord,
        deployment_id: &str,
        state: DeploymentState,
        second: i64,
    ) -> StatusReport {
        StatusReport {
            namespace: agent.owner.namespace.clone(),
            agent: agent.name.clone(),
            deployment_id: deployment_id.to_owned(),
            state,
            ready_replicas: u32::from(state == DeploymentState::Ready),
            active_session_count: 2,
            restart_count: 0,
            replicas_started: 1,
            last_exit_code: None,
            error: (state == DeploymentState::Failed).then(|| DeploymentError {
                code: "ImagePullBackOff".into(),
                message: "pull access denied".into(),
            }),
            observed_at: OffsetDateTime::from_unix_timestamp(1_800_000_000 + second).unwrap(),
        }
    }

    /// The reports' clock: report `second` is observed `second` seconds after it.
    const NOW: OffsetDateTime = datetime!(2027-01-15 8:00 UTC);

    #[test]
    fn a_ready_report_makes_the_agent_and_its_deployment_ready() {
        let agent = record();
        let id = agent.active.deployment.id.clone();
        let next = agent
            .apply(&report(&agent, &id, DeploymentState::Ready, 1), NOW)
            .unwrap();
        let view = next.view();
        assert!(view.ready && view.active_deployment_ready);
        assert_eq!(
            view.active_session_count, 0,
            "the agent's sessions are counted by their starts and ends, not by the report"
        );
        assert_eq!(
            next.active.status.active_session_count, 2,
            "kept as reported"
        );
        assert_eq!(next.version, agent.version + 1);
        assert_eq!(
            view.deployment.unwrap().updated_at,
            "2027-01-15T08:00:00.000Z"
        );
        assert_eq!(
            view.updated_at, agent.updated_at,
            "a report is not an update of the agent"
        );
    }

    #[test]
    fn reports_older_than_the_last_applied_or_repeated_change_nothing() {
        let agent = record();
        let id = agent.active.deployment.id.clone();
        let ready = agent
            .apply(&report(&agent, &id, DeploymentState::Ready, 10), NOW)
            .unwrap();
        for late in [
            report(&agent, &id, DeploymentState::Pending, 5),
            report(&agent, &id, DeploymentState::Ready, 10),
        ] {
            assert_eq!(ready.apply(&late, NOW), Err(Unapplied::Stale));
        }
        let failed = ready
            .apply(&report(&agent, &id, DeploymentState::Failed, 11), NOW)
            .unwrap();
        let view = failed.view();
        assert!(!view.ready);
        let errors = view.errors.unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code, "ImagePullBackOff");
    }

    #[test]
    fn during_a_rollout_the_previous_deployment_serves_until_the_new_one_is_ready() {
        let agent = record();
        let first = agent.active.deployment.id.clone();
        let ready = agent
            .apply(&report(&agent, &first, DeploymentState::Ready, 1), NOW)
            .unwrap();
        let rolled = ready.deploy(
            config(json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:2.0"})),
            crate::manifest::DeploymentMode::Simulated,
            "2027-01-15T08:00:00.000Z",
        );
        let second = rolled.active.deployment.id.clone();
        assert!(rolled.view().ready && !rolled.view().active_deployment_ready);

        // The serving deployment's own reports still apply...
        let sessions = rolled
            .apply(&report(&rolled, &first, DeploymentState::Ready, 2), NOW)
            .unwrap();
        assert_eq!(sessions.status_of(&first).unwrap().active_session_count, 2);
        // ...until the new one is ready; then it is superseded.
        let done = sessions
            .apply(&report(&rolled, &second, DeploymentState::Ready, 3), NOW)
            .unwrap();
        assert!(done.view().active_deployment_ready);
        assert_eq!(done.serving, None);
        assert_eq!(
            done.apply(&report(&rolled, &first, DeploymentState::Failed, 4), NOW),
            Err(Unapplied::NotCurrent)
        );
        assert_eq!(
            done.apply(
                &report(&rolled, "another-deployment", DeploymentState::Ready, 5),
                NOW
            ),
            Err(Unapplied::NotCurrent)
        );
    }

    #[test]
    fn reports_dated_outside_the_window_are_refused_and_never_decide_the_order() {
        let agent = record();
        let id = agent.active.deployment.id.clone();
        let at = |observed_at: OffsetDateTime| StatusReport {
            observed_at,
            ..report(&agent, &id, DeploymentState::Ready, 0)
        };
        for refused in [
            // Go's zero time: what a data plane that forgets the field sends.
            datetime!(0001-01-01 0:00 UTC),
            datetime!(1999-12-31 23:59:59.999 UTC),
            NOW + Duration::minutes(5) + Duration::nanoseconds(1),
            datetime!(2300-01-01 0:00 UTC),
        ] {
            assert_eq!(
                agent.apply(&at(refused), NOW),
                Err(Unapplied::OutOfWindow),
                "{refused}"
            );
        }
        let ahead = agent
            .apply(&at(NOW + Duration::minutes(5)), NOW)
            .expect("5 minutes ahead is taken");
        assert!(ahead.view().active_deployment_ready);
        assert!(agent.apply(&at(OLDEST_OBSERVED_AT), NOW).is_ok());

        // A time kept before reports had a window (the zero time, clamped to the largest
        // nanosecond) does not make every later report stale.
        let mut clamped = agent.clone();
        clamped.active.status.observed_at_nanos = Some(i64::MAX);
        let next = clamped
            .apply(&report(&agent, &id, DeploymentState::Failed, 1), NOW)
            .expect("a report in the window is newer than a clamped time");
        assert_eq!(next.view().errors.unwrap().len(), 1);
    }

    #[test]
    fn a_reported_error_is_cut_to_64_characters_of_code_and_1_kib_of_message() {
        let detail = |code: &str, message: &str| {
            json!({
                "namespace": "ns", "agent": "a", "deploymentId": "d", "state": "failed",
                "error": {"code": code, "message": message},
                "observedAt": "2026-11-23T10:00:00Z"
            })
        };
        let read = |code: &str, message: &str| {
            serde_json::from_value::<StatusReport>(detail(code, message))
                .unwrap()
                .error
                .unwrap()
        };
        let long = read(&"C".repeat(100), &"m".repeat(250_000));
        assert_eq!(long.code.chars().count(), MAX_ERROR_CODE_CHARS);
        assert!(long.code.ends_with(CUT_MARK));
        assert_eq!(long.message.len(), MAX_ERROR_MESSAGE_BYTES);
        assert!(long.message.starts_with("mmm") && long.message.ends_with(CUT_MARK));
        // Cut at a character boundary, never inside one.
        let wide = read(&"é".repeat(64), &"€".repeat(400));
        assert_eq!(wide.code, "é".repeat(64), "64 characters fit");
        assert!(wide.message.len() <= MAX_ERROR_MESSAGE_BYTES);
        assert!(wide.message.ends_with(CUT_MARK));
        assert_eq!(
            read("ImagePullBackOff", "pull access denied"),
            DeploymentError {
                code: "ImagePullBackOff".into(),
                message: "pull access denied".into()
            },
            "within the bounds, as sent"
        );
    }

    #[test]
    fn a_report_names_an_agent_by_the_contract_s_names_and_a_deployment_by_its_uuid() {
        let agent = record();
        let id = agent.active.deployment.id.clone();
        let named = report(&agent, &id, DeploymentState::Ready, 1);
        assert_eq!(named.out_of_bounds(), None);
        for (changed, member) in [
            (
                StatusReport {
                    namespace: "n".repeat(1 << 20),
                    ..named.clone()
                },
                OutOfBounds::Namespace,
            ),
            (
                StatusReport {
                    agent: "a".repeat(100_000),
                    ..named.clone()
                },
                OutOfBounds::Agent,
            ),
            (
                StatusReport {
                    deployment_id: "d-1".into(),
                    ..named.clone()
                },
                OutOfBounds::DeploymentId,
            ),
        ] {
            assert_eq!(changed.out_of_bounds(), Some(member));
        }
    }

    #[test]
    fn a_failed_report_s_restarts_replicas_and_exit_code_are_kept_through_apply() {
        let agent = record();
        let id = agent.active.deployment.id.clone();
        let crashed = StatusReport {
            restart_count: 2,
            replicas_started: 3,
            last_exit_code: Some(3),
            ..report(&agent, &id, DeploymentState::Failed, 1)
        };
        let next = agent.apply(&crashed, NOW).unwrap();
        let status = &next.active.status;
        assert_eq!(
            (
                status.restart_count,
                status.replicas_started,
                status.last_exit_code
            ),
            (2, 3, Some(3))
        );
        // Sent and kept in the contract's names; a status kept before them reads with defaults.
        let sent = serde_json::to_value(&crashed).unwrap();
        assert_eq!(
            (
                &sent["restartCount"],
                &sent["replicasStarted"],
                &sent["lastExitCode"]
            ),
            (&json!(2), &json!(3), &json!(3))
        );
        let kept = serde_json::to_value(status).unwrap();
        assert_eq!(kept["lastExitCode"], 3);
        let old: DeploymentStatus = serde_json::from_value(
            json!({"state": "ready", "readyReplicas": 1, "activeSessionCount": 0}),
        )
        .unwrap();
        assert_eq!(
            (old.restart_count, old.replicas_started, old.last_exit_code),
            (0, 0, None)
        );
        assert!(
            serde_json::to_value(&old)
                .unwrap()
                .get("lastExitCode")
                .is_none()
        );
    }

    #[test]
    fn a_report_reads_as_the_data_plane_sends_it() {
        let detail = json!({
            "namespace": "tiny-ferret-maroon-123", "agent": "my-agent",
            "deploymentId": "d-1", "state": "failed", "readyReplicas": 0,
            "activeSessionCount": 0,
            "error": {"code": "CrashLoopBackOff", "message": "exit code 1"},
            "observedAt": "2026-11-23T10:00:00.123456789Z"
        });
        let report: StatusReport = serde_json::from_value(detail.clone()).unwrap();
        assert_eq!(report.state, DeploymentState::Failed);
        assert_eq!(
            (
                report.restart_count,
                report.replicas_started,
                report.last_exit_code
            ),
            (0, 0, None),
            "a data plane that sends no health leaves the defaults"
        );
        let mut with_health = detail;
        with_health["restartCount"] = json!(4);
        with_health["replicasStarted"] = json!(5);
        with_health["lastExitCode"] = json!(137);
        let report: StatusReport = serde_json::from_value(with_health).unwrap();
        assert_eq!(
            (
                report.restart_count,
                report.replicas_started,
                report.last_exit_code
            ),
            (4, 5, Some(137))
        );
        assert_eq!(report.observed_at.nanosecond(), 123_456_789);
        assert!(serde_json::from_value::<StatusReport>(json!({"state": "gone"})).is_err());
    }
}
