//! The holder's server: takes one session from the data plane (its token on every request),
//! hands it to the agent next to it once the agent shows life (`/readyz` 200 just before,
//! `contract::hand_over`), watches the agent while it holds the session (`/livez`), and keeps
//! how it ended as the state it reports until its replica is stopped. It never exits by
//! itself: a data plane restarted at any moment still learns the session and how it ended.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use time::OffsetDateTime;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, watch};
use tokio::task::JoinSet;

use subtle::ConstantTimeEq;

use crate::contract::{self, BotOutcome, HeldSession};
use crate::{BotRequest, Checks, HolderState, MAX_WAIT, Outcome, Refusal, Token};

/// The largest `POST /session` body taken (the start's body is bounded well below this).
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// One replica's holder: the agent it hands to and what it holds.
pub struct Holder {
    agent: SocketAddr,
    token: Token,
    checks: Checks,
    state: watch::Sender<HolderState>,
    /// Held through a hand-over, so that hand-overs run one at a time; it keeps the session the
    /// agent did not take and why (the replica is spent: only the data plane's stop follows).
    handing: Mutex<Option<(String, String)>>,
}

impl Holder {
    /// A holder handing sessions to the agent at `agent`, to requests that carry `token`,
    /// watching the agent by `checks` while it holds one.
    pub fn new(agent: SocketAddr, token: Token, checks: Checks) -> Arc<Self> {
        Arc::new(Holder {
            agent,
            token,
            checks,
            state: watch::Sender::new(HolderState::Idle),
            handing: Mutex::new(None),
        })
    }

    /// What it holds now.
    pub fn state(&self) -> HolderState {
        self.state.borrow().clone()
    }

    /// `POST /session`: hands the session over unless one was handed already.
    async fn take(self: &Arc<Self>, request: BotRequest) -> Response<Full<Bytes>> {
        let mut refused = self.handing.lock().await;
        if let Some((session_id, reason)) = &*refused {
            return match *session_id == request.session_id {
                true => refusal(reason),
                false => document(StatusCode::CONFLICT, &self.state()),
            };
        }
        let held = self.state();
        if let Some((session_id, _)) = held.session() {
            let status = match session_id == request.session_id {
                true => StatusCode::OK,
                false => StatusCode::CONFLICT,
            };
            return document(status, &held);
        }
        let session_id = request.session_id.clone();
        // A hand-over goes to an agent that shows life now: written to a frozen one, the
        // request would sit in its socket's buffer and look accepted.
        if !contract::is_ready(self.agent).await {
            let reason = format!(
                "the agent did not answer GET /readyz 200 within {:?} just before the hand-over",
                contract::READY_TIMEOUT
            );
            tracing::warn!(%session_id, %reason, "hand-over refused");
            return document(StatusCode::SERVICE_UNAVAILABLE, &Refusal { reason });
        }
        let since = OffsetDateTime::now_utc();
        match contract::hand_over(self.agent, &request).await {
            Ok(session) => {
                tracing::info!(%session_id, "holding a session");
                self.state.send_replace(HolderState::Holding {
                    session_id: session_id.clone(),
                    since,
                });
                tokio::spawn(self.clone().hold(session, session_id, since));
                document(StatusCode::ACCEPTED, &self.state())
            }
            Err(error) => {
                let reason = format!("the agent did not take the session: {error}");
                tracing::warn!(%session_id, %reason, "hand-over refused");
                self.state.send_replace(HolderState::Ended {
                    session_id: session_id.clone(),
                    since,
                    ended_at: OffsetDateTime::now_utc(),
                    outcome: Outcome::AgentError,
                    reason: Some(reason.clone()),
                });
                let answer = refusal(&reason);
                *refused = Some((session_id, reason));
                answer
            }
        }
    }

    /// Waits for the agent's answer, or for it to stop answering its checks (the session's
    /// `POST /bot` is then dropped, closing its connection), and keeps it as the state.
    async fn hold(
        self: Arc<Self>,
        session: HeldSession,
        session_id: String,
        since: OffsetDateTime,
    ) {
        let outcome = tokio::select! {
            outcome = session.outcome() => outcome,
            reason = self.stopped_answering() => BotOutcome::AgentError { reason },
        };
        let (outcome, reason) = match outcome {
            BotOutcome::Completed => (Outcome::Completed, None),
            BotOutcome::AgentError { reason } => (Outcome::AgentError, Some(reason)),
        };
        tracing::info!(%session_id, ?outcome, reason, "the session ended");
        self.state.send_replace(HolderState::Ended {
            session_id,
            since,
            ended_at: OffsetDateTime::now_utc(),
            outcome,
            reason,
        });
    }

    /// Once the agent has answered nothing to [`Checks::misses`] checks in a row: why.
    async fn stopped_answering(&self) -> String {
        let Checks { every, misses } = self.checks;
        let mut missed = 0;
        while missed < misses {
            tokio::time::sleep(every).await;
            match contract::answers(self.agent, every).await {
                true => missed = 0,
                false => {
                    missed += 1;
                    tracing::warn!(missed, misses, "the agent did not answer GET /livez");
                }
            }
        }
        format!(
            "the agent stopped answering: no answer to GET /livez {misses} times, {every:?} apart"
        )
    }

    /// Whether a request carries this holder's token (compared in constant time: the agent
    /// beside the holder may time its tries).
    fn authorized(&self, headers: &http::HeaderMap) -> bool {
        let Some(value) = headers.get(http::header::AUTHORIZATION) else {
            return false;
        };
        let given = value
            .as_bytes()
            .strip_prefix(b"Bearer ")
            .unwrap_or_default();
        given.ct_eq(self.token.as_str().as_bytes()).into()
    }

    /// `GET /state`: at once, or once ended within `wait`.
    async fn report(&self, wait: Duration) -> Response<Full<Bytes>> {
        if !wait.is_zero() {
            let mut changes = self.state.subscribe();
            let ended = changes.wait_for(|state| matches!(state, HolderState::Ended { .. }));
            // Past the wait, the state as it is then answers: not an error.
            let _ = tokio::time::timeout(wait, ended).await;
        }
        document(StatusCode::OK, &self.state())
    }
}

/// Serves `holder` on `listener` until the task is aborted.
pub async fn serve(listener: TcpListener, holder: Arc<Holder>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, holder.clone()));
                }
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    // A full descriptor table: let connections end before accepting again.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next() => {}
        }
    }
}

async fn connection(stream: TcpStream, holder: Arc<Holder>) {
    let service = service_fn(move |request| answer(holder.clone(), request));
    let served = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(error) = served {
        tracing::debug!(%error, "a connection to the holder ended");
    }
}

async fn answer(
    holder: Arc<Holder>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    if !holder.authorized(&parts.headers) {
        tracing::warn!(method = %parts.method, path = parts.uri.path(), "a request without the holder's token refused (the agent's?)");
        let reason = "the holder answers the data plane alone: its token is missing or wrong";
        return Ok(document(
            StatusCode::UNAUTHORIZED,
            &Refusal {
                reason: reason.to_owned(),
            },
        ));
    }
    Ok(match (&parts.method, parts.uri.path()) {
        (&Method::POST, "/session") => match read_request(body).await {
            Ok(request) => holder.take(request).await,
            Err(problem) => document(StatusCode::BAD_REQUEST, &Refusal { reason: problem }),
        },
        (&Method::GET, "/state") => match wait_of(parts.uri.query()) {
            Some(wait) => holder.report(wait).await,
            None => {
                let reason = "waitSeconds must be a whole number of seconds".to_owned();
                document(StatusCode::BAD_REQUEST, &Refusal { reason })
            }
        },
        _ => document(
            StatusCode::NOT_FOUND,
            &Refusal {
                reason: "not found".to_owned(),
            },
        ),
    })
}

/// The body as a [`BotRequest`]; the error never quotes it (it may carry a room token).
async fn read_request(body: Incoming) -> Result<BotRequest, String> {
    let bytes = Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|_| "the body could not be read whole".to_owned())?
        .to_bytes();
    serde_json::from_slice(&bytes).map_err(|error| {
        format!(
            "the body is not a session: {} at line {} column {}",
            error_kind(&error),
            error.line(),
            error.column()
        )
    })
}

fn error_kind(error: &serde_json::Error) -> &'static str {
    match error.classify() {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax => "not JSON",
        serde_json::error::Category::Data => "a field is missing or of the wrong type",
        serde_json::error::Category::Eof => "cut short",
    }
}

/// `waitSeconds` from the query, at most [`MAX_WAIT`]; zero without it; `None` when malformed.
fn wait_of(query: Option<&str>) -> Option<Duration> {
    let Some(query) = query else {
        return Some(Duration::ZERO);
    };
    let mut wait = Duration::ZERO;
    for pair in query.split('&') {
        if let Some(seconds) = pair.strip_prefix("waitSeconds=") {
            wait = Duration::from_secs(seconds.parse::<u64>().ok()?).min(MAX_WAIT);
        }
    }
    Some(wait)
}

fn refusal(reason: &str) -> Response<Full<Bytes>> {
    let refusal = Refusal {
        reason: reason.to_owned(),
    };
    document(StatusCode::BAD_GATEWAY, &refusal)
}

fn document(status: StatusCode, document: &impl Serialize) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(document).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
