//! Just enough of the Lambda Runtime API, on loopback, to start a function's release binary and
//! time it: when it first polls for work (the end of its init), and how long each invocation
//! takes from the event handed out to the response posted.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use tokio::sync::{Mutex, mpsc};

/// What the function did, with when the bench saw it.
#[derive(Debug)]
pub enum Seen {
    /// A `GET .../invocation/next`.
    Poll(Instant),
    /// A response (or an error) posted for an invocation.
    Answer {
        at: Instant,
        error: bool,
        body: Vec<u8>,
    },
}

struct State {
    events: Mutex<mpsc::UnboundedReceiver<Vec<u8>>>,
    seen: mpsc::UnboundedSender<Seen>,
    next_id: std::sync::atomic::AtomicU64,
}

pub struct RuntimeApi {
    pub address: SocketAddr,
    events: mpsc::UnboundedSender<Vec<u8>>,
    seen: mpsc::UnboundedReceiver<Seen>,
    server: tokio::task::JoinHandle<()>,
}

impl RuntimeApi {
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (seen_tx, seen_rx) = mpsc::unbounded_channel();
        let state = Arc::new(State {
            events: Mutex::new(events_rx),
            seen: seen_tx,
            next_id: Default::default(),
        });
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(serve(&state, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(RuntimeApi {
            address,
            events: events_tx,
            seen: seen_rx,
            server,
        })
    }

    /// Hands `event` to the function's next poll.
    pub fn send(&self, event: Vec<u8>) {
        let _ = self.events.send(event);
    }

    /// The next thing the function did, if it did anything within `timeout`.
    pub async fn next(&mut self, timeout: Duration) -> Option<Seen> {
        tokio::time::timeout(timeout, self.seen.recv())
            .await
            .ok()
            .flatten()
    }

    /// Waits for the function's next poll.
    pub async fn poll(&mut self, timeout: Duration) -> Option<Instant> {
        loop {
            match self.next(timeout).await? {
                Seen::Poll(at) => return Some(at),
                Seen::Answer { .. } => continue,
            }
        }
    }

    /// Waits for the function's next answer.
    pub async fn answer(&mut self, timeout: Duration) -> Option<(Instant, bool, Vec<u8>)> {
        loop {
            match self.next(timeout).await? {
                Seen::Answer { at, error, body } => return Some((at, error, body)),
                Seen::Poll(_) => continue,
            }
        }
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn serve(state: &State, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    if method == Method::GET && path.ends_with("/runtime/invocation/next") {
        let _ = state.seen.send(Seen::Poll(Instant::now()));
        let event = state.events.lock().await.recv().await.unwrap_or_default();
        let id = state
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let deadline = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis()
            + 60_000;
        return Response::builder()
            .header("lambda-runtime-aws-request-id", format!("bench-{id}"))
            .header("lambda-runtime-deadline-ms", deadline.to_string())
            .header(
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:123456789012:function:bench",
            )
            .header(
                "lambda-runtime-trace-id",
                "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
            )
            .body(Full::new(Bytes::from(event)))
            .unwrap_or_default();
    }
    if method == Method::POST {
        let error = path.ends_with("/error");
        let body = request
            .into_body()
            .collect()
            .await
            .map(|body| body.to_bytes().to_vec())
            .unwrap_or_default();
        let _ = state.seen.send(Seen::Answer {
            at: Instant::now(),
            error,
            body,
        });
        return Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Full::new(Bytes::new()))
            .unwrap_or_default();
    }
    Response::builder()
        .status(StatusCode::NOT_FOUND)
        .body(Full::new(Bytes::new()))
        .unwrap_or_default()
}
