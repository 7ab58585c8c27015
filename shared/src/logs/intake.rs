//! One CloudWatch Logs delivery into an agent's stored lines (contract section 5): the ingest
//! function's whole work, and the operator's replay of its failure queue (both call [`ingest`]).
//!
//! One subscription event carries the lines of one log stream of one log group:
//! `/agent-hosting/{namespace}/{agentName}`, stream `{deploymentId}/{sessionId}` or
//! `{deploymentId}`. Lines belong to the service of the agent whose deployment logged them: a
//! stream's deployment must be one the agent of that name has run, so the lines of a deleted
//! agent's deployments never reach a later agent of the same name. Lines of an unknown agent or
//! deployment, or of a group or stream outside that scheme, are dropped and counted in this
//! function's log; they never fail the batch. A store failure does fail it, so Lambda retries the
//! delivery, which is safe: a line's key is its timestamp and event id, and writing it again
//! overwrites it.

use std::collections::HashSet;
use std::sync::Mutex;

use aws_lambda_events::cloudwatch_logs::LogData;
use serde::Serialize;

use super::ingest::{LineSource, bounded_time, parse_message, split_text};
use super::line::{LogLine, MAX_EVENT_ID_LENGTH};
use super::store::LogStore;
use crate::agent::AgentStore;
use crate::error::StoreError;

/// The most deployments a warm function remembers; past it, it starts again (each costs one
/// read the next time).
const MAX_KNOWN_DEPLOYMENTS: usize = 10_000;

/// What one delivery did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestReport {
    pub stored: usize,
    pub dropped_unknown_agent: usize,
    pub dropped_unknown_deployment: usize,
    pub dropped_unrecognised_source: usize,
    pub dropped_bad_line: usize,
    /// Events of the batch whose id an earlier event of it already had (kept: the first).
    pub dropped_duplicate: usize,
    /// Lines longer than `logs::MAX_LINE_BYTES`, stored as marked parts.
    pub split_lines: usize,
    /// Lines dated more than a day ahead of their arrival, stored at their arrival time.
    pub future_times_replaced: usize,
}

/// Reports of several deliveries, summed (the operator command's replay).
impl std::ops::AddAssign<&IngestReport> for IngestReport {
    fn add_assign(&mut self, batch: &IngestReport) {
        self.stored += batch.stored;
        self.dropped_unknown_agent += batch.dropped_unknown_agent;
        self.dropped_unknown_deployment += batch.dropped_unknown_deployment;
        self.dropped_unrecognised_source += batch.dropped_unrecognised_source;
        self.dropped_bad_line += batch.dropped_bad_line;
        self.dropped_duplicate += batch.dropped_duplicate;
        self.split_lines += batch.split_lines;
        self.future_times_replaced += batch.future_times_replaced;
    }
}

/// Where a stream's lines go.
enum Owner {
    Service(String),
    UnknownAgent,
    UnknownDeployment,
}

/// A deployment in the history of a service.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ServiceDeployment {
    service_id: String,
    deployment_id: String,
}

/// Deployments seen in their service's history, kept across invocations of a warm function to
/// spare the read of the history for lines of a deployment the agent no longer runs. Only where
/// a deployment belongs is remembered, never that its agent exists: the agent is read for every
/// batch (one GetItem), so the lines of an agent deleted a moment ago are dropped and counted,
/// never stored under a service nobody can read.
#[derive(Debug, Default)]
pub struct KnownDeployments(Mutex<HashSet<ServiceDeployment>>);

impl KnownDeployments {
    async fn owner<A: AgentStore>(
        &self,
        agents: &A,
        namespace: &str,
        agent: &str,
        deployment: &str,
    ) -> Result<Owner, StoreError> {
        let Some(record) = agents.get_agent(namespace, agent).await? else {
            return Ok(Owner::UnknownAgent);
        };
        if record.status_of(deployment).is_some() {
            return Ok(Owner::Service(record.service_id));
        }
        // A deployment never leaves the history of the service it was made in.
        let key = ServiceDeployment {
            service_id: record.service_id.clone(),
            deployment_id: deployment.to_owned(),
        };
        if self.0.lock().is_ok_and(|known| known.contains(&key)) {
            return Ok(Owner::Service(record.service_id));
        }
        let ran = agents
            .get_deployment(namespace, &record.service_id, deployment)
            .await?
            .is_some();
        if !ran {
            return Ok(Owner::UnknownDeployment);
        }
        if let Ok(mut known) = self.0.lock() {
            if known.len() >= MAX_KNOWN_DEPLOYMENTS {
                known.clear();
            }
            known.insert(key);
        }
        Ok(Owner::Service(record.service_id))
    }
}

#[tracing::instrument(skip_all, fields(log_group = %data.log_group, log_stream = %data.log_stream, events = data.log_events.len()))]
pub async fn ingest<A: AgentStore, L: LogStore>(
    agents: &A,
    logs: &L,
    known: &KnownDeployments,
    retention_days: u32,
    data: LogData,
) -> Result<IngestReport, StoreError> {
    let mut report = IngestReport::default();
    // CloudWatch sends a CONTROL_MESSAGE when a subscription is created, to check the target.
    if data.message_type != "DATA_MESSAGE" {
        tracing::info!(message_type = %data.message_type, "not a data message; nothing to store");
        return Ok(report);
    }
    let Some(LineSource {
        namespace,
        agent,
        deployment_id,
        session_id,
    }) = LineSource::parse(&data.log_group, &data.log_stream)
    else {
        report.dropped_unrecognised_source = data.log_events.len();
        tracing::warn!(
            dropped = report.dropped_unrecognised_source,
            "log group or stream outside the agent-hosting scheme"
        );
        return Ok(report);
    };
    let service_id = match known.owner(agents, namespace, agent, deployment_id).await? {
        Owner::Service(service_id) => service_id,
        Owner::UnknownAgent => {
            report.dropped_unknown_agent = data.log_events.len();
            tracing::warn!(%namespace, %agent, dropped = report.dropped_unknown_agent, "lines of an unknown agent dropped");
            return Ok(report);
        }
        Owner::UnknownDeployment => {
            report.dropped_unknown_deployment = data.log_events.len();
            tracing::warn!(%namespace, %agent, %deployment_id, dropped = report.dropped_unknown_deployment, "lines of a deployment the agent never ran dropped");
            return Ok(report);
        }
    };

    let arrival_nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        });
    let mut seen_ids = std::collections::HashSet::with_capacity(data.log_events.len());
    let mut lines = Vec::with_capacity(data.log_events.len());
    for event in &data.log_events {
        if event.id.is_empty() || event.id.len() > MAX_EVENT_ID_LENGTH {
            report.dropped_bad_line += 1;
            continue;
        }
        // One write request may not name an item twice, and CloudWatch's ids are unique: a
        // repeated id is a duplicate, never a reason to fail the batch.
        if !seen_ids.insert(event.id.as_str()) {
            report.dropped_duplicate += 1;
            continue;
        }
        let (own_nanos, text) = parse_message(&event.message, event.timestamp);
        let timestamp_nanos = bounded_time(own_nanos, arrival_nanos);
        if timestamp_nanos != own_nanos {
            report.future_times_replaced += 1;
        }
        let parts = split_text(text);
        if parts.len() > 1 {
            report.split_lines += 1;
        }
        for (id_suffix, text) in parts {
            lines.push(LogLine {
                service_id: service_id.clone(),
                deployment_id: deployment_id.to_owned(),
                session_id: session_id.map(str::to_owned),
                event_id: format!("{}{id_suffix}", event.id),
                timestamp_nanos,
                text,
            });
        }
    }
    logs.put_lines(&lines, retention_days).await?;
    report.stored = lines.len();
    if report.dropped_bad_line > 0 {
        tracing::warn!(
            dropped = report.dropped_bad_line,
            "lines without a usable event id dropped"
        );
    }
    if report.dropped_duplicate + report.split_lines + report.future_times_replaced > 0 {
        tracing::warn!(
            dropped_duplicate = report.dropped_duplicate,
            split_lines = report.split_lines,
            future_times_replaced = report.future_times_replaced,
            "lines repaired"
        );
    }
    tracing::info!(stored = report.stored, "lines stored");
    Ok(report)
}
