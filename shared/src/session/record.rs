//! What is kept of a session (contract section 11): one conversation of one end user with an
//! agent, on one of its deployments, from the start the API records until the data plane's report
//! (or the control plane, at a deadline) ends it.

use serde::{Deserialize, Serialize};

use crate::agent::AgentRecord;

/// Where a session is in its life. `starting` and `started` are active: they count against the
/// agent's `maxReplicas`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    Starting,
    Started,
    Ended,
    Failed,
}

impl SessionState {
    pub fn is_active(self) -> bool {
        matches!(self, SessionState::Starting | SessionState::Started)
    }
}

/// The transport a start asks the data plane for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Daily,
    Webrtc,
    Websocket,
}

/// What the start asked for, handed to the data plane as given: it makes rooms and tokens (the
/// control plane holds no transport credentials).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRequest {
    /// The start's `body`, as the JSON text it was given in (at most 48 KiB): kept as text, so
    /// that no nesting the store limits (DynamoDB maps nest 32 deep) can refuse it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default)]
    pub create_daily_room: bool,
    /// `dailyRoomProperties`, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_room_properties: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
}

/// What the data plane reported for connecting to a started session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_room: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// A session as kept. `version` grows with every write of it: the condition each is made on.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub namespace: String,
    pub agent_name: String,
    /// The agent's service: a later agent of the same name never meets its sessions.
    pub service_id: String,
    /// A UUIDv7: time-ordered, so an agent's sessions are kept in the order they started.
    pub session_id: String,
    /// The deployment it runs on (ready when it started).
    pub deployment_id: String,
    pub state: SessionState,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    pub ended_at: Option<String>,
    pub completion_status: Option<String>,
    pub bot_start_seconds: Option<f64>,
    pub cold_start: Option<bool>,
    /// While it is active, what the data plane reported for connecting.
    pub connection: Option<Connection>,
    pub request: SessionRequest,
    /// The last applied report's own time (Unix nanoseconds): an older report changes nothing.
    pub observed_at_nanos: Option<i64>,
    /// When a stop was asked for (`DELETE`): the data plane is told once, and its report ends it.
    pub stop_requested_at: Option<String>,
    /// When its item expires (Unix seconds, the table's TTL): set as it ends, the account's log
    /// retention after, so that an agent's history stays as long as the lines that name it.
    pub expires_at: Option<i64>,
}

impl SessionRecord {
    /// A new session of `agent`'s service on `deployment_id`, starting.
    pub fn new(
        agent: &AgentRecord,
        deployment_id: &str,
        request: SessionRequest,
        now: &str,
    ) -> Self {
        SessionRecord {
            namespace: agent.owner.namespace.clone(),
            agent_name: agent.name.clone(),
            service_id: agent.service_id.clone(),
            session_id: uuid::Uuid::now_v7().to_string(),
            deployment_id: deployment_id.to_owned(),
            state: SessionState::Starting,
            version: 1,
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
            ended_at: None,
            completion_status: None,
            bot_start_seconds: None,
            cold_start: None,
            connection: None,
            request,
            observed_at_nanos: None,
            stop_requested_at: None,
            expires_at: None,
        }
    }

    pub fn is_active(&self) -> bool {
        self.state.is_active()
    }

    /// Whether writing `next` over this ends the session: it takes it out of its agent's count.
    pub fn is_ended_by(&self, next: &SessionRecord) -> bool {
        self.is_active() && !next.is_active()
    }

    /// The session with a stop asked for at `now`, at the next version.
    pub fn stop_requested(&self, now: &str) -> Self {
        SessionRecord {
            version: self.version + 1,
            updated_at: now.to_owned(),
            stop_requested_at: Some(now.to_owned()),
            ..self.clone()
        }
    }

    /// The session ended at `now` as `state` (ended or failed) with `completion_status`, at the
    /// next version; what it was given to connect with is dropped.
    pub fn ended(&self, state: SessionState, completion_status: &str, now: &str) -> Self {
        SessionRecord {
            state,
            version: self.version + 1,
            updated_at: now.to_owned(),
            ended_at: Some(now.to_owned()),
            completion_status: Some(completion_status.to_owned()),
            connection: None,
            ..self.clone()
        }
    }
}
