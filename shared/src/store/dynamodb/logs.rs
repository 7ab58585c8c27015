//! Log items in LogsTable, and the queries that read them at bounded cost.
//!
//! Item: `pk` = `{serviceId}` (the agent's service: a later agent of the same name has another),
//! `sk` = `{nanoseconds:020}#{eventId}` (time order, the event id breaks ties and makes
//! redelivery overwrite instead of duplicate), `dpk` = `{serviceId}#{deploymentId}` (index
//! `by-deployment`), `spk` = `{serviceId}#{sessionId}` (index `by-session`, sparse: only lines of
//! a session), `log`, `deploymentId`, `sessionId`, and `expiresAt` (TTL, Unix seconds).
//!
//! Every read is one key condition on the partition that fits the filters plus `sk BETWEEN`
//! the time range (clipped to the retention period), so a page reads about as many items as it
//! returns. `expiresAt > now` is a filter only for lines written under a shorter retention.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, Select, WriteRequest};
use serde::{Deserialize, Serialize};

use super::{DynamoStore, Item, built, classify, item_of, mapping, s};
use crate::error::StoreError;
use crate::logs::store::{LinesCounted, LinesRead};
use crate::logs::{LogFilter, LogLine, LogStore, Order, StoredLine};

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
    pub log: String,
    pub deployment_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub expires_at: i64,
}

impl LogItem {
    pub fn new(line: &LogLine, retention_days: u32) -> Self {
        let partition = line.service_id.clone();
        LogItem {
            dpk: format!("{partition}#{}", line.deployment_id),
            spk: line
                .session_id
                .as_ref()
                .map(|session| format!("{partition}#{session}")),
            pk: partition,
            sk: line.position(),
            log: line.text.clone(),
            deployment_id: line.deployment_id.clone(),
            session_id: line.session_id.clone(),
            expires_at: line.expires_at(retention_days),
        }
    }

    pub fn into_stored(self) -> StoredLine {
        StoredLine {
            position: self.sk,
            text: self.log,
            deployment_id: self.deployment_id,
            session_id: self.session_id,
        }
    }
}

/// The index, its partition attribute and value that serve a filter.
fn partition_for(filter: &LogFilter) -> (Option<&'static str>, &'static str, String) {
    let partition = filter.service_id.clone();
    match (&filter.session_id, &filter.deployment_id) {
        (Some(session), _) => (Some(SESSION_INDEX), "spk", format!("{partition}#{session}")),
        (None, Some(deployment)) => (
            Some(DEPLOYMENT_INDEX),
            "dpk",
            format!("{partition}#{deployment}"),
        ),
        (None, None) => (None, "pk", partition),
    }
}

impl DynamoStore {
    fn logs_query(
        &self,
        filter: &LogFilter,
        select_count: bool,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        let (index, key_attribute, key_value) = partition_for(filter);
        let mut filter_expression = "expiresAt > :now".to_owned();
        let mut query = self
            .client
            .query()
            .table_name(&self.logs_table)
            .set_index_name(index.map(str::to_owned))
            .key_condition_expression(format!(
                "{key_attribute} = :key AND sk BETWEEN :from AND :to"
            ))
            .expression_attribute_values(":key", s(key_value))
            .expression_attribute_values(":from", s(&filter.from_position))
            .expression_attribute_values(":to", s(&filter.to_position))
            .expression_attribute_values(":now", AttributeValue::N(filter.now.to_string()))
            .scan_index_forward(filter.order == Order::Asc);
        if let (Some(_), Some(deployment)) = (&filter.session_id, &filter.deployment_id) {
            // A session belongs to one deployment, so this filter drops (and wastes) nothing
            // in practice.
            filter_expression.push_str(" AND deploymentId = :deployment");
            query = query.expression_attribute_values(":deployment", s(deployment));
        }
        if select_count {
            query = query.select(Select::Count);
        }
        query.filter_expression(filter_expression)
    }

    /// The key to continue after `position` in the partition serving `filter`.
    fn start_after(filter: &LogFilter, position: &str) -> Item {
        let (_, key_attribute, key_value) = partition_for(filter);
        let mut key = HashMap::from([
            ("pk".to_owned(), s(&filter.service_id)),
            ("sk".to_owned(), s(position)),
        ]);
        key.insert(key_attribute.to_owned(), s(key_value));
        key
    }
}

fn sort_key_of(key: &Item) -> Option<String> {
    match key.get("sk") {
        Some(AttributeValue::S(sk)) => Some(sk.clone()),
        _ => None,
    }
}

impl DynamoStore {
    /// Stores lines as [`LogStore::put_lines`] does; the write units the table and its indexes
    /// consumed (what the lines cost: `make logs-cost` reads it, the ingest function logs it).
    pub async fn put_lines_measured(
        &self,
        lines: &[LogLine],
        retention_days: u32,
    ) -> Result<f64, StoreError> {
        let puts = lines
            .iter()
            .map(|line| {
                let put = PutRequest::builder()
                    .set_item(Some(item_of(&LogItem::new(line, retention_days))?))
                    .build()
                    .map_err(built)?;
                Ok(WriteRequest::builder().put_request(put).build())
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.batch_write(&self.logs_table, puts).await
    }
}

/// What a line takes in storage, as DynamoDB bills it: each copy (the table's, and each index's
/// that projects it) is its attributes' names and values plus 100 bytes of overhead. For `make
/// logs-cost`, hence test-support only.
#[cfg(any(test, feature = "test-support"))]
pub fn stored_bytes(line: &LogLine, retention_days: u32) -> usize {
    let item = LogItem::new(line, retention_days);
    let text = |s: &str| s.len();
    let attributes = [
        ("pk", text(&item.pk)),
        ("sk", text(&item.sk)),
        ("dpk", text(&item.dpk)),
        ("log", text(&item.log)),
        ("deploymentId", text(&item.deployment_id)),
        // A number: about one byte per two digits, plus one.
        (
            "expiresAt",
            item.expires_at.to_string().len().div_ceil(2) + 1,
        ),
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
    async fn put_lines(&self, lines: &[LogLine], retention_days: u32) -> Result<(), StoreError> {
        let write_units = self.put_lines_measured(lines, retention_days).await?;
        tracing::info!(lines = lines.len(), write_units, "lines written");
        Ok(())
    }

    async fn read_lines(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        max_reads: usize,
    ) -> Result<LinesRead, StoreError> {
        let output = self.one_logs_query(filter, after, max_reads, false).await?;
        let lines = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| {
                serde_dynamo::from_item::<_, LogItem>(item)
                    .map(LogItem::into_stored)
                    .map_err(mapping)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LinesRead {
            lines,
            items_read: usize::try_from(output.scanned_count).unwrap_or(0),
            resume_after: output.last_evaluated_key.as_ref().and_then(sort_key_of),
        })
    }

    async fn count_lines(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        max_reads: usize,
    ) -> Result<LinesCounted, StoreError> {
        let output = self.one_logs_query(filter, after, max_reads, true).await?;
        Ok(LinesCounted {
            count: usize::try_from(output.count).unwrap_or(0),
            items_read: usize::try_from(output.scanned_count).unwrap_or(0),
            resume_after: output.last_evaluated_key.as_ref().and_then(sort_key_of),
        })
    }
}

impl DynamoStore {
    /// One Query of the partition serving `filter`, after `after`, evaluating at most
    /// `max_reads` items; counting them only when `select_count`.
    async fn one_logs_query(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        max_reads: usize,
        select_count: bool,
    ) -> Result<QueryOutput, StoreError> {
        self.logs_query(filter, select_count)
            .limit(i32::try_from(max_reads.max(1)).unwrap_or(i32::MAX))
            .set_exclusive_start_key(
                after.map(|position| DynamoStore::start_after(filter, position)),
            )
            .send()
            .await
            .map_err(classify)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_items_round_trip_with_their_index_keys() {
        let line = LogLine {
            service_id: "svc-1".into(),
            deployment_id: "dep".into(),
            session_id: Some("sess".into()),
            event_id: "3800".into(),
            timestamp_nanos: 1_745_008_457_153_744_602,
            text: "hello".into(),
        };
        let item: Item = serde_dynamo::to_item(LogItem::new(&line, 30)).unwrap();
        assert_eq!(item["pk"], s("svc-1"));
        assert_eq!(item["sk"], s("01745008457153744602#3800"));
        assert_eq!(item["dpk"], s("svc-1#dep"));
        assert_eq!(item["spk"], s("svc-1#sess"));
        assert_eq!(
            item["expiresAt"],
            AttributeValue::N((1_745_008_457 + 30 * 86_400).to_string())
        );
        let back = serde_dynamo::from_item::<_, LogItem>(item)
            .unwrap()
            .into_stored();
        assert_eq!(back.text, "hello");
        assert_eq!(back.session_id.as_deref(), Some("sess"));

        let outside = LogLine {
            session_id: None,
            ..line
        };
        let item: Item = serde_dynamo::to_item(LogItem::new(&outside, 30)).unwrap();
        assert!(
            !item.contains_key("spk"),
            "lines outside a session stay out of by-session"
        );
    }
}
