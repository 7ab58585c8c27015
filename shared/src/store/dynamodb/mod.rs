//! The DynamoDB adapter of every port: one client, the table names, and the requests they share
//! (conditional transactions, batch writes, error classification). By what it stores:
//! [`items`] (every item layout and its mapping), [`agents`] (`AgentStore`, its history's pages
//! in `deployments`), [`accounts`]
//! (`KeyStore` and the operator's accounts and keys), [`logs`] (`LogStore`), [`first_slice`]
//! (upgrading the first slice's items, for the operator).

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, Put, ReturnConsumedCapacity, TransactWriteItem, WriteRequest,
};
use serde::Serialize;

use crate::config::{Config, TableNames};
use crate::error::{BoxError, StoreError};

pub mod accounts;
mod agent_transaction;
pub mod agents;
mod deployments;
mod every_agent;
pub mod first_slice;
pub mod items;
pub mod logs;
pub mod secret_items;
pub mod secrets;
pub mod session_items;
mod sessions;

type Item = HashMap<String, AttributeValue>;

/// How many times a transaction that lost a race with another transaction on the same items
/// (`TransactionConflict`, which the SDK does not retry) is tried again before a 503.
const TRANSACTION_CONFLICT_ATTEMPTS: usize = 4;
/// A transaction's cancellation reasons that say an item's partition was throttled (the SDK
/// retries a throttled transaction only when the whole request is).
const CANCELLED_THROTTLED: [&str; 2] = ["ThrottlingError", "ProvisionedThroughputExceeded"];
/// BatchWriteItem takes at most 25 requests.
const BATCH_SIZE: usize = 25;
/// BatchGetItem takes at most 100 keys.
const BATCH_GET_SIZE: usize = 100;
/// Rounds of retrying unprocessed batch items (with backoff) before giving up.
const UNPROCESSED_ROUNDS: u32 = 6;

/// Error codes of a store that is throttling, or of a write that lost to a transaction in flight
/// on its item (`TransactionConflictException`, which the SDK does not retry): the caller may
/// try again shortly.
const THROTTLING_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "LimitExceededException",
    "TransactionConflictException",
];

/// Error codes of a service failing on its side, whatever HTTP status carried them (a modeled
/// error is read by its code; DynamoDB Local answers `InternalFailure`).
const SERVER_ERROR_CODES: &[&str] = &[
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
    "ServiceUnavailableException",
];

/// Sorts an SDK failure into the store's error kinds: throttled, timed out (or unreachable), or
/// failed on the service's side (a 5xx answer) are all the store being unavailable for now;
/// anything else (a request it refused, an answer we could not read) is a bug. The SDK's own
/// text stays in `source`, for our logs only.
pub(crate) fn classify<E>(error: SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let code = error.code();
    let throttled = code.is_some_and(|code| THROTTLING_CODES.contains(&code));
    let server_error = code.is_some_and(|code| SERVER_ERROR_CODES.contains(&code))
        || error
            .raw_response()
            .is_some_and(|response| response.status().is_server_error());
    let unreachable = matches!(
        error,
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_)
    );
    let source: BoxError = Box::new(error);
    if throttled {
        StoreError::Throttled(source)
    } else if unreachable {
        StoreError::Timeout(source)
    } else if server_error {
        StoreError::Unavailable(source)
    } else {
        StoreError::Unexpected(source)
    }
}

fn mapping(error: serde_dynamo::Error) -> StoreError {
    StoreError::Unexpected(Box::new(error))
}

fn built(error: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Unexpected(error.into())
}

/// Write units a write consumed, as DynamoDB reports them (`ReturnConsumedCapacity`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteUnits {
    pub table: f64,
    /// By index name.
    pub indexes: std::collections::BTreeMap<String, f64>,
}

impl WriteUnits {
    pub fn total(&self) -> f64 {
        self.table + self.indexes.values().sum::<f64>()
    }

    fn add(&mut self, consumed: &aws_sdk_dynamodb::types::ConsumedCapacity) {
        match (&consumed.table, &consumed.global_secondary_indexes) {
            (Some(table), indexes) => {
                self.table += table.capacity_units.unwrap_or(0.0);
                for (name, index) in indexes.iter().flatten() {
                    *self.indexes.entry(name.clone()).or_default() +=
                        index.capacity_units.unwrap_or(0.0);
                }
            }
            // Without a breakdown: all of it the table's.
            (None, _) => self.table += consumed.capacity_units.unwrap_or(0.0),
        }
    }
}

/// Before round `round` (from 0) of a batch request whose `left` requests the store has not
/// processed yet: a jitter-free exponential backoff after the first (the SDK already retried
/// throttling), and an error once [`UNPROCESSED_ROUNDS`] have passed.
async fn before_round(round: &mut u32, left: usize) -> Result<(), StoreError> {
    if *round > 0 {
        tokio::time::sleep(Duration::from_millis(25 << (*round).min(6))).await;
    }
    if *round == UNPROCESSED_ROUNDS {
        return Err(StoreError::Throttled(
            format!("{left} requests still unprocessed after retries").into(),
        ));
    }
    *round += 1;
    Ok(())
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn key(pk: String, sk: String) -> Item {
    HashMap::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

/// What a GetItem found, read as `T`.
fn item_as<T: serde::de::DeserializeOwned>(
    output: aws_sdk_dynamodb::operation::get_item::GetItemOutput,
) -> Result<Option<T>, StoreError> {
    output
        .item
        .map(|item| serde_dynamo::from_item(item).map_err(mapping))
        .transpose()
}

fn item_of<T: Serialize>(value: &T) -> Result<Item, StoreError> {
    serde_dynamo::to_item(value).map_err(mapping)
}

/// An UpdateItem's expression that makes an item hold what `item` holds, except its key and the
/// attributes others own (`kept`): each attribute of `item` set, each of `optional` it lacks
/// removed. Where a Put would replace the whole item, this leaves `kept` as stored: a set's
/// `usedBy` (agents own it), an agent's `activeSessions` (its sessions own it).
struct Replacement {
    expression: String,
    names: HashMap<String, String>,
    values: Item,
}

impl Replacement {
    fn of(mut item: Item, kept: &[&str], optional: &[&str]) -> Self {
        for attribute in ["pk", "sk"].iter().chain(kept) {
            item.remove(*attribute);
        }
        let absent: Vec<&str> = optional
            .iter()
            .copied()
            .filter(|name| !item.contains_key(*name))
            .collect();
        let mut names = HashMap::new();
        let mut values = HashMap::new();
        let mut assignments = Vec::with_capacity(item.len());
        for (at, (name, value)) in item.into_iter().enumerate() {
            assignments.push(format!("#a{at} = :a{at}"));
            names.insert(format!("#a{at}"), name);
            values.insert(format!(":a{at}"), value);
        }
        let mut expression = format!("SET {}", assignments.join(", "));
        let removed: Vec<String> = absent
            .into_iter()
            .enumerate()
            .map(|(at, name)| {
                names.insert(format!("#r{at}"), name.to_owned());
                format!("#r{at}")
            })
            .collect();
        if !removed.is_empty() {
            expression.push_str(&format!(" REMOVE {}", removed.join(", ")));
        }
        Replacement {
            expression,
            names,
            values,
        }
    }
}

/// A put of a new item: it fails its condition when the key is taken.
fn put_new<T: Serialize>(table: &str, item: &T) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item_of(item)?))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .map_err(built)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// Why a transaction was cancelled, item by item: the code (`None` where that item was fine) and
/// the item found, for a Put that asked for it with `ReturnValuesOnConditionCheckFailure`.
fn cancellation_reasons<R>(
    error: &SdkError<TransactWriteItemsError, R>,
) -> Option<Vec<(Option<String>, Option<Item>)>> {
    match error.as_service_error()? {
        TransactWriteItemsError::TransactionCanceledException(cancelled) => Some(
            cancelled
                .cancellation_reasons()
                .iter()
                .map(|reason| {
                    let code = reason
                        .code()
                        .filter(|code| *code != "None")
                        .map(str::to_owned);
                    (code, reason.item().cloned())
                })
                .collect(),
        ),
        _ => None,
    }
}

/// Outcome of a transaction of conditional writes.
enum Transaction {
    Written,
    /// The condition of these items (by position) failed; `found` holds, by position, the item
    /// a Put that asked for it found in its way.
    ConditionFailed {
        failed: Vec<usize>,
        found: Vec<Option<Item>>,
    },
}

/// The adapter: one client and the table names, built once at cold start. A function is given
/// only the tables it uses; a call on another fails (DynamoDB rejects the empty name).
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    agents_table: String,
    accounts_table: String,
    logs_table: String,
}

impl DynamoStore {
    /// A function's configuration, read once at cold start with the tables it uses required, and
    /// the store on its one client.
    pub fn from_env(tables: &[&'static str]) -> Result<(DynamoStore, Config), BoxError> {
        let config = Config::from_env(tables)?;
        let client = crate::aws::dynamodb_client(config.dynamodb_endpoint.as_deref())?;
        Ok((DynamoStore::new(client, config.tables.clone()), config))
    }

    pub fn new(client: Client, tables: TableNames) -> Self {
        DynamoStore {
            client,
            agents_table: tables.agents,
            accounts_table: tables.accounts,
            logs_table: tables.logs,
        }
    }

    /// A GetItem of the item at `pk`/`sk` of `table`; `consistent` for a strongly consistent
    /// read (what a read-modify-write or an operator's check needs). Sent by the caller and read
    /// by `item_as`: a helper that awaited it itself would nest one more future in every
    /// handler's, past the compiler's default type depth in deployment-status.
    fn get_item(
        &self,
        table: &str,
        pk: String,
        sk: String,
        consistent: bool,
    ) -> aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder {
        self.client
            .get_item()
            .table_name(table)
            .set_key(Some(key(pk, sk)))
            .consistent_read(consistent)
    }

    /// Runs a transaction of conditional writes, trying again when it lost a race with another
    /// transaction (the SDK does not retry those); still losing after a few tries is a 503.
    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Transaction, StoreError> {
        self.transact_racing(items).await?.ok_or_else(|| {
            StoreError::Throttled("transactions on the same items kept conflicting".into())
        })
    }

    /// [`Self::transact`] for a write whose caller reads again and retries when it loses a race
    /// (the agent's read-modify-write loop): `None` when other transactions on the same items
    /// kept it from running, which that loop treats as any other lost race.
    async fn transact_racing(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<Option<Transaction>, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let error = match result {
                Ok(_) => return Ok(Some(Transaction::Written)),
                Err(error) => error,
            };
            let Some(reasons) = cancellation_reasons(&error) else {
                return Err(classify(error));
            };
            let failed: Vec<usize> = reasons
                .iter()
                .enumerate()
                .filter(|(_, (code, _))| code.as_deref() == Some("ConditionalCheckFailed"))
                .map(|(index, _)| index)
                .collect();
            if !failed.is_empty() {
                let found = reasons.into_iter().map(|(_, item)| item).collect();
                return Ok(Some(Transaction::ConditionFailed { failed, found }));
            }
            let any = |wanted: &[&str]| {
                reasons
                    .iter()
                    .any(|(code, _)| code.as_deref().is_some_and(|code| wanted.contains(&code)))
            };
            if any(&CANCELLED_THROTTLED) {
                return Err(StoreError::Throttled(Box::new(error)));
            }
            if !any(&["TransactionConflict"]) {
                return Err(classify(error));
            }
            if attempt == TRANSACTION_CONFLICT_ATTEMPTS {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(20 * attempt as u64)).await;
        }
    }

    /// Writes the requests 25 at a time, retrying unprocessed items; the write units the table
    /// and each of its indexes consumed, as DynamoDB reports them.
    async fn batch_write(
        &self,
        table: &str,
        requests: Vec<WriteRequest>,
    ) -> Result<WriteUnits, StoreError> {
        let mut units = WriteUnits::default();
        let mut requests = requests.into_iter().peekable();
        while requests.peek().is_some() {
            let mut batch: Vec<WriteRequest> = requests.by_ref().take(BATCH_SIZE).collect();
            let mut round = 0;
            while !batch.is_empty() {
                before_round(&mut round, batch.len()).await?;
                let output = self
                    .client
                    .batch_write_item()
                    .request_items(table, batch)
                    .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
                    .send()
                    .await
                    .map_err(classify)?;
                for consumed in output.consumed_capacity.iter().flatten() {
                    units.add(consumed);
                }
                batch = output
                    .unprocessed_items
                    .and_then(|mut tables| tables.remove(table))
                    .unwrap_or_default();
            }
        }
        Ok(units)
    }

    /// The items of `keys` (any number, 100 a request), retrying unprocessed keys; in no order,
    /// a key with no item left out.
    async fn batch_get(
        &self,
        table: &str,
        keys: Vec<Item>,
        consistent: bool,
    ) -> Result<Vec<Item>, StoreError> {
        let mut found = Vec::with_capacity(keys.len());
        let mut keys = keys.into_iter().peekable();
        while keys.peek().is_some() {
            let mut batch: Vec<Item> = keys.by_ref().take(BATCH_GET_SIZE).collect();
            let mut round = 0;
            while !batch.is_empty() {
                before_round(&mut round, batch.len()).await?;
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(batch))
                    .consistent_read(consistent)
                    .build()
                    .map_err(built)?;
                let output = self
                    .client
                    .batch_get_item()
                    .request_items(table, request)
                    .send()
                    .await
                    .map_err(classify)?;
                found.extend(
                    output
                        .responses
                        .unwrap_or_default()
                        .remove(table)
                        .unwrap_or_default(),
                );
                batch = output
                    .unprocessed_keys
                    .and_then(|mut tables| tables.remove(table))
                    .map(|left| left.keys)
                    .unwrap_or_default();
            }
        }
        Ok(found)
    }

    /// Every item of a namespace in the agents table (tests and operators: it reads the whole
    /// partition).
    #[cfg(any(test, feature = "test-support"))]
    pub async fn count_namespace_items(&self, namespace: &str) -> Result<usize, StoreError> {
        let mut count = 0;
        let mut pages = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(items::namespace_pk(namespace)))
            .select(aws_sdk_dynamodb::types::Select::Count)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            count += page.map_err(classify)?.count as usize;
        }
        Ok(count)
    }
}
