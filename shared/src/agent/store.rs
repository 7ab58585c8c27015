//! The port agents are kept behind. Each method is one conditional write or one read; the
//! read-modify-write loops over them live once, in [`super::lifecycle`], for every store.

use std::future::Future;

use super::config::AgentConfig;
use super::record::{AgentRecord, DeploymentRecord, DeploymentStatus};
use super::set_use::SetMember;
use crate::error::StoreError;
use crate::idempotency::IdempotencyRecord;

/// The result of writing a new agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    Created,
    /// An agent of that name already exists in the account; nothing was written.
    NameTaken,
    /// The request's `Idempotency-Key` has a live record (an earlier or concurrent request with
    /// that key got there first); nothing was written. The record is what it found.
    KeyUsed(IdempotencyRecord),
    /// The set this member names is not in the account with the member's type; nothing was
    /// written.
    NoSuchSet(SetMember),
    /// Writers of the same items at the same moment kept this write from running; nothing was
    /// written, and trying again may succeed.
    Raced,
}

/// What a write of an existing agent changes besides the agent itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a> {
    /// Its active deployment is new, replacing one of the configuration `replaced`: kept in the
    /// agent's history, and the sets either names change users ([`super::SetUse`]).
    NewDeployment { replaced: &'a AgentConfig },
    /// The status of this deployment (the active or the serving one) changed to `status`: the
    /// history's copy follows.
    Status {
        deployment_id: &'a str,
        status: &'a DeploymentStatus,
    },
    /// Nothing but the version: the write carries the answer to an `Idempotency-Key` of a
    /// request that changed nothing.
    AnswerRecorded,
}

/// The result of a conditional write of an existing agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    Written,
    /// The agent is no longer the version it was read at (written since, or deleted), or
    /// writers of it at the same moment kept this write from running; nothing was written.
    Conflict,
    /// The `Idempotency-Key` has a live record; nothing was written.
    KeyUsed(IdempotencyRecord),
    /// The set this member names is not in the account with the member's type; nothing was
    /// written.
    NoSuchSet(SetMember),
}

/// One page of an account's agents, by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentPage {
    pub agents: Vec<AgentRecord>,
    /// Whether agents follow the last one.
    pub more: bool,
}

/// One page of a service's deployment history, greatest id first: newest first, as deployment
/// ids are UUIDv7 (time-ordered; ids of v4, made before, sort among themselves at random).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeploymentPage {
    pub deployments: Vec<DeploymentRecord>,
    /// Whether deployments follow the last one.
    pub more: bool,
}

/// An agent: its account's namespace and its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentRef {
    pub namespace: String,
    pub name: String,
}

pub trait AgentStore: Send + Sync {
    /// Writes the agent and its first deployment at once, with the agent among the users of the
    /// sets it names ([`super::SetUse`]), or nothing when the name is taken or a set is missing.
    /// With an `idempotency` record, writes it in the same transaction unless its key has a live
    /// record already.
    fn create_agent(
        &self,
        agent: &AgentRecord,
        idempotency: Option<&IdempotencyRecord>,
    ) -> impl Future<Output = Result<CreateOutcome, StoreError>> + Send;

    /// The agent of that name in the namespace, read after every write that preceded the call.
    fn get_agent(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<AgentRecord>, StoreError>> + Send;

    /// A deployment kept in a service's history.
    fn get_deployment(
        &self,
        namespace: &str,
        service_id: &str,
        deployment_id: &str,
    ) -> impl Future<Output = Result<Option<DeploymentRecord>, StoreError>> + Send;

    /// Up to `limit` deployments of the service's history, greatest id first, each with an id
    /// below `before` when given (the last id of the page before), read after every write that
    /// preceded the call: the agent's active deployment, read before, is among them.
    fn list_deployments(
        &self,
        namespace: &str,
        service_id: &str,
        before: Option<&str>,
        limit: usize,
    ) -> impl Future<Output = Result<DeploymentPage, StoreError>> + Send;

    /// Up to `limit` agents of the namespace by name, after the name `after`.
    fn list_agents(
        &self,
        namespace: &str,
        after: Option<&str>,
        limit: usize,
    ) -> impl Future<Output = Result<AgentPage, StoreError>> + Send;

    /// Every agent of every namespace, by reference alone, in no order: what a data plane reads
    /// when it starts, to learn what should run. It reads the whole table: never for a request.
    fn every_agent(&self) -> impl Future<Output = Result<Vec<AgentRef>, StoreError>> + Send;

    /// Replaces the agent with `next` (whose version is `read_version + 1`) if it is still at
    /// `read_version`, together with what `change` says and the idempotency record, or writes
    /// nothing.
    fn write_agent(
        &self,
        read_version: u64,
        next: &AgentRecord,
        change: Change<'_>,
        idempotency: Option<&IdempotencyRecord>,
    ) -> impl Future<Output = Result<WriteOutcome, StoreError>> + Send;

    /// Deletes the agent with its deployments and idempotency records, and takes it from the
    /// users of the sets it names, if it is still at `agent.version` (`Conflict` otherwise, and nothing deleted: a later write may have added
    /// to what there is to delete, so the caller reads again and repeats). A reader meets the
    /// agent whole or not at all: the agent goes together with the deployments it runs and its
    /// records; only history no reader reaches without the agent may go after it.
    fn delete_agent(
        &self,
        agent: &AgentRecord,
    ) -> impl Future<Output = Result<WriteOutcome, StoreError>> + Send;
}
