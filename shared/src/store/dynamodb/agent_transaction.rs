//! An agent's transaction: the agent's own actions, then what its write does to the users of the
//! secret sets its configuration names ([`SetUse`]), then its idempotency record. A set named is
//! checked by the same action that adds the agent to its users (`ADD usedBy`, conditioned on the
//! set existing with the member's type), so a set deleted a moment before cannot be named, and a
//! set's delete (conditioned on no `usedBy`) cannot miss an agent that names it.

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};

use super::items::namespace_pk;
use super::secret_items::secret_set_sk;
use super::{DynamoStore, Item, Transaction, built, key, mapping};
use crate::agent::{SetMember, SetUse};
use crate::error::StoreError;

/// How an agent's transaction ended.
pub(super) enum AgentTransaction {
    Written,
    /// Other transactions on the same items kept it from running; nothing was written.
    Raced,
    /// Conditions failed; nothing was written.
    Refused(Refusal),
}

/// Which conditions of an agent's transaction failed.
pub(super) struct Refusal {
    /// Indexes among the agent's own actions.
    pub own: Vec<usize>,
    /// A member whose set is missing, or of another type.
    pub set: Option<SetMember>,
    /// When the idempotency record's condition failed: the live record it found.
    pub record: Option<Option<Item>>,
}

impl DynamoStore {
    /// Runs `own`, the actions of `uses` for agent `agent` of `namespace`, and the put of its
    /// idempotency `record`. A set
    /// the write drops that no longer exists (an agent named it before names were checked) has
    /// no users to leave: the transaction runs again without it.
    pub(super) async fn transact_agent(
        &self,
        namespace: &str,
        agent: &str,
        own: Vec<TransactWriteItem>,
        uses: &SetUse<'_>,
        record: Option<Put>,
    ) -> Result<AgentTransaction, StoreError> {
        let mut uses = uses.clone();
        loop {
            let mut items = own.clone();
            items.extend(self.set_use_actions(namespace, agent, &uses)?);
            let record_at = items.len();
            items.extend(
                record
                    .clone()
                    .map(|put| TransactWriteItem::builder().put(put).build()),
            );
            let Some(transaction) = self.transact_racing(items).await? else {
                return Ok(AgentTransaction::Raced);
            };
            let Transaction::ConditionFailed { failed, mut found } = transaction else {
                return Ok(AgentTransaction::Written);
            };
            let named_at = own.len();
            let dropped_at = named_at + uses.named.len();
            let refusal = Refusal {
                own: failed.iter().copied().filter(|at| *at < named_at).collect(),
                set: failed
                    .iter()
                    .find(|at| (named_at..dropped_at).contains(*at))
                    .map(|at| uses.named[at - named_at].member),
                record: (record.is_some() && failed.contains(&record_at))
                    .then(|| found.get_mut(record_at).and_then(Option::take)),
            };
            let gone: Vec<&str> = failed
                .iter()
                .filter(|at| (dropped_at..record_at).contains(*at))
                .map(|at| uses.dropped[at - dropped_at])
                .collect();
            let only_gone = refusal.own.is_empty() && refusal.set.is_none();
            if gone.is_empty() || !only_gone || refusal.record.is_some() {
                return Ok(AgentTransaction::Refused(refusal));
            }
            tracing::warn!(sets = ?gone, "sets the agent named no longer exist");
            uses = uses.without_dropped(&gone);
        }
    }

    /// `ADD` the agent to the users of each set named (which must exist with the member's
    /// type), `DELETE` it from those of each set dropped (which must exist: an update of a
    /// missing item would make one).
    fn set_use_actions(
        &self,
        namespace: &str,
        agent: &str,
        uses: &SetUse<'_>,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let user = AttributeValue::Ss(vec![agent.to_owned()]);
        let action = |set: &str, expression: &str| {
            Update::builder()
                .table_name(&self.agents_table)
                .set_key(Some(key(namespace_pk(namespace), secret_set_sk(set))))
                .update_expression(expression)
                .expression_attribute_values(":agent", user.clone())
        };
        let mut actions = Vec::with_capacity(uses.named.len() + uses.dropped.len());
        for set in &uses.named {
            let set_type =
                serde_dynamo::to_attribute_value(set.member.set_type()).map_err(mapping)?;
            let update = action(set.name, "ADD usedBy :agent")
                .condition_expression("attribute_exists(pk) AND setType = :type")
                .expression_attribute_values(":type", set_type)
                .build()
                .map_err(built)?;
            actions.push(TransactWriteItem::builder().update(update).build());
        }
        for set in &uses.dropped {
            let update = action(set, "DELETE usedBy :agent")
                .condition_expression("attribute_exists(pk)")
                .build()
                .map_err(built)?;
            actions.push(TransactWriteItem::builder().update(update).build());
        }
        Ok(actions)
    }
}
