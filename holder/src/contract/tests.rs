//! The contract's client against a tiny local agent whose answers the test decides.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Duration, timeout};

use super::*;

const BOUND: Duration = Duration::from_secs(10);

/// What the agent received, and how the test has it answer.
struct Received {
    path: String,
    headers: HeaderMap,
    body: Bytes,
    reply: oneshot::Sender<u16>,
}

/// A concrete error: hyper's bound on a boxed `dyn Error` trips the spawned future's inference.
type ServiceError = std::io::Error;

/// An agent that hands each request to the test and answers with the status the test sends;
/// when the test drops the reply instead, it drops the connection without an answer.
async fn agent() -> (SocketAddr, mpsc::UnboundedReceiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (requests, received) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let requests = requests.clone();
            let service = service_fn(move |request: Request<Incoming>| {
                let requests = requests.clone();
                async move { answered(requests, request).await }
            });
            tokio::spawn(async move {
                let connection = hyper::server::conn::http1::Builder::new();
                let _ = connection
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, received)
}

/// The status the test sends, or an error (the connection dropped) when it drops the reply.
async fn answered(
    requests: mpsc::UnboundedSender<Received>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, ServiceError> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => return Err(std::io::Error::other(error)),
    };
    let (reply, status) = oneshot::channel();
    let path = parts.uri.path().to_owned();
    let headers = parts.headers;
    let _ = requests.send(Received {
        path,
        headers,
        body,
        reply,
    });
    match status.await {
        Ok(status) => Ok(Response::builder()
            .status(status)
            .body(Full::new(Bytes::new()))
            .unwrap()),
        Err(dropped) => Err(std::io::Error::other(dropped)),
    }
}

async fn next(received: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    timeout(BOUND, received.recv()).await.unwrap().unwrap()
}

fn request() -> BotRequest {
    BotRequest {
        session_id: "0198c0de-0000-7000-8000-000000000001".into(),
        body: json!({"durationSeconds": 30, "greeting": "hello"}),
        transport: Some("daily".into()),
        room: Some(DailyRoom {
            url: "https://acme.daily.co/room-1".into(),
            token: "room-token-secret".into(),
        }),
    }
}

async fn held(addr: SocketAddr, request: &BotRequest) -> HeldSession {
    timeout(BOUND, hand_over(addr, request))
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn post_bot_carries_the_body_and_the_session_headers() {
    let (addr, mut received) = agent().await;
    let session = held(addr, &request()).await;
    let got = next(&mut received).await;
    assert_eq!(got.path, "/bot");
    let header = |name: &str| {
        got.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert_eq!(header("host"), Some(addr.to_string()));
    assert_eq!(
        header("x-daily-session-id").as_deref(),
        Some("0198c0de-0000-7000-8000-000000000001")
    );
    assert_eq!(header("x-daily-transport-type").as_deref(), Some("daily"));
    assert_eq!(
        header("x-daily-room-url").as_deref(),
        Some("https://acme.daily.co/room-1")
    );
    assert_eq!(
        header("x-daily-room-token").as_deref(),
        Some("room-token-secret")
    );
    let body: serde_json::Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(body, request().body);
    got.reply.send(200).unwrap();
    assert_eq!(
        timeout(BOUND, session.outcome()).await.unwrap(),
        BotOutcome::Completed
    );
}

#[tokio::test]
async fn the_transport_and_room_headers_are_sent_only_when_asked_for() {
    let (addr, mut received) = agent().await;
    for transport in [Some("webrtc"), Some("websocket"), None] {
        let request = BotRequest {
            body: json!({}),
            transport: transport.map(str::to_owned),
            room: None,
            ..request()
        };
        let _session = held(addr, &request).await;
        let got = next(&mut received).await;
        let header = |name: &str| {
            got.headers
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        assert_eq!(header("x-daily-transport-type").as_deref(), transport);
        assert_eq!(header("x-daily-room-url"), None);
        assert_eq!(header("x-daily-room-token"), None);
        assert!(header("x-daily-session-id").is_some());
        assert_eq!(&got.body[..], b"{}");
    }
}

#[tokio::test]
async fn hand_over_resolves_once_written_before_the_agent_answers() {
    let (addr, mut received) = agent().await;
    let session = held(addr, &request()).await;
    let got = next(&mut received).await;
    let mut outcome = Box::pin(session.outcome());
    assert!(
        futures_util::poll!(&mut outcome).is_pending(),
        "not answered yet"
    );
    got.reply.send(204).unwrap();
    assert_eq!(
        timeout(BOUND, outcome).await.unwrap(),
        BotOutcome::Completed
    );
}

#[tokio::test]
async fn another_status_ends_the_session_with_an_agent_error() {
    let (addr, mut received) = agent().await;
    let session = held(addr, &request()).await;
    next(&mut received).await.reply.send(500).unwrap();
    let outcome = timeout(BOUND, session.outcome()).await.unwrap();
    assert_eq!(
        outcome,
        BotOutcome::AgentError {
            reason: "answered 500".into()
        }
    );
}

#[tokio::test]
async fn a_broken_connection_ends_the_session_with_an_agent_error() {
    let (addr, mut received) = agent().await;
    let session = held(addr, &request()).await;
    drop(next(&mut received).await.reply);
    let outcome = timeout(BOUND, session.outcome()).await.unwrap();
    let reason = "the connection closed before an answer".to_owned();
    assert_eq!(outcome, BotOutcome::AgentError { reason });
}

async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

#[tokio::test]
async fn a_refused_connection_is_no_hand_over() {
    let addr = closed_port().await;
    let refused = timeout(BOUND, hand_over(addr, &request())).await.unwrap();
    assert!(
        matches!(refused, Err(HandOverError::ConnectRefused(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn readyz_is_ready_only_when_it_answers_200() {
    let (addr, mut received) = agent().await;
    for (status, ready) in [(200, true), (503, false), (204, false), (500, false)] {
        let asking = tokio::spawn(is_ready(addr));
        let got = next(&mut received).await;
        assert_eq!(got.path, "/readyz");
        assert_eq!(got.headers.get("host").unwrap(), &addr.to_string());
        got.reply.send(status).unwrap();
        assert_eq!(
            timeout(BOUND, asking).await.unwrap().unwrap(),
            ready,
            "{status}"
        );
    }
}

#[tokio::test]
async fn readyz_is_not_ready_when_refused_or_never_answered() {
    let refused = closed_port().await;
    assert!(!timeout(BOUND, is_ready(refused)).await.unwrap());
    // Accepts and holds the connections without a word.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let holding = tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            held.push(silent.accept().await.unwrap());
        }
    });
    assert!(!timeout(BOUND, is_ready(addr)).await.unwrap());
    holding.abort();
}

#[test]
fn a_room_token_never_reaches_debug_output() {
    let shown = format!("{:?}", request());
    assert!(shown.contains("https://acme.daily.co/room-1"), "{shown}");
    assert!(!shown.contains("room-token-secret"), "{shown}");
}

#[tokio::test]
async fn a_room_token_that_cannot_be_a_header_is_refused_without_its_value() {
    let (addr, _received) = agent().await;
    let mut request = request();
    if let Some(room) = request.room.as_mut() {
        room.token = "secret\nvalue".into();
    }
    let refused = timeout(BOUND, hand_over(addr, &request)).await.unwrap();
    let Err(HandOverError::WriteFailed(reason)) = refused else {
        panic!("{refused:?}")
    };
    assert!(reason.contains(ROOM_TOKEN_HEADER), "{reason}");
    assert!(!reason.contains("secret"), "{reason}");
}

#[tokio::test]
async fn a_transport_that_cannot_be_a_header_is_refused() {
    let (addr, _received) = agent().await;
    let request = BotRequest {
        transport: Some("daily\nx".into()),
        ..request()
    };
    let refused = timeout(BOUND, hand_over(addr, &request)).await.unwrap();
    let Err(HandOverError::WriteFailed(reason)) = refused else {
        panic!("{refused:?}")
    };
    assert!(reason.contains(TRANSPORT_HEADER), "{reason}");
}
