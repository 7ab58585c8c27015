//! The items of sessions in AgentsTable, in the account's partition (`NS#{namespace}`):
//! `SESSION#{serviceId}#{sessionId}`. Session ids are UUIDv7, so an agent's sessions sort by
//! their start; keyed by the service, so a later agent of the same name never meets them. Every
//! write of one is conditioned on its `version`. `kind = session` for the stream publisher.

use serde::{Deserialize, Serialize};

use super::items::namespace_pk;
use crate::session::{Connection, SessionRecord, SessionRequest, SessionState};

pub const SESSION_KIND: &str = "session";

/// The prefix of a service's sessions.
pub fn sessions_prefix(service_id: &str) -> String {
    format!("SESSION#{service_id}#")
}

pub fn session_sk(service_id: &str, session_id: &str) -> String {
    format!("{}{session_id}", sessions_prefix(service_id))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionItem {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub namespace: String,
    pub agent_name: String,
    pub service_id: String,
    pub session_id: String,
    pub deployment_id: String,
    pub state: SessionState,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_start_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connection>,
    pub request: SessionRequest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at_nanos: Option<i64>,
    /// Its first appearance on the stream is `Session Stop Requested`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_requested_at: Option<String>,
    /// The table's TTL attribute, once the session has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Items written without it read as the default `maxSessionDuration`.
    #[serde(default = "crate::manifest::default_max_session_duration")]
    pub max_duration_seconds: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The keys of [`DEADLINES_INDEX`], while the session is active (a sparse index: an ended
    /// session leaves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_shard: Option<String>,
}

/// The index of active sessions by deadline: `deadlineShard` (one of [`DEADLINE_SHARDS`], by the
/// session id) and `deadline` (Unix seconds), keys only. Spread over shards so that no one
/// partition takes every start's write.
pub const DEADLINES_INDEX: &str = "session-deadlines";
pub const DEADLINE_SHARDS: u8 = 8;

/// The shard of a session's deadline: its id's last hex digit (random bits of a UUIDv7), folded
/// onto [`DEADLINE_SHARDS`].
pub fn deadline_shard(session_id: &str) -> String {
    let digit = session_id
        .chars()
        .last()
        .and_then(|c| c.to_digit(16))
        .unwrap_or(0);
    format!("{}", digit % u32::from(DEADLINE_SHARDS))
}

impl From<&SessionRecord> for SessionItem {
    fn from(session: &SessionRecord) -> Self {
        SessionItem {
            pk: namespace_pk(&session.namespace),
            sk: session_sk(&session.service_id, &session.session_id),
            kind: SESSION_KIND.to_owned(),
            namespace: session.namespace.clone(),
            agent_name: session.agent_name.clone(),
            service_id: session.service_id.clone(),
            session_id: session.session_id.clone(),
            deployment_id: session.deployment_id.clone(),
            state: session.state,
            version: session.version,
            created_at: session.created_at.clone(),
            updated_at: session.updated_at.clone(),
            ended_at: session.ended_at.clone(),
            completion_status: session.completion_status.clone(),
            bot_start_seconds: session.bot_start_seconds,
            cold_start: session.cold_start,
            connection: session.connection.clone(),
            request: session.request.clone(),
            observed_at_nanos: session.observed_at_nanos,
            stop_requested_at: session.stop_requested_at.clone(),
            expires_at: session.expires_at,
            max_duration_seconds: session.max_duration_seconds,
            started_at: session.started_at.clone(),
            deadline: session.deadline,
            deadline_shard: session
                .deadline
                .map(|_| deadline_shard(&session.session_id)),
        }
    }
}

impl From<SessionItem> for SessionRecord {
    fn from(item: SessionItem) -> Self {
        SessionRecord {
            namespace: item.namespace,
            agent_name: item.agent_name,
            service_id: item.service_id,
            session_id: item.session_id,
            deployment_id: item.deployment_id,
            state: item.state,
            version: item.version,
            created_at: item.created_at,
            updated_at: item.updated_at,
            ended_at: item.ended_at,
            completion_status: item.completion_status,
            bot_start_seconds: item.bot_start_seconds,
            cold_start: item.cold_start,
            connection: item.connection,
            request: item.request,
            observed_at_nanos: item.observed_at_nanos,
            stop_requested_at: item.stop_requested_at,
            expires_at: item.expires_at,
            max_duration_seconds: item.max_duration_seconds,
            started_at: item.started_at,
            deadline: item.deadline,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Transport;

    #[test]
    fn a_session_round_trips_through_its_item() {
        let agent = crate::agent::record::tests::record();
        let mut session = SessionRecord::new(
            &agent,
            "deployment-1",
            SessionRequest {
                body: Some(r#"{"language":"en","nested":[[[[1]]]]}"#.into()),
                create_daily_room: true,
                daily_room_properties: Some(r#"{"exp":1}"#.into()),
                transport: Some(Transport::Daily),
            },
            time::macros::datetime!(2026-11-25 10:00 UTC),
        );
        let starting = SessionItem::from(&session);
        assert_eq!(
            (starting.deadline, starting.deadline_shard.is_some()),
            (Some(1_795_600_920), true),
            "two minutes after its start, in the deadlines index"
        );
        let stored: super::super::Item = serde_dynamo::to_item(&starting).unwrap();
        let back: SessionItem = serde_dynamo::from_item(stored).unwrap();
        assert_eq!(
            SessionRecord::from(back),
            session,
            "the start's request kept"
        );

        let reported = time::macros::datetime!(2026-11-25 10:00:02 UTC);
        session = session.started(Connection::default(), reported, reported);
        session.bot_start_seconds = Some(1.25);
        session.cold_start = Some(false);
        session.connection = Some(Connection {
            daily_room: Some("https://example.daily.co/room".into()),
            daily_token: Some("token".into()),
            ..Connection::default()
        });
        session.observed_at_nanos = Some(1_800_000_000_000_000_000);
        session = session.stop_requested("2026-11-25T10:05:00.000Z");
        session.expires_at = Some(1_800_000_000);
        let item = SessionItem::from(&session);
        assert_eq!(
            item.sk,
            format!("SESSION#{}#{}", agent.service_id, session.session_id)
        );
        let stored: super::super::Item = serde_dynamo::to_item(&item).unwrap();
        assert_eq!(stored["state"].as_s().unwrap(), "started");
        assert_eq!(stored["kind"].as_s().unwrap(), "session");
        let back: SessionItem = serde_dynamo::from_item(stored).unwrap();
        assert_eq!(SessionRecord::from(back), session);
        assert!(session.request.body.is_none(), "dropped once reported");
        let ended = session.ended(SessionState::Ended, "completed", "2026-11-25T10:09:00.000Z");
        let item = SessionItem::from(&ended);
        assert_eq!(
            (item.deadline, item.deadline_shard),
            (None, None),
            "out of the deadlines index"
        );
    }

    #[test]
    fn session_ids_sort_by_the_millisecond_of_their_start_and_a_floor_starts_each_second() {
        let agent = crate::agent::record::tests::record();
        let start = time::macros::datetime!(2026-11-25 10:00 UTC);
        let at = |millis: i64| start + time::Duration::milliseconds(millis);
        let id = |millis| SessionRecord::new(&agent, "d", SessionRequest::default(), at(millis));
        let ids: Vec<String> = (0..50).map(|i| id(i * 37).session_id).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        let second = start.unix_timestamp();
        let floor = crate::session::session_id_floor(second);
        let next = crate::session::session_id_floor(second + 1);
        assert!(id(-1).session_id < floor, "the millisecond before");
        assert!(floor < id(0).session_id && id(999).session_id < next);
        assert!(next < id(1_000).session_id);
    }
}
