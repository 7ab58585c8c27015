//! The agents table's stream read as the stream publisher reads it: its reader opened once the
//! table's stream answers, the records written since the last poll, and the event the publisher
//! puts on the bus for each (its own code), said.

use std::time::Duration;

use serde_json::Value;

use crate::rules;
use crate::stream::{LocalStreams, StreamReader, StreamRecord};

/// The table's stream reader, waited for (said) until DynamoDB Local and the table answer.
pub async fn open_reader(streams: &LocalStreams, table: &str) -> StreamReader {
    loop {
        match StreamReader::open(streams.clone(), table).await {
            Ok(reader) => return reader,
            Err(error) => {
                eprintln!("dev data plane: waiting for the {table} table's stream ({error})");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// The records written since the last poll; none while the store is away (they are still
/// there when it is back).
pub async fn poll(reader: &mut StreamReader) -> Vec<StreamRecord> {
    reader.poll().await.unwrap_or_else(|error| {
        eprintln!("dev data plane: reading the stream: {error}");
        Vec::new()
    })
}

/// The event the stream publisher puts on the bus for a record (its own code), said; a record
/// no event can be made of is said too, and passed, as the publisher passes it.
pub fn publish(record: &StreamRecord) -> Vec<Value> {
    match shared::stream_events::event_of(&record.record) {
        Ok(Some(event)) => {
            let detail = &event.detail;
            let text = |name: &str| detail[name].as_str().unwrap_or_default().to_owned();
            let subject = match detail.get("sessionId") {
                Some(_) => format!("session {}", text("sessionId")),
                None => format!("deployment {}", text("deploymentId")),
            };
            println!(
                "dev data plane: {} {}/{} {subject}",
                event.detail_type.as_str(),
                text("namespace"),
                text("agentName"),
            );
            vec![rules::as_delivered(&event)]
        }
        Ok(None) => Vec::new(),
        Err(error) => {
            eprintln!("dev data plane: stream record {}: {error}", record.sequence);
            Vec::new()
        }
    }
}
