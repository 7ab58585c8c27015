//! The data plane's side of the holder: a session handed to a replica's holder, and what the
//! holder holds (at once, or as a long poll that answers when the session ends), each request
//! carrying the holder's token.

use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::contract::HAND_OVER_TIMEOUT;
use crate::{BotRequest, Endpoint, HolderState, MAX_WAIT, Refusal};

/// Beyond the agent's own hand-over bound and a long poll's wait: the round trip to the holder.
const MARGIN: Duration = Duration::from_secs(5);

/// The holder could not be asked, or said no.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HolderError {
    #[error("the holder could not be reached: {0}")]
    Unreachable(String),
    #[error("the holder did not answer within {0:?}")]
    Timeout(Duration),
    /// 502: the agent did not take `POST /bot`.
    #[error("{reason}")]
    Refused { reason: String },
    /// 503: the agent showed no life just before the hand-over (`/readyz`); nothing was
    /// handed, the session is free for another replica.
    #[error("{reason}")]
    NotAlive { reason: String },
    /// 409: the replica was handed another session.
    #[error("the replica holds another session")]
    Busy,
    #[error("the holder answered {status}")]
    Unexpected { status: u16 },
    #[error("the holder's answer is not understood: {0}")]
    Malformed(String),
}

/// How a hand-over was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// 202: the agent accepted `POST /bot` now.
    Now,
    /// 200: the holder holds (or held) this session already.
    Already,
}

/// Hands `request` to the holder at `holder`: `Ok` once the agent accepted `POST /bot`.
pub async fn hand_over(holder: &Endpoint, request: &BotRequest) -> Result<Accepted, HolderError> {
    let body =
        serde_json::to_vec(request).map_err(|error| HolderError::Malformed(error.to_string()))?;
    // The agent's readiness is asked first, then POST /bot.
    let bound = crate::contract::READY_TIMEOUT + HAND_OVER_TIMEOUT + MARGIN;
    let (status, answer) = exchange(holder, Method::POST, "/session", body, bound).await?;
    let reason = || -> Result<String, HolderError> {
        let refusal: Refusal = serde_json::from_slice(&answer)
            .map_err(|error| HolderError::Malformed(error.to_string()))?;
        Ok(refusal.reason)
    };
    match status {
        StatusCode::ACCEPTED => Ok(Accepted::Now),
        StatusCode::OK => Ok(Accepted::Already),
        StatusCode::CONFLICT => Err(HolderError::Busy),
        StatusCode::BAD_GATEWAY => Err(HolderError::Refused { reason: reason()? }),
        StatusCode::SERVICE_UNAVAILABLE => Err(HolderError::NotAlive { reason: reason()? }),
        other => Err(HolderError::Unexpected {
            status: other.as_u16(),
        }),
    }
}

/// What the holder holds; with a `wait` (at most [`MAX_WAIT`]) it answers once the session
/// ended, or after `wait` with the state then.
pub async fn state(holder: &Endpoint, wait: Duration) -> Result<HolderState, HolderError> {
    let wait = wait.min(MAX_WAIT);
    let path = match wait.as_secs() {
        0 => "/state".to_owned(),
        seconds => format!("/state?waitSeconds={seconds}"),
    };
    let (status, answer) = exchange(holder, Method::GET, &path, Vec::new(), wait + MARGIN).await?;
    if status != StatusCode::OK {
        return Err(HolderError::Unexpected {
            status: status.as_u16(),
        });
    }
    serde_json::from_slice(&answer).map_err(|error| HolderError::Malformed(error.to_string()))
}

/// One request on a connection of its own, answered within `bound`: the status and body.
async fn exchange(
    holder: &Endpoint,
    method: Method,
    path: &str,
    body: Vec<u8>,
    bound: Duration,
) -> Result<(StatusCode, Bytes), HolderError> {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(HOST, holder.address.to_string())
        .header(AUTHORIZATION, format!("Bearer {}", holder.token.as_str()))
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|_| HolderError::Malformed("the holder's token is not a header value".into()))?;
    let ask = async {
        let stream = TcpStream::connect(holder.address)
            .await
            .map_err(|error| HolderError::Unreachable(error.to_string()))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| HolderError::Unreachable(error.to_string()))?;
        let driver = tokio::spawn(connection);
        let answered = async {
            let response = sender.send_request(request).await?;
            let status = response.status();
            let bytes = response.into_body().collect().await?.to_bytes();
            Ok::<_, hyper::Error>((status, bytes))
        }
        .await;
        driver.abort();
        answered.map_err(|error| HolderError::Unreachable(error.to_string()))
    };
    tokio::time::timeout(bound, ask)
        .await
        .map_err(|_| HolderError::Timeout(bound))?
}
