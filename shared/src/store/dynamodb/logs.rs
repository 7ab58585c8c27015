//! Log chunks in LogsTable ([`crate::logs::chunk`]), and the queries that read them.
//!
//! Item: `pk` = `{serviceId}` (the agent's service: a later agent of the same name has another),
//! `sk` = the chunk's last line's position `{nanoseconds:020}#{eventId}` (time order; the same
//! batch delivered again overwrites instead of duplicating), `dpk` = `{serviceId}#{deploymentId}`
//! (index `by-deployment`), `spk` = `{serviceId}#{sessionId}` (index `by-session`, sparse: only
//! chunks of a session), `deploymentId`, `sessionId`, `lines` (how many), `firstNanos` (the
//! first line's timestamp), `body` (the lines, deflated) and `expiresAt` (TTL, Unix seconds: when the
//! last line expires).
//!
//! Items of the layout before chunks (a line an item: `log` instead of `body`, `lines` and
//! `firstNanos`) share the keys and indexes and are read as chunks of one line, until they expire.
//!
//! Every read is one key condition on the partition that fits the filters plus `sk BETWEEN` the
//! chunk keys that can hold the range's lines.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use serde::{Deserialize, Serialize};

use super::{DynamoStore, Item, WriteUnits, built, classify, item_of, mapping, s};
use crate::error::StoreError;
use crate::logs::chunk::{ChunkLine, LogChunk};
use crate::logs::filter::Partition;
use crate::logs::{ChunkRequest, ChunksRead, LogFilter, LogStore, Order, position_nanos};

pub const DEPLOYMENT_INDEX: &str = "by-deployment";
pub const SESSION_INDEX: &str = "by-session";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogItem {
    pub pk: String,
    pub sk: String,
    pub dpk: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spk: Option<String>,
    pub deployment_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub expires_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_bytes::ByteBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_nanos: Option<u64>,
    /// The layout before chunks: the item's one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

impl LogItem {
    pub fn new(chunk: &LogChunk) -> Self {
        let partition = chunk.service_id.clone();
        LogItem {
            dpk: format!("{partition}#{}", chunk.deployment_id),
            spk: chunk
                .session_id
                .as_ref()
                .map(|session| format!("{partition}#{session}")),
            pk: partition,
            sk: chunk.last_position.clone(),
            deployment_id: chunk.deployment_id.clone(),
            session_id: chunk.session_id.clone(),
            expires_at: chunk.expires_at,
            body: Some(serde_bytes::ByteBuf::from(chunk.body.clone())),
            lines: Some(chunk.line_count),
            first_nanos: Some(chunk.first_nanos),
            log: None,
        }
    }

    pub fn into_chunk(self) -> Result<LogChunk, StoreError> {
        match (self.body, self.lines, self.first_nanos, self.log) {
            (Some(body), Some(line_count), Some(first_nanos), _) => Ok(LogChunk {
                service_id: self.pk,
                deployment_id: self.deployment_id,
                session_id: self.session_id,
                last_position: self.sk,
                first_nanos,
                line_count,
                expires_at: self.expires_at,
                body: body.into_vec(),
            }),
            (None, _, _, Some(text)) => {
                let (timestamp, event_id) = self.sk.split_once('#').unwrap_or((&self.sk, ""));
                let line = ChunkLine {
                    timestamp_nanos: position_nanos(timestamp).unwrap_or(0),
                    event_id: event_id.to_owned(),
                    text,
                };
                Ok(LogChunk::of_one_line(
                    line,
                    self.deployment_id,
                    self.session_id,
                    self.pk,
                    self.expires_at,
                ))
            }
            _ => Err(StoreError::Unexpected(
                "a logs item is neither a chunk nor a line".into(),
            )),
        }
    }
}

/// The index, its partition attribute and value that serve a filter's partition.
fn partition_for(filter: &LogFilter) -> (Option<&'static str>, &'static str, String) {
    let service = &filter.service_id;
    match filter.partition() {
        Partition::Session { session, .. } => {
            (Some(SESSION_INDEX), "spk", format!("{service}#{session}"))
        }
        Partition::Deployment(deployment) => (
            Some(DEPLOYMENT_INDEX),
            "dpk",
            format!("{service}#{deployment}"),
        ),
        Partition::Service => (None, "pk", service.clone()),
    }
}

/// The key to continue after chunk `key` in the partition serving `filter`.
fn start_after(filter: &LogFilter, key: &str) -> Item {
    let (_, key_attribute, key_value) = partition_for(filter);
    let mut start = HashMap::from([
        ("pk".to_owned(), s(&filter.service_id)),
        ("sk".to_owned(), s(key)),
    ]);
    start.insert(key_attribute.to_owned(), s(key_value));
    start
}

fn sort_key_of(key: &Item) -> Option<String> {
    match key.get("sk") {
        Some(AttributeValue::S(sk)) => Some(sk.clone()),
        _ => None,
    }
}

impl DynamoStore {
    /// Stores chunks as [`LogStore::put_chunks`] does; the write units the table and its indexes
    /// consumed (what the lines cost: `make logs-cost` reads it, the ingest function logs it).
    pub async fn put_chunks_measured(&self, chunks: &[LogChunk]) -> Result<WriteUnits, StoreError> {
        let puts = chunks
            .iter()
            .map(|chunk| {
                let put = PutRequest::builder()
                    .set_item(Some(item_of(&LogItem::new(chunk))?))
                    .build()
                    .map_err(built)?;
                Ok(WriteRequest::builder().put_request(put).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.batch_write(&self.logs_table, puts).await
    }
}

/// What a chunk takes in storage, as DynamoDB bills it: each copy (the table's, and each index's
/// that projects it) is its attributes' names and values plus 100 bytes of overhead. For `make
/// logs-cost`, hence test-support only.
#[cfg(any(test, feature = "test-support"))]
pub fn stored_bytes(chunk: &LogChunk) -> usize {
    let item = LogItem::new(chunk);
    let text = |s: &str| s.len();
    // A number: about one byte per two digits, plus one.
    let number = |digits: String| digits.len().div_ceil(2) + 1;
    let attributes = [
        ("pk", text(&item.pk)),
        ("sk", text(&item.sk)),
        ("dpk", text(&item.dpk)),
        ("deploymentId", text(&item.deployment_id)),
        ("expiresAt", number(item.expires_at.to_string())),
        ("body", chunk.body.len()),
        ("lines", number(chunk.line_count.to_string())),
        ("firstNanos", number(chunk.first_nanos.to_string())),
    ]
    .into_iter()
    .chain(item.spk.as_deref().map(|spk| ("spk", text(spk))))
    .chain(item.session_id.as_deref().map(|id| ("sessionId", text(id))))
    .map(|(name, value)| name.len() + value)
    .sum::<usize>();
    let copies = 2 + usize::from(item.spk.is_some());
    copies * (attributes + 100)
}

impl LogStore for DynamoStore {
    async fn put_chunks(&self, chunks: &[LogChunk]) -> Result<(), StoreError> {
        let write_units = self.put_chunks_measured(chunks).await?.total();
        let lines: usize = chunks.iter().map(|chunk| chunk.line_count).sum();
        tracing::info!(lines, chunks = chunks.len(), write_units, "lines written");
        Ok(())
    }

    async fn read_chunks(&self, request: &ChunkRequest<'_>) -> Result<ChunksRead, StoreError> {
        let filter = request.filter;
        let (index, key_attribute, key_value) = partition_for(filter);
        let mut query = self
            .client
            .query()
            .table_name(&self.logs_table)
            .set_index_name(index.map(str::to_owned))
            .key_condition_expression(format!(
                "{key_attribute} = :key AND sk BETWEEN :from AND :to"
            ))
            .expression_attribute_values(":key", s(key_value))
            .expression_attribute_values(":from", s(request.from_key))
            .expression_attribute_values(":to", s(request.to_key))
            .scan_index_forward(filter.order == Order::Asc)
            .limit(i32::try_from(request.max_chunks.max(1)).unwrap_or(i32::MAX))
            .set_exclusive_start_key(request.after_key.map(|key| start_after(filter, key)));
        // What the partition's key does not match (Partition::matches), after `Limit`.
        if let Partition::Session {
            deployment: Some(deployment),
            ..
        } = filter.partition()
        {
            query = query
                .filter_expression("deploymentId = :deployment")
                .expression_attribute_values(":deployment", s(deployment));
        }
        let output = query.send().await.map_err(classify)?;
        let chunks = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| {
                serde_dynamo::from_item::<_, LogItem>(item)
                    .map_err(mapping)
                    .and_then(LogItem::into_chunk)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ChunksRead {
            chunks,
            resume_after: output.last_evaluated_key.as_ref().and_then(sort_key_of),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::{LogLine, pack};

    fn line(session_id: Option<&str>) -> LogLine {
        LogLine {
            service_id: "svc-1".into(),
            deployment_id: "dep".into(),
            session_id: session_id.map(str::to_owned),
            event_id: "3800".into(),
            timestamp_nanos: 1_745_008_457_153_744_602,
            text: "hello".into(),
        }
    }

    #[test]
    fn chunk_items_round_trip_with_their_index_keys() {
        let chunk = pack(&[line(Some("sess"))], 30).remove(0);
        let item: Item = serde_dynamo::to_item(LogItem::new(&chunk)).unwrap();
        assert_eq!(item["pk"], s("svc-1"));
        assert_eq!(item["sk"], s("01745008457153744602#3800"));
        assert_eq!(item["dpk"], s("svc-1#dep"));
        assert_eq!(item["spk"], s("svc-1#sess"));
        assert!(matches!(item["body"], AttributeValue::B(_)), "a binary");
        assert_eq!(
            item["expiresAt"],
            AttributeValue::N((1_745_008_457 + 30 * 86_400).to_string())
        );
        let back = serde_dynamo::from_item::<_, LogItem>(item)
            .unwrap()
            .into_chunk()
            .unwrap();
        assert_eq!(back, chunk);

        let outside = pack(&[line(None)], 30).remove(0);
        let item: Item = serde_dynamo::to_item(LogItem::new(&outside)).unwrap();
        assert!(
            !item.contains_key("spk"),
            "chunks outside a session stay out of by-session"
        );
    }

    #[test]
    fn an_item_of_the_layout_before_chunks_reads_as_a_chunk_of_its_one_line() {
        // As the per-line layout wrote it.
        let item: Item = HashMap::from([
            ("pk".to_owned(), s("svc-1")),
            ("sk".to_owned(), s("01745008457153744602#3800")),
            ("dpk".to_owned(), s("svc-1#dep")),
            ("spk".to_owned(), s("svc-1#sess")),
            ("log".to_owned(), s("hello")),
            ("deploymentId".to_owned(), s("dep")),
            ("sessionId".to_owned(), s("sess")),
            (
                "expiresAt".to_owned(),
                AttributeValue::N((1_745_008_457 + 30 * 86_400).to_string()),
            ),
        ]);
        let chunk = serde_dynamo::from_item::<_, LogItem>(item)
            .unwrap()
            .into_chunk()
            .unwrap();
        assert_eq!(chunk, pack(&[line(Some("sess"))], 30).remove(0));
    }
}
