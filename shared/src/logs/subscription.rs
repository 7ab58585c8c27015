//! A CloudWatch Logs subscription's delivery as its function receives it (contract section 5):
//! a batch of one log stream's events, gzipped and base64-encoded under `awslogs.data`. What
//! the development data plane sends the ingest function for a session's lines, and what the
//! tests send it.

use std::io::Write;

use aws_lambda_events::cloudwatch_logs::LogData;
use base64::Engine;
use serde_json::{Value, json};

use super::ingest::{LOG_GROUP_PREFIX, LineSource};

impl LineSource<'_> {
    /// Its log group: `/agent-hosting/{namespace}/{agentName}`.
    pub fn log_group(&self) -> String {
        format!("{LOG_GROUP_PREFIX}{}/{}", self.namespace, self.agent)
    }

    /// Its log stream: `{deploymentId}/{sessionId}`, or `{deploymentId}` outside a session.
    pub fn log_stream(&self) -> String {
        match self.session_id {
            Some(session) => format!("{}/{session}", self.deployment_id),
            None => self.deployment_id.to_owned(),
        }
    }
}

/// A subscription's batch (what `awslogs.data` decodes to) of `group` and `stream`; events are
/// (id, Unix milliseconds, message).
pub fn log_data(group: &str, stream: &str, events: &[(String, i64, String)]) -> LogData {
    let events: Vec<Value> = events
        .iter()
        .map(|(id, timestamp, message)| json!({"id": id, "timestamp": timestamp, "message": message}))
        .collect();
    serde_json::from_value(json!({
        "messageType": "DATA_MESSAGE", "owner": "123456789012", "logGroup": group,
        "logStream": stream, "subscriptionFilters": ["agent-hosting"], "logEvents": events
    }))
    .unwrap_or_else(|_| unreachable!("the batch's members are LogData's own"))
}

/// The event CloudWatch Logs sends a subscription's function: the batch gzipped and
/// base64-encoded. (aws_lambda_events' own Serialize of `AwsLogs` writes base64 that its
/// Deserialize, and so the ingest function, refuses: "Invalid padding".)
pub fn subscription_event(data: &LogData) -> Value {
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let encoded = serde_json::to_vec(data)
        .map_err(std::io::Error::other)
        .and_then(|json| gzip.write_all(&json))
        .and_then(|()| gzip.finish());
    // Serializing plain data into memory does not fail.
    let compressed = encoded.unwrap_or_default();
    json!({"awslogs": {"data": base64::engine::general_purpose::STANDARD.encode(compressed)}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_names_the_group_and_stream_it_is_parsed_from() {
        for (group, stream) in [
            ("/agent-hosting/ns-1/voice-bot", "dep-1/session-1"),
            ("/agent-hosting/ns-1/voice-bot", "dep-1"),
        ] {
            let source = LineSource::parse(group, stream).unwrap();
            assert_eq!(
                (source.log_group(), source.log_stream()),
                (group.into(), stream.into())
            );
        }
    }

    #[test]
    fn a_delivery_decodes_as_the_ingest_function_reads_it() {
        let data = log_data(
            "/agent-hosting/ns/a",
            "d/s",
            &[("1".into(), 5, "hello".into())],
        );
        let sent = subscription_event(&data).to_string();
        let event: aws_lambda_events::cloudwatch_logs::LogsEvent =
            serde_json::from_str(&sent).unwrap();
        assert_eq!(event.aws_logs.data, data);
    }
}
