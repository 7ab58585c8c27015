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

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, Select, WriteRequest};
use serde::{Deserialize, Serialize};

use super::{DynamoStore, Item, built, classify, item_of, mapping, s};
use crate::error::StoreError;
use crate::logs::{
    LogFilter, LogLine, LogStore, Order, Scan, ScanLimits, StoredLine, matches_query,
};

pub const DEPLOYMENT_INDEX: &str = "by-deployment";
pub const SESSION_INDEX: &str = "by-session";
/// Items one Query of a text search asks for (it filters in the function).
const TEXT_SCAN_PAGE: usize = 1_000;

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

impl LogStore for DynamoStore {
    #[tracing::instrument(skip_all, fields(lines = lines.len()))]
    async fn put_lines(&self, lines: &[LogLine], retention_days: u32) -> Result<(), StoreError> {
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

    async fn scan(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        limits: &ScanLimits,
    ) -> Result<Scan, StoreError> {
        let mut scan = Scan::default();
        let mut start = after.map(|position| DynamoStore::start_after(filter, position));
        loop {
            let budget_left = limits.read_budget.saturating_sub(scan.items_read);
            let matches_left = limits.stop_after_matches.saturating_sub(scan.matches);
            // Without a text query every item read matches (the filter expression drops only
            // expired lines), so ask for exactly what is still needed.
            let want = match filter.query {
                Some(_) => budget_left.min(TEXT_SCAN_PAGE),
                None => budget_left.min(matches_left),
            };
            if want == 0 {
                return Ok(scan);
            }
            let output = self
                .logs_query(filter, false)
                .limit(want.min(i32::MAX as usize) as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(classify)?;
            scan.items_read += output.scanned_count.max(0) as usize;
            for item in output.items.unwrap_or_default() {
                let line = serde_dynamo::from_item::<_, LogItem>(item)
                    .map_err(mapping)?
                    .into_stored();
                if filter
                    .query
                    .as_deref()
                    .is_some_and(|query| !matches_query(&line.text, query))
                {
                    scan.last_read = Some(line.position);
                    continue;
                }
                let position = line.position.clone();
                if limits.keep.contains(&scan.matches) {
                    scan.kept.push(line);
                }
                scan.matches += 1;
                scan.last_read = Some(position);
                if scan.matches >= limits.stop_after_matches {
                    return Ok(scan);
                }
            }
            match output.last_evaluated_key {
                None => {
                    scan.exhausted = true;
                    return Ok(scan);
                }
                Some(key) => {
                    scan.last_read = sort_key_of(&key).or(scan.last_read);
                    start = Some(key);
                }
            }
        }
    }

    async fn count(
        &self,
        filter: &LogFilter,
        after: Option<&str>,
        max_reads: usize,
    ) -> Result<(usize, bool, usize), StoreError> {
        let (mut count, mut read) = (0usize, 0usize);
        let mut start = after.map(|position| DynamoStore::start_after(filter, position));
        loop {
            let want = max_reads.saturating_sub(read);
            if want == 0 {
                return Ok((count, false, read));
            }
            let output = self
                .logs_query(filter, true)
                .limit(want.min(i32::MAX as usize) as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(classify)?;
            count += output.count.max(0) as usize;
            read += output.scanned_count.max(0) as usize;
            match output.last_evaluated_key {
                None => return Ok((count, true, read)),
                Some(key) => start = Some(key),
            }
        }
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
