//! Sessions in AgentsTable (layout in [`super::session_items`]). A start is one transaction:
//! the agent's `activeSessions` added to under the condition [`crate::session::admits`] states,
//! and the session put; an end takes it out again in the same transaction as the session's
//! write. Agents' own writes never touch `activeSessions` ([`super::Replacement`]).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::items::{ACTIVE_SESSIONS, AgentItem, agent_sk, namespace_pk};
use super::session_items::{
    DEADLINE_SHARDS, DEADLINES_INDEX, SessionItem, session_sk, sessions_prefix,
};
use super::{
    DynamoStore, Item, Replacement, Transaction, built, item_as, item_of, key, put_new, s,
};
use crate::agent::{AgentRecord, DeploymentState};
use crate::error::StoreError;
use crate::session::{
    SessionKey, SessionRecord, SessionState, SessionStore, SessionSummary, SessionWrite,
    StartOutcome, StartedWithin, SummaryChunk, admits, most_overdue, session_id_floor,
};

/// What a list reads of a session ([`SessionSummary`]): the attributes its filters test.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SummaryItem {
    session_id: String,
    deployment_id: String,
    state: SessionState,
    #[serde(default)]
    completion_status: Option<String>,
    #[serde(default)]
    started_at: Option<String>,
}

/// A session's key as the deadlines index gives it back.
#[derive(serde::Deserialize)]
struct KeyItem {
    pk: String,
    sk: String,
}

impl KeyItem {
    /// The namespace, service and session of `NS#{namespace}` / `SESSION#{service}#{session}`.
    fn session_key(&self) -> Option<SessionKey> {
        let namespace = self.pk.strip_prefix("NS#")?;
        let (service_id, session_id) = self.sk.strip_prefix("SESSION#")?.split_once('#')?;
        Some(SessionKey {
            namespace: namespace.to_owned(),
            service_id: service_id.to_owned(),
            session_id: session_id.to_owned(),
        })
    }
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// [`admits`] as a condition expression on the agent's item: the same service; the session's
/// deployment the active or the serving one, and ready; fewer active sessions than the active
/// configuration's `maxReplicas` (an attribute compared with an attribute: the cap is the
/// stored one, never a figure read before).
const ADMITS: &str = "#serviceId = :service \
    AND ((#active.#deployment.#id = :deployment AND #active.#status.#state = :ready) \
      OR (#serving.#deploymentId = :deployment AND #serving.#status.#state = :ready)) \
    AND (attribute_not_exists(#sessions) \
      OR #sessions < #active.#config.#autoScaling.#maxReplicas)";

fn admits_names() -> HashMap<String, String> {
    [
        ("#serviceId", "serviceId"),
        ("#active", "active"),
        ("#deployment", "deployment"),
        ("#id", "id"),
        ("#status", "status"),
        ("#state", "state"),
        ("#serving", "serving"),
        ("#deploymentId", "deploymentId"),
        ("#sessions", ACTIVE_SESSIONS),
        ("#config", "config"),
        ("#autoScaling", "autoScaling"),
        ("#maxReplicas", "maxReplicas"),
    ]
    .into_iter()
    .map(|(name, attribute)| (name.to_owned(), attribute.to_owned()))
    .collect()
}

/// A ready deployment's `state`, as the agent's item holds it.
fn ready() -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(DeploymentState::Ready).map_err(super::mapping)
}

impl DynamoStore {
    fn agent_item_key(session: &SessionRecord) -> Item {
        key(
            namespace_pk(&session.namespace),
            agent_sk(&session.agent_name),
        )
    }

    /// Why the agent's condition failed, from the item it found: the rule itself decides.
    fn refusal(found: Option<Item>, session: &SessionRecord) -> Result<StartOutcome, StoreError> {
        let agent = found
            .map(|item| serde_dynamo::from_item::<_, AgentItem>(item).map(AgentRecord::from))
            .transpose()
            .map_err(super::mapping)?;
        Ok(match admits(agent.as_ref(), session) {
            Err(refusal) => StartOutcome::Refused(refusal),
            // It changed back between the write and its refusal: try again.
            Ok(()) => StartOutcome::Raced,
        })
    }

    /// The session's write: its item, conditioned on the version read.
    fn session_write(
        &self,
        read: &SessionRecord,
        next: &SessionRecord,
    ) -> Result<TransactWriteItem, StoreError> {
        // What the item as read holds and `next` does not (the write is conditioned on that
        // version, so the stored item is that one) is removed.
        let stored = item_of(&SessionItem::from(read))?;
        let written = item_of(&SessionItem::from(next))?;
        let dropped: Vec<&str> = stored
            .keys()
            .filter(|name| !written.contains_key(*name))
            .map(String::as_str)
            .collect();
        let mut replacement = Replacement::of(written, &[], &dropped);
        replacement
            .names
            .insert("#version".into(), "version".into());
        replacement.values.insert(":read".into(), n(read.version));
        let update = Update::builder()
            .table_name(&self.agents_table)
            .set_key(Some(key(
                namespace_pk(&next.namespace),
                session_sk(&next.service_id, &next.session_id),
            )))
            .update_expression(replacement.expression)
            .condition_expression("#version = :read")
            .set_expression_attribute_names(Some(replacement.names))
            .set_expression_attribute_values(Some(replacement.values))
            .build()
            .map_err(built)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// The agent's count, one less: while it is still the session's service and counts any.
    fn count_down(&self, session: &SessionRecord) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.agents_table)
            .set_key(Some(Self::agent_item_key(session)))
            .update_expression("ADD #sessions :minus")
            .condition_expression("#serviceId = :service AND #sessions > :zero")
            .expression_attribute_names("#sessions", ACTIVE_SESSIONS)
            .expression_attribute_names("#serviceId", "serviceId")
            .expression_attribute_values(":minus", AttributeValue::N("-1".into()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":service", s(&session.service_id))
            .build()
            .map_err(built)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}

impl SessionStore for DynamoStore {
    #[tracing::instrument(skip_all, fields(namespace = %session.namespace, agent = %session.agent_name))]
    async fn start_session(&self, session: &SessionRecord) -> Result<StartOutcome, StoreError> {
        let count_up = Update::builder()
            .table_name(&self.agents_table)
            .set_key(Some(Self::agent_item_key(session)))
            .update_expression("ADD #sessions :one")
            .condition_expression(ADMITS)
            .set_expression_attribute_names(Some(admits_names()))
            .expression_attribute_values(":service", s(&session.service_id))
            .expression_attribute_values(":deployment", s(&session.deployment_id))
            .expression_attribute_values(":ready", ready()?)
            .expression_attribute_values(":one", n(1))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(built)?;
        let items = vec![
            TransactWriteItem::builder().update(count_up).build(),
            put_new(&self.agents_table, &SessionItem::from(session))?,
        ];
        match self.transact_racing(items).await? {
            Some(Transaction::Written) => Ok(StartOutcome::Started),
            None => Ok(StartOutcome::Raced),
            Some(Transaction::ConditionFailed { failed, mut found }) if failed.contains(&0) => {
                Self::refusal(found.swap_remove(0), session)
            }
            Some(Transaction::ConditionFailed { .. }) => {
                Err(StoreError::Unexpected("a new session's id is taken".into()))
            }
        }
    }

    async fn get_session(
        &self,
        namespace: &str,
        service_id: &str,
        session_id: &str,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let found: Option<SessionItem> = item_as(
            self.get_item(
                &self.agents_table,
                namespace_pk(namespace),
                session_sk(service_id, session_id),
                true,
            )
            .send()
            .await
            .map_err(super::classify)?,
        )?;
        Ok(found.map(SessionRecord::from))
    }

    async fn session_summaries(
        &self,
        namespace: &str,
        service_id: &str,
        within: StartedWithin,
        before: Option<&str>,
    ) -> Result<SummaryChunk, StoreError> {
        let prefix = sessions_prefix(service_id);
        let lower = format!(
            "{prefix}{}",
            within.from.map(session_id_floor).unwrap_or_default()
        );
        // BETWEEN is inclusive: `before` itself is skipped below, and no session's key equals
        // an `until` floor (a key holds the whole id).
        let upper = match (before, within.until) {
            (Some(before), _) => session_sk(service_id, before),
            (None, Some(until)) => format!("{prefix}{}", session_id_floor(until)),
            // Past every hex digit.
            (None, None) => format!("{prefix}~"),
        };
        if upper < lower {
            return Ok(SummaryChunk::default());
        }
        let output = self
            .client
            .query()
            .table_name(&self.agents_table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :lower AND :upper")
            .projection_expression(
                "#sessionId, #deploymentId, #state, #completionStatus, #startedAt",
            )
            .expression_attribute_names("#sessionId", "sessionId")
            .expression_attribute_names("#deploymentId", "deploymentId")
            .expression_attribute_names("#state", "state")
            .expression_attribute_names("#completionStatus", "completionStatus")
            .expression_attribute_names("#startedAt", "startedAt")
            .expression_attribute_values(":pk", s(namespace_pk(namespace)))
            .expression_attribute_values(":lower", s(lower))
            .expression_attribute_values(":upper", s(upper))
            .scan_index_forward(false)
            .send()
            .await
            .map_err(super::classify)?;
        let mut summaries = Vec::new();
        for item in output.items.unwrap_or_default() {
            let item: SummaryItem = serde_dynamo::from_item(item).map_err(super::mapping)?;
            if Some(item.session_id.as_str()) == before {
                continue;
            }
            summaries.push(SessionSummary {
                session_id: item.session_id,
                deployment_id: item.deployment_id,
                state: item.state,
                completion_status: item.completion_status,
                started_at: item.started_at,
            });
        }
        Ok(SummaryChunk {
            summaries,
            more: output.last_evaluated_key.is_some(),
        })
    }

    async fn get_sessions(
        &self,
        namespace: &str,
        service_id: &str,
        session_ids: &[String],
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let keys = session_ids
            .iter()
            .map(|id| key(namespace_pk(namespace), session_sk(service_id, id)))
            .collect();
        self.batch_get(&self.agents_table, keys, false)
            .await?
            .into_iter()
            .map(|item| {
                serde_dynamo::from_item::<_, SessionItem>(item)
                    .map(SessionRecord::from)
                    .map_err(super::mapping)
            })
            .collect()
    }

    /// Each shard of the deadlines index, at once.
    async fn overdue_sessions(&self, now: i64, max: usize) -> Result<Vec<SessionKey>, StoreError> {
        let limit = i32::try_from(max).unwrap_or(i32::MAX);
        let shards = (0..DEADLINE_SHARDS).map(|shard| {
            self.client
                .query()
                .table_name(&self.agents_table)
                .index_name(DEADLINES_INDEX)
                .key_condition_expression("#shard = :shard AND #deadline <= :now")
                .expression_attribute_names("#shard", "deadlineShard")
                .expression_attribute_names("#deadline", "deadline")
                .expression_attribute_values(":shard", s(shard.to_string()))
                .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
                .limit(limit)
                .send()
        });
        let mut due: Vec<(i64, SessionKey)> = Vec::new();
        for output in futures_util::future::try_join_all(shards)
            .await
            .map_err(super::classify)?
        {
            for item in output.items.unwrap_or_default() {
                let deadline = item
                    .get("deadline")
                    .and_then(|value| value.as_n().ok())
                    .and_then(|value| value.parse().ok())
                    .unwrap_or(i64::MIN);
                let keys: KeyItem = serde_dynamo::from_item(item).map_err(super::mapping)?;
                match keys.session_key() {
                    Some(key) => due.push((deadline, key)),
                    None => tracing::warn!(sk = %keys.sk, "a deadline that is no session's"),
                }
            }
        }
        Ok(most_overdue(due, max))
    }

    #[tracing::instrument(skip_all, fields(namespace = %next.namespace, session = %next.session_id))]
    async fn write_session(
        &self,
        read: &SessionRecord,
        next: &SessionRecord,
    ) -> Result<SessionWrite, StoreError> {
        let mut items = vec![self.session_write(read, next)?];
        if read.is_ended_by(next) {
            items.push(self.count_down(next)?);
        }
        let counted = items.len() > 1;
        match self.transact_racing(items).await? {
            Some(Transaction::Written) => Ok(SessionWrite::Written),
            None => Ok(SessionWrite::Conflict),
            Some(Transaction::ConditionFailed { failed, .. }) if failed.contains(&0) => {
                Ok(SessionWrite::Conflict)
            }
            // The agent is gone (or another service of its name): it took its count with it.
            Some(Transaction::ConditionFailed { .. }) if counted => {
                let alone = vec![self.session_write(read, next)?];
                Ok(match self.transact_racing(alone).await? {
                    Some(Transaction::Written) => SessionWrite::Written,
                    _ => SessionWrite::Conflict,
                })
            }
            Some(Transaction::ConditionFailed { .. }) => Err(StoreError::Unexpected(
                "a session's write failed a condition it does not have".into(),
            )),
        }
    }
}
