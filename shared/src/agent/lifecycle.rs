//! What each agent operation does, over any [`AgentStore`] (contract section 6): create, update
//! (a new deployment when the configuration changes, nothing when it does not), delete, and a
//! data plane report (section 7).
//!
//! Every write of an existing agent is conditional on the version it was read at. A write that
//! loses a race reads the agent again and is applied to the newer version, so concurrent updates
//! and reports are never lost; with `If-Match` the caller pinned the version, and the agent read
//! again at another version is a 412 instead.

use http::StatusCode;
use time::OffsetDateTime;

use super::config::{AgentConfig, ConfigChanges};
use super::record::AgentRecord;
use super::set_use::SetMember;
use super::status::{ReportOutcome, StatusReport, Unapplied};
use super::store::{AgentStore, Change, CreateOutcome, WriteOutcome};
use super::view::Agent;
use crate::ApiError;
use crate::auth::Principal;
use crate::error::StoreError;
use crate::idempotency::{self, IdempotencyRecord};
use crate::manifest::DeploymentMode;
use crate::races::Races;
use crate::timestamp::rfc3339_millis;

/// An `If-Match` header: `*`, or a list of entity tags (strong comparison: a weak tag never
/// matches, RFC 9110 section 13.1.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    Any,
    Tags(Vec<String>),
}

impl IfMatch {
    pub fn parse(value: &str) -> Self {
        if value.trim() == "*" {
            return IfMatch::Any;
        }
        IfMatch::Tags(
            value
                .split(',')
                .map(|tag| tag.trim().to_owned())
                .filter(|tag| !tag.is_empty())
                .collect(),
        )
    }

    pub fn allows(&self, etag: &str) -> bool {
        match self {
            IfMatch::Any => true,
            IfMatch::Tags(tags) => tags.iter().any(|tag| tag == etag),
        }
    }
}

/// A request's `Idempotency-Key`, to be recorded with its successful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idempotent {
    pub key_digest: String,
    /// [`idempotency::fingerprint`] of what the request asked.
    pub fingerprint: String,
}

impl Idempotent {
    fn record(
        &self,
        status: StatusCode,
        body: &[u8],
        agent: &str,
        now: OffsetDateTime,
    ) -> IdempotencyRecord {
        IdempotencyRecord {
            key_digest: self.key_digest.clone(),
            fingerprint: self.fingerprint.clone(),
            status: status.as_u16(),
            body: String::from_utf8_lossy(body).into_owned(),
            created_at: rfc3339_millis(now),
            expires_at: now.unix_timestamp() + idempotency::RETENTION_SECONDS,
            agent: agent.to_owned(),
        }
    }
}

/// A successful answer: the agent as written (or as it is), or the first answer to the
/// request's `Idempotency-Key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Agent {
        /// 201 for a create, 200 for an update.
        status: StatusCode,
        agent: Box<AgentRecord>,
        /// The agent object as JSON, serialized once: the same bytes are the answer and the
        /// idempotency record.
        body: Vec<u8>,
    },
    Replayed {
        status: u16,
        body: String,
    },
}

fn body_of(agent: &Agent) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(agent).map_err(ApiError::internal)
}

fn replay(first: &IdempotencyRecord, idempotent: Option<&Idempotent>) -> Result<Answer, ApiError> {
    let fingerprint = idempotent.map_or("", |key| key.fingerprint.as_str());
    let (status, body) = first.replay_for(fingerprint)?;
    tracing::info!(status, "idempotent replay");
    Ok(Answer::Replayed {
        status,
        body: body.to_owned(),
    })
}

/// A set named by `member` of `config` is not in the caller's account with that member's type.
fn no_such_set(config: &AgentConfig, member: SetMember) -> ApiError {
    let name = config
        .named_sets()
        .into_iter()
        .find(|set| set.member == member)
        .map_or("", |set| set.name);
    let kind = match member {
        SetMember::SecretSet => "secret set",
        SetMember::ImagePullSecretSet => "image pull secret",
    };
    ApiError::bad_request(
        member.field(),
        format!(
            "{} '{name}' names no {kind} of this account; make it with PUT /v1/secrets/{name}",
            member.field()
        ),
    )
}

/// POST /v1/agents: the agent of `changes` and its first deployment, in the caller's account.
pub async fn create<S: AgentStore>(
    store: &S,
    mode: DeploymentMode,
    caller: &Principal,
    changes: ConfigChanges,
    idempotent: Option<&Idempotent>,
) -> Result<Answer, ApiError> {
    let (name, config) = changes.into_new_agent()?;
    let now = OffsetDateTime::now_utc();
    let agent = AgentRecord::new(caller, &name, config, mode, &rfc3339_millis(now));
    let body = body_of(&agent.created_view())?;
    let record = idempotent.map(|key| key.record(StatusCode::CREATED, &body, &name, now));
    let mut races = Races::new();
    loop {
        match store.create_agent(&agent, record.as_ref()).await? {
            CreateOutcome::Created => {
                tracing::info!(deployment_id = %agent.active.deployment.id, "agent created");
                return Ok(Answer::Agent {
                    status: StatusCode::CREATED,
                    agent: Box::new(agent),
                    body,
                });
            }
            CreateOutcome::NameTaken => {
                return Err(ApiError::Conflict(format!(
                    "An agent named '{name}' already exists in this account"
                )));
            }
            CreateOutcome::KeyUsed(first) => return replay(&first, idempotent),
            CreateOutcome::NoSuchSet(member) => return Err(no_such_set(agent.config(), member)),
            // Creates of other agents naming the same set at the same moment.
            CreateOutcome::Raced => races.lost().await?,
        }
    }
}

/// POST /v1/agents/{name}: the agent with `changes` applied; a new deployment when the
/// configuration differs from the active deployment's or `forceRedeploy` asks for one, nothing
/// written otherwise.
pub async fn update<S: AgentStore>(
    store: &S,
    mode: DeploymentMode,
    caller: &Principal,
    name: &str,
    changes: ConfigChanges,
    if_match: Option<&IfMatch>,
    idempotent: Option<&Idempotent>,
) -> Result<Answer, ApiError> {
    let mut races = Races::new();
    loop {
        let current = store
            .get_agent(&caller.namespace, name)
            .await?
            .ok_or_else(ApiError::no_agent)?;
        if if_match.is_some_and(|expected| !expected.allows(&current.etag())) {
            return Err(ApiError::PreconditionFailed);
        }
        let config = changes.clone().apply_to(name, current.config())?;
        let now = OffsetDateTime::now_utc();
        let unchanged = config == *current.config() && !changes.force_redeploy;
        if unchanged && idempotent.is_none() {
            let body = body_of(&current.view())?;
            return Ok(Answer::Agent {
                status: StatusCode::OK,
                agent: Box::new(current),
                body,
            });
        }
        // A request that changes nothing still records its key's answer, under the agent's
        // next version: a delete in between then finds the agent changed, reads again and
        // takes the record with it.
        let (next, change) = if unchanged {
            (current.next_version(), Change::AnswerRecorded)
        } else {
            (
                current.deploy(config, mode, &rfc3339_millis(now)),
                Change::NewDeployment {
                    replaced: current.config(),
                },
            )
        };
        let body = body_of(&next.view())?;
        let record = idempotent.map(|key| key.record(StatusCode::OK, &body, name, now));
        let outcome = store
            .write_agent(current.version, &next, change, record.as_ref())
            .await?;
        match outcome {
            WriteOutcome::Written => {
                if !unchanged {
                    tracing::info!(deployment_id = %next.active.deployment.id, "agent deployed");
                }
                return Ok(Answer::Agent {
                    status: StatusCode::OK,
                    agent: Box::new(next),
                    body,
                });
            }
            WriteOutcome::KeyUsed(first) => return replay(&first, idempotent),
            WriteOutcome::NoSuchSet(member) => return Err(no_such_set(next.config(), member)),
            // Read again: with If-Match, the check above then answers 412 if the agent changed.
            WriteOutcome::Conflict => races.lost().await?,
        }
    }
}

/// DELETE /v1/agents/{name}: the agent, its deployments and its idempotency records; the agent
/// as it was.
pub async fn delete<S: AgentStore>(
    store: &S,
    caller: &Principal,
    name: &str,
) -> Result<AgentRecord, ApiError> {
    let mut races = Races::new();
    loop {
        let current = store
            .get_agent(&caller.namespace, name)
            .await?
            .ok_or_else(ApiError::no_agent)?;
        match store.delete_agent(&current).await? {
            WriteOutcome::Written => {
                tracing::info!(service_id = %current.service_id, "agent deleted");
                return Ok(current);
            }
            WriteOutcome::Conflict | WriteOutcome::KeyUsed(_) => races.lost().await?,
            WriteOutcome::NoSuchSet(_) => return Err(names_no_set().into()),
        }
    }
}

/// A write that names no set was refused for a set it names: a store's bug, never the caller's.
fn names_no_set() -> StoreError {
    StoreError::Unexpected("a write that names no set was refused for a missing set".into())
}

/// A data plane report, applied to the agent it names if it is the newest of a deployment that
/// agent runs; anything else is dropped (and said so).
pub async fn apply_report<S: AgentStore>(
    store: &S,
    report: &StatusReport,
) -> Result<ReportOutcome, StoreError> {
    // Refused before anything is read: no agent's state decides it, and a name past its bound
    // is no key the store can hold.
    if report.out_of_bounds().is_some()
        || report.observed_nanos(OffsetDateTime::now_utc()).is_none()
    {
        return Ok(ReportOutcome::Refused);
    }
    let mut races = Races::new();
    loop {
        let Some(agent) = store.get_agent(&report.namespace, &report.agent).await? else {
            return Ok(ReportOutcome::UnknownAgent);
        };
        let next = match agent.apply(report, OffsetDateTime::now_utc()) {
            Ok(next) => next,
            Err(Unapplied::OutOfWindow) => return Ok(ReportOutcome::Refused),
            Err(Unapplied::Stale) => return Ok(ReportOutcome::Stale),
            Err(Unapplied::NotCurrent) => {
                let kept = store
                    .get_deployment(&report.namespace, &agent.service_id, &report.deployment_id)
                    .await?;
                return Ok(match kept {
                    Some(_) => ReportOutcome::Superseded,
                    None => ReportOutcome::UnknownDeployment,
                });
            }
        };
        // A report is applied only to a deployment the agent runs, so its status is there.
        let status = next.status_of(&report.deployment_id).ok_or_else(|| {
            StoreError::Unexpected("a report applied to a deployment the agent does not run".into())
        })?;
        let change = Change::Status {
            deployment_id: &report.deployment_id,
            status,
        };
        match store
            .write_agent(agent.version, &next, change, None)
            .await?
        {
            WriteOutcome::Written => return Ok(ReportOutcome::Applied),
            WriteOutcome::Conflict | WriteOutcome::KeyUsed(_) => races.lost().await?,
            WriteOutcome::NoSuchSet(_) => return Err(names_no_set()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_compares_strong_tags_or_takes_any() {
        assert!(IfMatch::parse("*").allows("\"7\""));
        assert!(IfMatch::parse("\"7\"").allows("\"7\""));
        assert!(IfMatch::parse("\"6\", \"7\"").allows("\"7\""));
        assert!(!IfMatch::parse("\"6\"").allows("\"7\""));
        assert!(
            !IfMatch::parse("W/\"7\"").allows("\"7\""),
            "weak tags never match"
        );
        assert!(
            !IfMatch::parse("7").allows("\"7\""),
            "an unquoted tag is not the tag"
        );
        assert!(!IfMatch::parse("").allows("\"7\""));
    }
}
