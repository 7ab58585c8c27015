//! The holder (docs/data-plane.md, "The holder"): a small HTTP
//! server in every replica, in the agent's network namespace on [`HOLDER_PORT`], that takes a
//! session from the data plane and holds the agent's `POST /bot` for the whole of it. The
//! session then lives and dies with its replica: a data plane restarted at any moment asks the
//! holder what it holds ([`HolderState`]) and adopts it.
//!
//! - `POST /session` with a [`BotRequest`] as JSON: 202 once the agent accepted `POST /bot`,
//!   200 for the same session again, 409 for another, 503 `{"reason"}` when the agent did not
//!   answer `GET /readyz` 200 just before (a frozen or unready agent is never handed a
//!   session), 502 `{"reason"}` when it did not take `POST /bot`;
//! - `GET /state[?waitSeconds=N]`: the [`HolderState`]; with `waitSeconds` (at most
//!   [`MAX_WAIT`]) it answers once the state is `ended`, or after N seconds with the state then.
//!
//! Every request carries `Authorization: Bearer <token>` ([`Token`]), or is refused 401: the
//! agent shares the holder's network namespace and reaches its port, and must not hand itself a
//! session the data plane did not (its real session would then be refused). While it holds a
//! session the holder asks the agent `GET /livez` every [`Checks::every`]; an agent that answers
//! nothing [`Checks::misses`] times in a row has its session ended `agentError`. [`server`] is
//! the holder, [`client`] the data plane's side, and [`contract`] the container contract (the
//! anchor's `GET /readyz` and `POST /bot`) that the holder speaks to the agent and the data
//! plane asks readiness by.
//!
//! A crate of its own, apart from the data plane: the holder runs in every replica, and its
//! build needs none of the data plane's AWS SDKs.

pub mod client;
pub mod contract;
pub mod server;

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

pub use crate::contract::BotRequest;

/// The port the holder serves on, beside the agent's 8080.
pub const HOLDER_PORT: u16 = 18080;
/// The longest `GET /state?waitSeconds` waits.
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// Where the holder finds the agent when `HOLDER_AGENT_ADDR` does not say.
pub const DEFAULT_AGENT_ADDR: &str = "127.0.0.1:8080";

/// The holder's environment: its token (required) and its checks of a busy agent.
pub const TOKEN_ENV: &str = "HOLDER_TOKEN";
pub const CHECK_SECONDS_ENV: &str = "HOLDER_CHECK_SECONDS";
pub const CHECK_MISSES_ENV: &str = "HOLDER_CHECK_MISSES";

/// What the data plane's requests to a holder carry, and the holder asks of them: given to the
/// holder in its environment and kept by the engine beside the replica (a label, a task's
/// tag), never in the agent's reach. Its `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    pub fn new(text: impl Into<String>) -> Self {
        Token(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Where a replica's holder answers, and its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub address: SocketAddr,
    pub token: Token,
}

/// How the holder watches a busy agent: `GET /livez` every `every` (each waited for as long),
/// and the session ended after `misses` unanswered in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checks {
    pub every: Duration,
    pub misses: u32,
}

impl Default for Checks {
    /// 5 s apart, 3 missed: an agent that answers nothing for 15 s, whatever it is busy with,
    /// has stopped (an event loop blocked that long has already failed its conversation).
    fn default() -> Self {
        Checks {
            every: Duration::from_secs(5),
            misses: 3,
        }
    }
}

/// What the holder holds, as `GET /state` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum HolderState {
    /// No session handed over yet.
    Idle,
    /// The agent accepted `POST /bot` at `since` and has not answered.
    #[serde(rename_all = "camelCase")]
    Holding {
        session_id: String,
        #[serde(with = "time::serde::rfc3339")]
        since: OffsetDateTime,
    },
    /// The session is over; the holder says so until its replica is stopped.
    #[serde(rename_all = "camelCase")]
    Ended {
        session_id: String,
        #[serde(with = "time::serde::rfc3339")]
        since: OffsetDateTime,
        #[serde(with = "time::serde::rfc3339")]
        ended_at: OffsetDateTime,
        outcome: Outcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl HolderState {
    /// The session held or ended, and since when its lines are its own.
    pub fn session(&self) -> Option<(&str, OffsetDateTime)> {
        match self {
            HolderState::Idle => None,
            HolderState::Holding { session_id, since }
            | HolderState::Ended {
                session_id, since, ..
            } => Some((session_id, *since)),
        }
    }
}

/// How a held session ended (contract section 12: a 2xx answer, or anything else).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Completed,
    AgentError,
}

/// A refusal's body (400, 401, 502, 503): why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub reason: String,
}

#[cfg(test)]
mod tests;
