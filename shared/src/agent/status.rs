//! The data plane's `Deployment Status` reports (contract section 7) and what one does to an
//! agent. Reports come through EventBridge, at least once and in any order: a report older than
//! the last one applied to its deployment changes nothing, and a report of a deployment the
//! agent no longer runs (superseded) or never had changes nothing either.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::record::{AgentRecord, DeploymentError, DeploymentState, DeploymentStatus};

/// The EventBridge detail-type of a report.
pub const DETAIL_TYPE: &str = "Deployment Status";

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
}

/// Why a report leaves an agent as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unapplied {
    Stale,
    /// Neither the active nor the serving deployment: superseded or unknown.
    NotCurrent,
}

impl StatusReport {
    fn observed_nanos(&self) -> i64 {
        // i64 nanoseconds reach the year 2262; a report beyond is clamped, and stays newest.
        i64::try_from(self.observed_at.unix_timestamp_nanos()).unwrap_or(i64::MAX)
    }

    fn status(&self) -> DeploymentStatus {
        DeploymentStatus {
            state: self.state,
            ready_replicas: self.ready_replicas,
            active_session_count: self.active_session_count,
            error: match self.state {
                DeploymentState::Failed => self.error.clone(),
                DeploymentState::Pending | DeploymentState::Ready => None,
            },
            observed_at_nanos: Some(self.observed_nanos()),
        }
    }
}

impl DeploymentStatus {
    fn is_newer(&self, report: &StatusReport) -> bool {
        self.observed_at_nanos
            .is_none_or(|last| report.observed_nanos() > last)
    }
}

impl AgentRecord {
    /// The agent after `report` (which names this agent), at `now`. When the active deployment
    /// is ready, the deployment served from before it is superseded.
    pub fn apply(&self, report: &StatusReport, now: &str) -> Result<AgentRecord, Unapplied> {
        let mut next = self.clone();
        if report.deployment_id == self.active.deployment.id {
            if !self.active.status.is_newer(report) {
                return Err(Unapplied::Stale);
            }
            next.active.status = report.status();
            next.active.deployment.updated_at = now.to_owned();
            if next.active.status.is_ready() {
                next.serving = None;
            }
        } else if let Some(serving) = next
            .serving
            .as_mut()
            .filter(|serving| serving.deployment_id == report.deployment_id)
        {
            if !serving.status.is_newer(report) {
                return Err(Unapplied::Stale);
            }
            serving.status = report.status();
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
            error: (state == DeploymentState::Failed).then(|| DeploymentError {
                code: "ImagePullBackOff".into(),
                message: "pull access denied".into(),
            }),
            observed_at: OffsetDateTime::from_unix_timestamp(1_800_000_000 + second).unwrap(),
        }
    }

    const NOW: &str = "2027-01-15T08:00:00.000Z";

    #[test]
    fn a_ready_report_makes_the_agent_and_its_deployment_ready() {
        let agent = record();
        let id = agent.active.deployment.id.clone();
        let next = agent
            .apply(&report(&agent, &id, DeploymentState::Ready, 1), NOW)
            .unwrap();
        let view = next.view();
        assert!(view.ready && view.active_deployment_ready);
        assert_eq!(view.active_session_count, 2);
        assert_eq!(next.version, agent.version + 1);
        assert_eq!(view.deployment.unwrap().updated_at, NOW);
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
            NOW,
        );
        let second = rolled.active.deployment.id.clone();
        assert!(rolled.view().ready && !rolled.view().active_deployment_ready);

        // The serving deployment's own reports still count...
        let sessions = rolled
            .apply(&report(&rolled, &first, DeploymentState::Ready, 2), NOW)
            .unwrap();
        assert_eq!(sessions.view().active_session_count, 2);
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
    fn a_report_reads_as_the_data_plane_sends_it() {
        let detail = json!({
            "namespace": "tiny-ferret-maroon-123", "agent": "my-agent",
            "deploymentId": "d-1", "state": "failed", "readyReplicas": 0,
            "activeSessionCount": 0,
            "error": {"code": "CrashLoopBackOff", "message": "exit code 1"},
            "observedAt": "2026-11-23T10:00:00.123456789Z"
        });
        let report: StatusReport = serde_json::from_value(detail).unwrap();
        assert_eq!(report.state, DeploymentState::Failed);
        assert_eq!(report.observed_at.nanosecond(), 123_456_789);
        assert!(serde_json::from_value::<StatusReport>(json!({"state": "gone"})).is_err());
    }
}
