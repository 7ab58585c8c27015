//! The data plane's reports on AWS ([`Reports`]): `Deployment Status` and `Session Status`
//! onto the agents bus ([`super::bus`]), a replica's lines into section 5's log streams
//! ([`super::log_sink`]), whose subscription delivers them to the ingest function. Each is
//! tried a few times (as EventBridge retries a target), then given up and said so, without
//! the report's detail or a line's text; the data plane goes on either way.

use std::future::Future;
use std::time::Duration;

use shared::agent::StatusReport;
use shared::logs::LineSource;
use time::OffsetDateTime;

use super::bus::ReportBus;
use super::log_sink::{self, LogSink};
use crate::ports::{LineBatch, Reports, SessionStatus};

/// Attempts at one report or one PutLogEvents call (each on top of the SDK's own retries).
const ATTEMPTS: u32 = 3;
/// The pause after a failed attempt, doubled after each.
const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// What the stack gives the reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSettings {
    /// The agents bus (`EVENT_BUS_NAME`), named or by ARN.
    pub bus_name: String,
    /// The subscription filter's destination (`INGEST_FUNCTION_ARN`).
    pub ingest_function_arn: String,
    /// `LOG_RETENTION_DAYS`: the groups keep lines at least this long.
    pub log_retention_days: u32,
}

/// Reports and lines on AWS: EventBridge and CloudWatch Logs.
#[derive(Debug)]
pub struct AwsReports {
    bus: ReportBus,
    sink: LogSink,
}

impl AwsReports {
    pub fn new(
        eventbridge: aws_sdk_eventbridge::Client,
        logs: aws_sdk_cloudwatchlogs::Client,
        settings: ReportSettings,
    ) -> Self {
        AwsReports {
            bus: ReportBus::new(eventbridge, settings.bus_name),
            sink: LogSink::new(
                logs,
                settings.ingest_function_arn,
                settings.log_retention_days,
            ),
        }
    }
}

/// Runs `attempt` until it succeeds, at most [`ATTEMPTS`] times; the last error if none did.
/// `what` is sent: a deployment's or session's report, or lines.
async fn attempted<T, E, F>(what: &'static str, mut attempt: impl FnMut() -> F) -> Result<T, E>
where
    E: std::fmt::Display,
    F: Future<Output = Result<T, E>>,
{
    let mut pause = FIRST_PAUSE;
    let mut tried = 1;
    loop {
        match attempt().await {
            Err(error) if tried < ATTEMPTS => {
                tracing::warn!(what, %error, attempt = tried, "not delivered; trying again");
                tokio::time::sleep(pause).await;
                (pause, tried) = (pause * 2, tried + 1);
            }
            outcome => return outcome,
        }
    }
}

impl Reports for AwsReports {
    async fn deployment(&self, report: StatusReport) {
        let detail_type = shared::stream_events::DEPLOYMENT_STATUS;
        let sent = attempted("deployment report", || {
            let report = StatusReport {
                observed_at: OffsetDateTime::now_utc(),
                ..report.clone()
            };
            async move { self.bus.put(detail_type, &report).await }
        })
        .await;
        if let Err(error) = sent {
            tracing::error!(
                namespace = %report.namespace, agent = %report.agent,
                deployment_id = %report.deployment_id, state = ?report.state, %error,
                "a deployment's report was given up"
            );
        }
    }

    async fn session(&self, report: SessionStatus) {
        let detail_type = shared::stream_events::SESSION_STATUS;
        let sent = attempted("session report", || {
            let report = SessionStatus {
                observed_at: OffsetDateTime::now_utc(),
                ..report.clone()
            };
            async move { self.bus.put(detail_type, &report).await }
        })
        .await;
        // Never the report itself: it may hold the room's token.
        if let Err(error) = sent {
            tracing::error!(
                namespace = %report.namespace, agent = %report.agent,
                session_id = %report.session_id, state = report.state, %error,
                "a session's report was given up"
            );
        }
    }

    async fn lines(&self, batch: LineBatch) {
        let source = LineSource {
            namespace: &batch.namespace,
            agent: &batch.agent,
            deployment_id: &batch.deployment_id,
            session_id: batch.session_id.as_deref(),
        };
        let (group, stream) = (source.log_group(), source.log_stream());
        let (mut events, oversized): (Vec<_>, Vec<_>) =
            batch.events.into_iter().partition(log_sink::fits);
        if !oversized.is_empty() {
            tracing::warn!(%group, %stream, count = oversized.len(), "lines too long for CloudWatch Logs left out");
        }
        if events.is_empty() {
            return;
        }
        // A call's events in chronological order; lines of one millisecond keep theirs.
        events.sort_by_key(|(_, at, _)| *at);
        // Lines a stream holds already (read again by a restarted data plane) left out, once.
        if let Err(error) = attempted("lines", || self.sink.ensure(&group, &stream)).await {
            tracing::error!(%group, %stream, lines = events.len(), %error, "lines were given up");
            return;
        }
        let count = events.len();
        let events = self.sink.unseen(&group, &stream, events);
        if events.len() < count {
            tracing::info!(%group, %stream, count = count - events.len(), "lines already in the stream left out");
        }
        let calls = log_sink::calls(&events);
        for (i, call) in calls.iter().enumerate() {
            let sent = attempted("lines", || self.sink.put(&group, &stream, call)).await;
            if let Err(error) = sent {
                let given_up: usize = calls[i..].iter().map(|call| call.len()).sum();
                tracing::error!(%group, %stream, lines = given_up, %error, "lines were given up");
                return;
            }
        }
    }
}
