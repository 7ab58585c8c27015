//! What is kept of a session (contract section 11): one conversation of one end user with an
//! agent, on one of its deployments, from the start the API records until the data plane's report
//! (or the control plane, at a deadline) ends it.

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::agent::AgentRecord;
use crate::timestamp::rfc3339_millis;

/// A session still `starting` this long after its start has failed (`startTimeout`).
pub const START_TIMEOUT: Duration = Duration::minutes(2);
/// A started session never reported ended is ended (`expired`) this long after its
/// `maxSessionDuration` has passed.
pub const EXPIRY_GRACE: Duration = Duration::minutes(5);

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

/// The completion statuses the control plane gives itself.
pub mod completion {
    /// Ended, the data plane giving no status of its own.
    pub const COMPLETED: &str = "completed";
    /// Failed, the data plane giving no status of its own.
    pub const AGENT_ERROR: &str = "agentError";
    /// Stopped on request with no status of the data plane's.
    pub const TERMINATED: &str = "terminated";
    /// Never reported ended: ended at `maxSessionDuration` plus the grace.
    pub const EXPIRED: &str = "expired";
    /// Still `starting` two minutes after its start.
    pub const START_TIMEOUT: &str = "startTimeout";
    /// Its agent was deleted.
    pub const AGENT_DELETED: &str = "agentDeleted";
}

/// The transport a start asks the data plane for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Daily,
    Webrtc,
    Websocket,
}

impl Transport {
    /// Its name as JSON writes it, which the agent's `X-Daily-Transport-Type` also carries.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Daily => "daily",
            Transport::Webrtc => "webrtc",
            Transport::Websocket => "websocket",
        }
    }
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
    /// The agent's `maxSessionDuration` when it started, in seconds.
    pub max_duration_seconds: u32,
    /// When the data plane reported it started.
    pub started_at: Option<String>,
    /// While it is active, when the control plane ends it if the data plane has not (Unix
    /// seconds): [`START_TIMEOUT`] after its start while starting, its maximum duration and
    /// [`EXPIRY_GRACE`] after it started once started.
    pub deadline: Option<i64>,
}

impl SessionRecord {
    /// A new session of `agent`'s service on `deployment_id`, starting at `now` (its id is a
    /// UUIDv7 of that instant).
    pub fn new(
        agent: &AgentRecord,
        deployment_id: &str,
        request: SessionRequest,
        now: OffsetDateTime,
    ) -> Self {
        let created_at = rfc3339_millis(now);
        SessionRecord {
            namespace: agent.owner.namespace.clone(),
            agent_name: agent.name.clone(),
            service_id: agent.service_id.clone(),
            session_id: session_id_at(now),
            deployment_id: deployment_id.to_owned(),
            state: SessionState::Starting,
            version: 1,
            created_at: created_at.clone(),
            updated_at: created_at,
            ended_at: None,
            completion_status: None,
            bot_start_seconds: None,
            cold_start: None,
            connection: None,
            request,
            observed_at_nanos: None,
            stop_requested_at: None,
            expires_at: None,
            max_duration_seconds: agent.config().max_session_duration,
            started_at: None,
            deadline: Some((now + START_TIMEOUT).unix_timestamp()),
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

    /// The session started at `at` (the data plane's report), connected with `connection`, at
    /// the next version: due to end by its maximum duration and the grace. The start's request
    /// is dropped: the data plane has it, and it may hold what the end user's client sent.
    /// A second `started` report changes what to connect with, not when it started. The deadline
    /// counts from `at` or `now` (the control plane's clock), the later: a data plane whose
    /// clock runs behind never gets a live session expired early.
    pub fn started(&self, connection: Connection, at: OffsetDateTime, now: OffsetDateTime) -> Self {
        let ends_by =
            at.max(now) + Duration::seconds(i64::from(self.max_duration_seconds)) + EXPIRY_GRACE;
        let (started_at, deadline) = match (&self.started_at, self.state) {
            (Some(started_at), SessionState::Started) => (started_at.clone(), self.deadline),
            _ => (rfc3339_millis(at), Some(ends_by.unix_timestamp())),
        };
        SessionRecord {
            state: SessionState::Started,
            version: self.version + 1,
            updated_at: rfc3339_millis(at),
            started_at: Some(started_at),
            connection: Some(connection),
            request: SessionRequest::default(),
            deadline,
            ..self.clone()
        }
    }

    /// The session ended at `now` as `state` (ended or failed) with `completion_status`, at the
    /// next version; what it was given to connect with, and the start's request, are dropped.
    pub fn ended(&self, state: SessionState, completion_status: &str, now: &str) -> Self {
        SessionRecord {
            state,
            version: self.version + 1,
            updated_at: now.to_owned(),
            ended_at: Some(now.to_owned()),
            completion_status: Some(completion_status.to_owned()),
            connection: None,
            request: SessionRequest::default(),
            deadline: None,
            ..self.clone()
        }
    }

    /// The session as the control plane ends it at `now` when its deadline has passed without
    /// the data plane's word: failed (`startTimeout`) while starting, ended (`expired`) once
    /// started, and the data plane asked to stop it. `None` while it is within its deadline, or
    /// no longer active.
    pub fn overdue(&self, now: OffsetDateTime) -> Option<Self> {
        let deadline = self.deadline.filter(|_| self.is_active())?;
        if now.unix_timestamp() < deadline {
            return None;
        }
        let at = rfc3339_millis(now);
        let ended = match self.state {
            SessionState::Starting => {
                self.ended(SessionState::Failed, completion::START_TIMEOUT, &at)
            }
            _ => self.ended(SessionState::Ended, completion::EXPIRED, &at),
        };
        Some(ended.with_stop_requested(&at))
    }

    /// The same write with the data plane asked to stop the session at `at`, unless it was asked
    /// before (the stream publishes the first ask only).
    pub fn with_stop_requested(mut self, at: &str) -> Self {
        self.stop_requested_at.get_or_insert_with(|| at.to_owned());
        self
    }
}

/// A UUIDv7 of `at`: session ids sort by the millisecond their session started in, so that a
/// time range of an agent's sessions is a range of its keys (within one millisecond, the random
/// bits order them).
pub fn session_id_at(at: OffsetDateTime) -> String {
    let millis = u64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
    let timestamp = uuid::Timestamp::from_unix(
        uuid::NoContext,
        millis / 1_000,
        u32::try_from(millis % 1_000).unwrap_or(0) * 1_000_000,
    );
    uuid::Uuid::new_v7(timestamp).to_string()
}

/// The first key of a session id at or after `unix_seconds`: the 48-bit millisecond prefix of
/// a UUIDv7, as its text begins (`xxxxxxxx-xxxx`). Every id of that second or later sorts at or
/// after it; every earlier one before.
pub fn session_id_floor(unix_seconds: i64) -> String {
    let millis = u64::try_from(unix_seconds)
        .unwrap_or(0)
        .saturating_mul(1_000);
    let hex = format!("{:012x}", millis & 0xffff_ffff_ffff);
    format!("{}-{}", &hex[..8], &hex[8..])
}
