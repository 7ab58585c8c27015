//! The items of sessions in AgentsTable, in the account's partition (`NS#{namespace}`):
//! `SESSION#{serviceId}#{sessionId}`. Session ids are UUIDv7, so an agent's sessions sort by
//! their start; keyed by the service, so a later agent of the same name never meets them. Every
//! write of one is conditioned on its `version`. `kind = session` for the stream's pipes.

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
            "2026-11-25T10:00:00.000Z",
        );
        session.state = SessionState::Started;
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
    }

    #[test]
    fn session_ids_sort_by_their_start() {
        let agent = crate::agent::record::tests::record();
        let ids: Vec<String> = (0..50)
            .map(|_| SessionRecord::new(&agent, "d", SessionRequest::default(), "t").session_id)
            .collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }
}
