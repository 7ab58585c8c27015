//! The DynamoDB adapter: every item layout and every mapping between items and domain types.
//!
//! AgentsTable (pk, sk):
//! - agent:       `NS#{namespace}` / `AGENT#{name}`; the item's key is the name, so writing it
//!   with `attribute_not_exists` is also what makes names unique within an account;
//! - deployment:  `NS#{namespace}` / `DEPLOYMENT#{name}#{deploymentId}`, holding the manifest;
//! - idempotency: `NS#{namespace}` / `IDEMPOTENCY#{sha256 hex of the key}`, the first answer to
//!   an `Idempotency-Key`, expiring (TTL `expiresAt`) 24 hours after it was written.
//!
//! AccountsTable (pk, sk):
//! - account:         `ACCOUNT#{accountId}` / `ACCOUNT`
//! - namespace claim: `NAMESPACE#{namespace}` / `NAMESPACE` (namespaces are unique)
//! - key:             `KEY#{sha256 hex}` / `KEY` (what the key check reads: one GetItem)
//! - account's key:   `ACCOUNT#{accountId}` / `KEY#{keyId}` (to list and revoke by key id)

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};

use super::{AgentStore, BoxError, CreateOutcome, KeyStore, StoreError};
use crate::agent::{Agent, Deployment, NoiseVivaStatus};
use crate::auth::{ApiKey, KeyHash, KeyRecord, Principal};
use crate::config::TableNames;
use crate::idempotency::IdempotencyRecord;
use crate::manifest::{Manifest, Replicas};
use crate::timestamp::now_rfc3339_millis;

pub mod logs;

type Item = HashMap<String, AttributeValue>;

/// How many times a transaction that lost a race with another transaction on the same items
/// (`TransactionConflict`, which the SDK does not retry) is tried again before a 503.
const TRANSACTION_CONFLICT_ATTEMPTS: usize = 4;

/// Sorts an SDK failure into the store's error kinds. The SDK's own text stays in `source`,
/// for our logs only.
pub(crate) fn classify<E, R>(error: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let throttled = matches!(
        error.code(),
        Some(
            "ProvisionedThroughputExceededException"
                | "ThrottlingException"
                | "RequestLimitExceeded"
                | "LimitExceededException"
        )
    );
    let source: BoxError = Box::new(error);
    match source.downcast_ref::<SdkError<E, R>>() {
        _ if throttled => StoreError::Throttled(source),
        Some(SdkError::TimeoutError(_) | SdkError::DispatchFailure(_)) => {
            StoreError::Timeout(source)
        }
        _ => StoreError::Unexpected(source),
    }
}

fn mapping(error: serde_dynamo::Error) -> StoreError {
    StoreError::Unexpected(Box::new(error))
}

fn key(pk: String, sk: String) -> Item {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk)),
        ("sk".to_owned(), AttributeValue::S(sk)),
    ])
}

fn agent_key(namespace: &str, name: &str) -> (String, String) {
    (format!("NS#{namespace}"), format!("AGENT#{name}"))
}

/// The agent item: the agent object without its deployment, plus its owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentItem {
    pub pk: String,
    pub sk: String,
    pub account_id: String,
    pub namespace: String,
    pub name: String,
    pub service_id: String,
    pub ready: bool,
    pub created_at: String,
    pub updated_at: String,
    pub active_deployment_id: String,
    pub active_deployment_ready: bool,
    pub auto_scaling: Replicas,
    pub active_session_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_viva: Option<NoiseVivaStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentItem {
    pub pk: String,
    pub sk: String,
    pub agent_name: String,
    pub id: String,
    pub service_id: String,
    pub manifest: Manifest,
    pub created_at: String,
    pub updated_at: String,
}

/// The first answer to an `Idempotency-Key` of an account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotencyItem {
    pub pk: String,
    pub sk: String,
    pub fingerprint: String,
    pub status: u16,
    pub body: String,
    pub created_at: String,
    /// Unix seconds; the table's TTL attribute.
    pub expires_at: i64,
}

impl IdempotencyItem {
    pub fn new(namespace: &str, record: &IdempotencyRecord) -> Self {
        IdempotencyItem {
            pk: format!("NS#{namespace}"),
            sk: format!("IDEMPOTENCY#{}", record.key_digest),
            fingerprint: record.fingerprint.clone(),
            status: record.status,
            body: record.body.clone(),
            created_at: record.created_at.clone(),
            expires_at: record.expires_at,
        }
    }
}

impl From<IdempotencyItem> for IdempotencyRecord {
    fn from(item: IdempotencyItem) -> Self {
        IdempotencyRecord {
            key_digest: item
                .sk
                .strip_prefix("IDEMPOTENCY#")
                .unwrap_or(&item.sk)
                .to_owned(),
            fingerprint: item.fingerprint,
            status: item.status,
            body: item.body,
            created_at: item.created_at,
            expires_at: item.expires_at,
        }
    }
}

impl AgentItem {
    pub fn new(owner: &Principal, agent: &Agent, service_id: &str) -> Self {
        let (pk, sk) = agent_key(&owner.namespace, &agent.name);
        AgentItem {
            pk,
            sk,
            account_id: owner.account_id.clone(),
            namespace: owner.namespace.clone(),
            name: agent.name.clone(),
            service_id: service_id.to_owned(),
            ready: agent.ready,
            created_at: agent.created_at.clone(),
            updated_at: agent.updated_at.clone(),
            active_deployment_id: agent.active_deployment_id.clone(),
            active_deployment_ready: agent.active_deployment_ready,
            auto_scaling: agent.auto_scaling,
            active_session_count: agent.active_session_count,
            agent_profile: agent.agent_profile.clone(),
            noise_viva: agent.noise_viva.clone(),
        }
    }

    pub fn into_agent(self, deployment: Option<Deployment>) -> Agent {
        Agent {
            name: self.name,
            ready: self.ready,
            created_at: self.created_at,
            updated_at: self.updated_at,
            active_deployment_id: self.active_deployment_id,
            active_deployment_ready: self.active_deployment_ready,
            auto_scaling: self.auto_scaling,
            active_session_count: self.active_session_count,
            deployment,
            agent_profile: self.agent_profile,
            noise_viva: self.noise_viva,
        }
    }
}

impl DeploymentItem {
    pub fn new(owner: &Principal, agent_name: &str, deployment: &Deployment) -> Self {
        DeploymentItem {
            pk: format!("NS#{}", owner.namespace),
            sk: format!("DEPLOYMENT#{agent_name}#{}", deployment.id),
            agent_name: agent_name.to_owned(),
            id: deployment.id.clone(),
            service_id: deployment.service_id.clone(),
            manifest: deployment.manifest.clone(),
            created_at: deployment.created_at.clone(),
            updated_at: deployment.updated_at.clone(),
        }
    }

    pub fn into_deployment(self) -> Deployment {
        Deployment {
            id: self.id,
            manifest: self.manifest,
            service_id: self.service_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountItem {
    pub pk: String,
    pub sk: String,
    pub account_id: String,
    pub namespace: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NamespaceItem {
    pk: String,
    sk: String,
    account_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyItem {
    pub pk: String,
    pub sk: String,
    pub key_id: String,
    pub account_id: String,
    pub namespace: String,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

impl From<KeyItem> for KeyRecord {
    fn from(item: KeyItem) -> Self {
        KeyRecord {
            key_id: item.key_id,
            account_id: item.account_id,
            namespace: item.namespace,
            created_at: item.created_at,
            revoked_at: item.revoked_at,
        }
    }
}

/// The account's handle on one of its keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountKeyItem {
    pub pk: String,
    pub sk: String,
    pub key_id: String,
    pub key_hash: String,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

fn account_pk(account_id: &str) -> String {
    format!("ACCOUNT#{account_id}")
}

fn key_pk(hash: &KeyHash) -> String {
    format!("KEY#{}", hash.as_str())
}

fn put<T: Serialize>(table: &str, item: &T) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(serde_dynamo::to_item(item).map_err(mapping)?))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .map_err(|e| StoreError::Unexpected(e.into()))?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// The put of an idempotency record: it may replace a dead record of the same key that TTL has
/// not deleted yet, never a live one; when it may not, the live record comes back in the
/// cancellation reason (no second read).
fn put_idempotency(
    table: &str,
    namespace: &str,
    record: &IdempotencyRecord,
) -> Result<TransactWriteItem, StoreError> {
    let item = IdempotencyItem::new(namespace, record);
    let now = record.written_at();
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(serde_dynamo::to_item(&item).map_err(mapping)?))
        .condition_expression("attribute_not_exists(pk) OR #expiresAt <= :now")
        .expression_attribute_names("#expiresAt", "expiresAt")
        .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(|e| StoreError::Unexpected(e.into()))?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// Why a transaction was cancelled, item by item: the code (`None` where that item was fine) and
/// the item found, for a Put that asked for it with `ReturnValuesOnConditionCheckFailure`.
fn cancellation_reasons<R>(
    error: &SdkError<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError, R>,
) -> Option<Vec<(Option<String>, Option<Item>)>> {
    match error.as_service_error()? {
        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(
            cancelled,
        ) => Some(
            cancelled
                .cancellation_reasons()
                .iter()
                .map(|reason| {
                    let code = reason.code().filter(|code| *code != "None").map(str::to_owned);
                    (code, reason.item().cloned())
                })
                .collect(),
        ),
        _ => None,
    }
}

/// Outcome of a transaction whose items are all conditional puts.
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

/// An account as the operator command reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub account_id: String,
    pub namespace: String,
    pub created_at: String,
}

/// A key of an account as listed by the operator command (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySummary {
    pub key_id: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Invalid(String),
    #[error("no account {0}")]
    NoAccount(String),
    #[error("no such key")]
    NoKey,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DynamoStore {
    pub fn new(client: Client, tables: TableNames) -> Self {
        DynamoStore {
            client,
            agents_table: tables.agents,
            accounts_table: tables.accounts,
            logs_table: tables.logs,
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Runs a transaction of conditional puts, trying again when it lost a race with another
    /// transaction (the SDK does not retry those).
    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Transaction, StoreError> {
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
                Ok(_) => return Ok(Transaction::Written),
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
                return Ok(Transaction::ConditionFailed { failed, found });
            }
            let conflict = reasons
                .iter()
                .any(|(code, _)| code.as_deref() == Some("TransactionConflict"));
            if conflict && attempt < TRANSACTION_CONFLICT_ATTEMPTS {
                tokio::time::sleep(std::time::Duration::from_millis(20 * attempt as u64)).await;
                continue;
            }
            return Err(if conflict {
                StoreError::Throttled(Box::new(error))
            } else {
                classify(error)
            });
        }
    }

    /// The agent and its active deployment, if the namespace has an agent of that name.
    pub async fn get_agent(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Agent>, StoreError> {
        let (pk, sk) = agent_key(namespace, name);
        let output = self
            .client
            .get_item()
            .table_name(&self.agents_table)
            .set_key(Some(key(pk.clone(), sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        let Some(item) = output.item else {
            return Ok(None);
        };
        let agent: AgentItem = serde_dynamo::from_item(item).map_err(mapping)?;
        let deployment_sk = format!("DEPLOYMENT#{name}#{}", agent.active_deployment_id);
        let deployment = self
            .client
            .get_item()
            .table_name(&self.agents_table)
            .set_key(Some(key(pk, deployment_sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?
            .item
            .map(|item| {
                serde_dynamo::from_item::<_, DeploymentItem>(item)
                    .map(DeploymentItem::into_deployment)
            })
            .transpose()
            .map_err(mapping)?;
        Ok(Some(agent.into_agent(deployment)))
    }

    /// Every item of a namespace in the agents table (for tests and operators: it reads the
    /// whole partition).
    pub async fn count_namespace_items(&self, namespace: &str) -> Result<usize, StoreError> {
        let mut count = 0;
        let mut pages = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(format!("NS#{namespace}")))
            .select(aws_sdk_dynamodb::types::Select::Count)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            count += page.map_err(classify)?.count as usize;
        }
        Ok(count)
    }

    pub async fn get_account(&self, account_id: &str) -> Result<Option<Account>, StoreError> {
        let item = self
            .client
            .get_item()
            .table_name(&self.accounts_table)
            .set_key(Some(key(account_pk(account_id), "ACCOUNT".to_owned())))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?
            .item;
        item.map(|item| {
            serde_dynamo::from_item::<_, AccountItem>(item).map(|account| Account {
                account_id: account.account_id,
                namespace: account.namespace,
                created_at: account.created_at,
            })
        })
        .transpose()
        .map_err(mapping)
    }

    /// The account, created with a new unique namespace when it does not exist yet.
    pub async fn ensure_account(&self, account_id: &str) -> Result<Account, AdminError> {
        self.ensure_account_in(account_id, None).await
    }

    /// As [`ensure_account`](Self::ensure_account), with the namespace chosen by the operator
    /// (it must be free); an existing account keeps its own namespace.
    pub async fn ensure_account_in(
        &self,
        account_id: &str,
        namespace: Option<&str>,
    ) -> Result<Account, AdminError> {
        for (what, value) in [("account id", Some(account_id)), ("namespace", namespace)] {
            if value.is_some_and(|value| !crate::validation::is_dns_label(value)) {
                return Err(AdminError::Invalid(format!(
                    "{what} {}",
                    crate::validation::DNS_LABEL_RULE
                )));
            }
        }
        for _ in 0..8 {
            if let Some(account) = self.get_account(account_id).await? {
                return Ok(account);
            }
            let chosen = namespace.map_or_else(crate::namespace::generate, str::to_owned);
            let now = now_rfc3339_millis();
            let account = AccountItem {
                pk: account_pk(account_id),
                sk: "ACCOUNT".to_owned(),
                account_id: account_id.to_owned(),
                namespace: chosen.clone(),
                created_at: now.clone(),
            };
            let claim = NamespaceItem {
                pk: format!("NAMESPACE#{chosen}"),
                sk: "NAMESPACE".to_owned(),
                account_id: account_id.to_owned(),
            };
            let items = vec![
                put(&self.accounts_table, &account)?,
                put(&self.accounts_table, &claim)?,
            ];
            match self.transact(items).await? {
                Transaction::Written => {
                    return Ok(Account {
                        account_id: account_id.to_owned(),
                        namespace: chosen,
                        created_at: now,
                    });
                }
                // The account appeared meanwhile: read it on the next turn.
                Transaction::ConditionFailed { failed, .. } if failed == [0] => continue,
                Transaction::ConditionFailed { .. } if namespace.is_some() => {
                    return Err(AdminError::Invalid(format!(
                        "namespace {chosen} belongs to another account"
                    )));
                }
                // The namespace drawn was taken: draw another.
                Transaction::ConditionFailed { .. } => continue,
            }
        }
        Err(AdminError::Store(StoreError::Unexpected(
            "could not claim a unique namespace".into(),
        )))
    }

    /// Issues a new key for an existing account; the key is returned once and never stored.
    pub async fn issue_key(&self, account_id: &str) -> Result<(ApiKey, KeyRecord), AdminError> {
        let account = self
            .get_account(account_id)
            .await?
            .ok_or_else(|| AdminError::NoAccount(account_id.to_owned()))?;
        let key = ApiKey::generate();
        let hash = key.hash();
        let now = now_rfc3339_millis();
        let record = KeyItem {
            pk: key_pk(&hash),
            sk: "KEY".to_owned(),
            key_id: hash.key_id().to_owned(),
            account_id: account.account_id.clone(),
            namespace: account.namespace.clone(),
            created_at: now.clone(),
            revoked_at: None,
        };
        let handle = AccountKeyItem {
            pk: account_pk(account_id),
            sk: format!("KEY#{}", hash.key_id()),
            key_id: hash.key_id().to_owned(),
            key_hash: hash.as_str().to_owned(),
            created_at: now,
            revoked_at: None,
        };
        let items = vec![
            put(&self.accounts_table, &record)?,
            put(&self.accounts_table, &handle)?,
        ];
        match self.transact(items).await? {
            Transaction::Written => Ok((key, record.into())),
            Transaction::ConditionFailed { .. } => Err(AdminError::Store(StoreError::Unexpected(
                "a freshly generated key collided with a stored one".into(),
            ))),
        }
    }

    pub async fn list_keys(&self, account_id: &str) -> Result<Vec<KeySummary>, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.accounts_table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :keys)")
            .expression_attribute_values(":pk", AttributeValue::S(account_pk(account_id)))
            .expression_attribute_values(":keys", AttributeValue::S("KEY#".to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        output
            .items()
            .iter()
            .map(|item| {
                serde_dynamo::from_item::<_, AccountKeyItem>(item.clone()).map(|key| KeySummary {
                    key_id: key.key_id,
                    created_at: key.created_at,
                    revoked_at: key.revoked_at,
                })
            })
            .collect::<Result<_, _>>()
            .map_err(mapping)
    }

    /// Revokes a key of `account_id` by its key id. Revoking twice is harmless.
    pub async fn revoke_key(&self, account_id: &str, key_id: &str) -> Result<(), AdminError> {
        let handle = self
            .client
            .get_item()
            .table_name(&self.accounts_table)
            .set_key(Some(key(account_pk(account_id), format!("KEY#{key_id}"))))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?
            .item
            .ok_or(AdminError::NoKey)?;
        let handle: AccountKeyItem = serde_dynamo::from_item(handle).map_err(mapping)?;
        let now = AttributeValue::S(now_rfc3339_millis());
        let revoke = |pk: String, sk: String| -> Result<TransactWriteItem, StoreError> {
            let update = Update::builder()
                .table_name(&self.accounts_table)
                .set_key(Some(key(pk, sk)))
                .update_expression("SET revokedAt = if_not_exists(revokedAt, :now)")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_values(":now", now.clone())
                .build()
                .map_err(|e| StoreError::Unexpected(e.into()))?;
            Ok(TransactWriteItem::builder().update(update).build())
        };
        let hash = KeyHash::from_hex(handle.key_hash);
        let items = vec![
            revoke(key_pk(&hash), "KEY".to_owned())?,
            revoke(handle.pk, handle.sk)?,
        ];
        match self.transact(items).await? {
            Transaction::Written => Ok(()),
            Transaction::ConditionFailed { .. } => Err(AdminError::NoKey),
        }
    }

    /// Revokes a key given as its text (an operator pasting a leaked key).
    pub async fn revoke_key_text(&self, key: &ApiKey) -> Result<(), AdminError> {
        let record = self.find_key(&key.hash()).await?.ok_or(AdminError::NoKey)?;
        self.revoke_key(&record.account_id, &record.key_id).await
    }
}

impl AgentStore for DynamoStore {
    #[tracing::instrument(skip_all, fields(namespace = %owner.namespace, agent = %agent.name))]
    async fn create_agent(
        &self,
        owner: &Principal,
        agent: &Agent,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<CreateOutcome, StoreError> {
        let deployment = agent.deployment.as_ref().ok_or_else(|| {
            StoreError::Unexpected("a new agent must carry its deployment".into())
        })?;
        let mut items = vec![
            put(
                &self.agents_table,
                &AgentItem::new(owner, agent, &deployment.service_id),
            )?,
            put(
                &self.agents_table,
                &DeploymentItem::new(owner, &agent.name, deployment),
            )?,
        ];
        if let Some(record) = idempotency {
            items.push(put_idempotency(
                &self.agents_table,
                &owner.namespace,
                record,
            )?);
        }
        const AGENT: usize = 0;
        const IDEMPOTENCY: usize = 2;
        match self.transact(items).await? {
            Transaction::Written => Ok(CreateOutcome::Created),
            // The key's record comes first: a retry of a create that landed finds both its
            // name taken and its key used, and must get the first answer back.
            Transaction::ConditionFailed { failed, mut found } if failed.contains(&IDEMPOTENCY) => {
                let item = found
                    .get_mut(IDEMPOTENCY)
                    .and_then(Option::take)
                    .ok_or_else(|| {
                        StoreError::Unexpected(
                            "the failed idempotency condition returned no item".into(),
                        )
                    })?;
                let record: IdempotencyItem = serde_dynamo::from_item(item).map_err(mapping)?;
                Ok(CreateOutcome::KeyUsed(record.into()))
            }
            Transaction::ConditionFailed { failed, .. } if failed == [AGENT] => {
                Ok(CreateOutcome::NameTaken)
            }
            // A deployment id collision (a v4 UUID): impossible in practice, never silent.
            Transaction::ConditionFailed { .. } => Err(StoreError::Unexpected(
                "deployment id already stored".into(),
            )),
        }
    }
}

impl KeyStore for DynamoStore {
    async fn find_key(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.accounts_table)
            .set_key(Some(key(key_pk(hash), "KEY".to_owned())))
            .send()
            .await
            .map_err(classify)?;
        output
            .item
            .map(|item| serde_dynamo::from_item::<_, KeyItem>(item).map(KeyRecord::from))
            .transpose()
            .map_err(mapping)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentSpec;

    fn owner() -> Principal {
        Principal {
            account_id: "acme".into(),
            namespace: "tiny-ferret-maroon-123".into(),
        }
    }

    fn agent() -> Agent {
        let spec = AgentSpec::from_json(serde_json::json!({
            "serviceName": "my-agent",
            "image": "ghcr.io/acme/agent:1.0",
            "secretSet": "env",
            "noiseViva": {"audioFilter": "tel"},
            "autoScaling": {"minAgents": 1, "maxAgents": 4}
        }))
        .unwrap();
        Agent::new(&spec, &owner().namespace, "2026-11-22T10:00:00.000Z")
    }

    #[test]
    fn agent_and_deployment_items_round_trip() {
        let agent = agent();
        let deployment = agent.deployment.clone().unwrap();
        let agent_item: Item =
            serde_dynamo::to_item(AgentItem::new(&owner(), &agent, &deployment.service_id))
                .unwrap();
        let deployment_item: Item =
            serde_dynamo::to_item(DeploymentItem::new(&owner(), &agent.name, &deployment)).unwrap();

        assert_eq!(
            agent_item["pk"],
            AttributeValue::S("NS#tiny-ferret-maroon-123".into())
        );
        assert_eq!(agent_item["sk"], AttributeValue::S("AGENT#my-agent".into()));
        assert_eq!(
            deployment_item["sk"],
            AttributeValue::S(format!("DEPLOYMENT#my-agent#{}", deployment.id))
        );

        let back_deployment = serde_dynamo::from_item::<_, DeploymentItem>(deployment_item)
            .unwrap()
            .into_deployment();
        let back = serde_dynamo::from_item::<_, AgentItem>(agent_item)
            .unwrap()
            .into_agent(Some(back_deployment));
        assert_eq!(back, agent);
    }

    #[test]
    fn optional_members_are_omitted_not_stored_as_null() {
        let mut agent = agent();
        agent.noise_viva = None;
        let item: Item = serde_dynamo::to_item(AgentItem::new(&owner(), &agent, "s")).unwrap();
        assert!(!item.contains_key("noiseViva"));
        let back: AgentItem = serde_dynamo::from_item(item).unwrap();
        assert_eq!(back.noise_viva, None);
    }

    #[test]
    fn key_items_round_trip_without_the_key() {
        let key = ApiKey::generate();
        let hash = key.hash();
        let item = KeyItem {
            pk: key_pk(&hash),
            sk: "KEY".into(),
            key_id: hash.key_id().into(),
            account_id: "acme".into(),
            namespace: "ns".into(),
            created_at: "2026-11-22T10:00:00.000Z".into(),
            revoked_at: Some("2026-11-22T11:00:00.000Z".into()),
        };
        let stored: Item = serde_dynamo::to_item(&item).unwrap();
        let text = format!("{stored:?}");
        assert!(
            !text.contains(key.expose()),
            "the key itself is never stored"
        );
        assert!(text.contains(hash.as_str()));
        let back: KeyItem = serde_dynamo::from_item(stored).unwrap();
        assert_eq!(back, item);
        let record = KeyRecord::from(back);
        assert_eq!(
            record.revoked_at.as_deref(),
            Some("2026-11-22T11:00:00.000Z")
        );
    }
}
