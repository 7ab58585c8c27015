//! The container contract (contract section 12), the anchor's: `GET /readyz` answers 200 when
//! the replica is ready; `POST /bot` starts a session and stays open for the whole of it, its
//! answer ending it. The request is written on a connection of its own, so that "accepted" (the
//! request was written) and "ended" (it was answered) are two moments the reconciler reports.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long `/readyz` may take before the replica counts as not ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(1);
/// How long connecting and writing `POST /bot` may take before the hand-over fails.
pub const HAND_OVER_TIMEOUT: Duration = Duration::from_secs(5);

pub const SESSION_ID_HEADER: &str = "x-daily-session-id";
pub const TRANSPORT_HEADER: &str = "x-daily-transport-type";
pub const ROOM_URL_HEADER: &str = "x-daily-room-url";
pub const ROOM_TOKEN_HEADER: &str = "x-daily-room-token";

/// What a session's replica is handed: the start's body and what the data plane made for it.
/// As JSON it is the holder's `POST /session` body (camelCase).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BotRequest {
    pub session_id: String,
    /// The start's `body`, an object (`{}` when none).
    pub body: serde_json::Value,
    /// The transport the start asked for, by the name `X-Daily-Transport-Type` carries: `daily`,
    /// `webrtc` or `websocket`, `shared::session::Transport`'s JSON names. Text rather than that
    /// enum: the holder only forwards it, and depending on `shared` would build the AWS SDKs
    /// into the holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<DailyRoom>,
}

/// A Daily room made for a session, and the token to join it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DailyRoom {
    pub url: String,
    pub token: String,
}

impl fmt::Debug for DailyRoom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DailyRoom {{ url: {}, token: <redacted> }}", self.url)
    }
}

/// How a session's `POST /bot` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BotOutcome {
    /// A 2xx answer.
    Completed,
    /// Another status, or the connection closed first.
    AgentError { reason: String },
}

/// Why a replica did not take `POST /bot`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandOverError {
    #[error("connecting to the agent failed: {0}")]
    ConnectRefused(String),
    #[error("writing POST /bot failed: {0}")]
    WriteFailed(String),
    #[error("the agent did not take POST /bot within {0:?}")]
    Timeout(Duration),
}

/// A `POST /bot` the replica accepted, waiting for its answer.
pub struct HeldSession {
    answer: Pin<Box<dyn Future<Output = BotOutcome> + Send>>,
    /// The connection's task: aborted when the session is dropped, which closes the connection.
    _connection: AbortOnDrop,
}

impl fmt::Debug for HeldSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HeldSession")
    }
}

impl HeldSession {
    /// Waits for the answer, however long the session lasts (up to 4 hours).
    pub async fn outcome(self) -> BotOutcome {
        self.answer.await
    }
}

/// The most of a probe's answer body read: what an agent sends beyond it is not waited for.
const PROBE_BODY_LIMIT: usize = 64 * 1024;

/// Whether the replica at `addr` answers `GET /readyz` with 200 within [`READY_TIMEOUT`].
pub async fn is_ready(addr: SocketAddr) -> bool {
    matches!(
        tokio::time::timeout(READY_TIMEOUT, probe(addr, "/readyz")).await,
        Ok(Some(StatusCode::OK))
    )
}

/// Whether the agent at `addr` answers `GET /livez` at all (any status: an answer is life)
/// within `within`: a paused or hung process answers nothing.
pub async fn answers(addr: SocketAddr, within: Duration) -> bool {
    matches!(
        tokio::time::timeout(within, probe(addr, "/livez")).await,
        Ok(Some(_))
    )
}

/// `GET path` on a connection of its own: the status, once the answer was read to its end.
/// The body is read before the connection closes: closed with the body unread, the kernel
/// resets it, and an agent's HTTP server logs the reset (a traceback every probe, in the
/// customer's log).
async fn probe(addr: SocketAddr, path: &str) -> Option<StatusCode> {
    let (mut sender, _connection) = connect::<Empty<Bytes>>(addr).await.ok()?;
    let request = Request::get(path)
        .header(HOST, addr.to_string())
        .body(Empty::new())
        .ok()?;
    let answer = sender.send_request(request).await.ok()?;
    let status = answer.status();
    // A body past the limit or cut short still leaves the status said.
    let _ = Limited::new(answer.into_body(), PROBE_BODY_LIMIT)
        .collect()
        .await;
    Some(status)
}

/// Connects and writes `POST /bot` with the headers of section 12; resolves once the request is
/// written on an open connection (the agent accepted it), within [`HAND_OVER_TIMEOUT`].
pub async fn hand_over(
    addr: SocketAddr,
    request: &BotRequest,
) -> Result<HeldSession, HandOverError> {
    let http_request = bot_request(addr, request)?;
    let held = tokio::time::timeout(HAND_OVER_TIMEOUT, write_bot(addr, http_request))
        .await
        .map_err(|_| HandOverError::Timeout(HAND_OVER_TIMEOUT))?;
    match &held {
        Ok(_) => tracing::info!(session_id = %request.session_id, %addr, "POST /bot accepted"),
        Err(error) => {
            tracing::warn!(session_id = %request.session_id, %addr, %error, "POST /bot not accepted")
        }
    }
    held
}

/// The request of section 12: the body as JSON and the session's headers.
fn bot_request(addr: SocketAddr, request: &BotRequest) -> Result<Request<Bytes>, HandOverError> {
    let body = serde_json::to_vec(&request.body)
        .map_err(|error| HandOverError::WriteFailed(format!("the body: {error}")))?;
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri("/bot")
        .header(HOST, addr.to_string())
        .header(CONTENT_TYPE, "application/json")
        .header(
            SESSION_ID_HEADER,
            value(SESSION_ID_HEADER, &request.session_id)?,
        );
    if let Some(transport) = &request.transport {
        builder = builder.header(TRANSPORT_HEADER, value(TRANSPORT_HEADER, transport)?);
    }
    if let Some(room) = &request.room {
        builder = builder
            .header(ROOM_URL_HEADER, value(ROOM_URL_HEADER, &room.url)?)
            .header(ROOM_TOKEN_HEADER, value(ROOM_TOKEN_HEADER, &room.token)?);
    }
    builder
        .body(Bytes::from(body))
        .map_err(|error| HandOverError::WriteFailed(error.to_string()))
}

/// A header's value; the error names the header, never the value (a token is a secret).
fn value(name: &str, text: &str) -> Result<HeaderValue, HandOverError> {
    HeaderValue::from_str(text)
        .map_err(|_| HandOverError::WriteFailed(format!("{name} is not a valid header value")))
}

async fn write_bot(
    addr: SocketAddr,
    request: Request<Bytes>,
) -> Result<HeldSession, HandOverError> {
    let (mut sender, connection) = connect::<Announced>(addr).await?;
    let (written_tx, mut written) = oneshot::channel();
    let (parts, bytes) = request.into_parts();
    let body = Announced {
        data: Some(bytes),
        written: Some(written_tx),
    };
    let mut answer = Box::pin(sender.send_request(Request::from_parts(parts, body)));
    tokio::select! {
        biased;
        signalled = &mut written => match signalled {
            Ok(()) => {}
            // The body was dropped unwritten: the connection failed; its error says why.
            Err(_) => return Err(HandOverError::WriteFailed(match answer.await {
                Err(error) => error.to_string(),
                Ok(response) => format!("answered {} before the body was written", response.status()),
            })),
        },
        // Answered (or failed) before the whole body was taken: the session is already over.
        early = &mut answer => match early {
            Err(error) => return Err(HandOverError::WriteFailed(error.to_string())),
            Ok(response) => {
                let outcome = outcome_of(Ok(response));
                return Ok(HeldSession { answer: Box::pin(async move { outcome }), _connection: connection });
            }
        },
    }
    Ok(HeldSession {
        answer: Box::pin(async move {
            // The sender lives as long as the answer is awaited: the connection stays open.
            let _sender = sender;
            outcome_of(answer.await)
        }),
        _connection: connection,
    })
}

fn outcome_of(answer: hyper::Result<Response<Incoming>>) -> BotOutcome {
    match answer {
        Ok(response) if response.status().is_success() => BotOutcome::Completed,
        Ok(response) => BotOutcome::AgentError {
            reason: format!("answered {}", response.status().as_u16()),
        },
        Err(_) => BotOutcome::AgentError {
            reason: "the connection closed before an answer".to_owned(),
        },
    }
}

type Sender<B> = hyper::client::conn::http1::SendRequest<B>;

/// A connection of its own to `addr`, its task aborted when the guard is dropped.
async fn connect<B>(addr: SocketAddr) -> Result<(Sender<B>, AbortOnDrop), HandOverError>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|error| HandOverError::ConnectRefused(error.to_string()))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| HandOverError::ConnectRefused(error.to_string()))?;
    let task = tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%addr, %error, "agent connection ended");
        }
    });
    Ok((sender, AbortOnDrop(task)))
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A whole JSON body that says when the connection has taken its last frame: the request is
/// then written, and the agent has accepted the session.
struct Announced {
    data: Option<Bytes>,
    written: Option<oneshot::Sender<()>>,
}

impl Body for Announced {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let frame = this.data.take().map(|data| Ok(Frame::data(data)));
        // The last frame (or the end) is handed over now: nothing more to write.
        if let Some(written) = this.written.take() {
            let _ = written.send(());
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        let length = self.data.as_ref().map_or(0, |data| data.len() as u64);
        SizeHint::with_exact(length)
    }
}

#[cfg(test)]
mod tests;
