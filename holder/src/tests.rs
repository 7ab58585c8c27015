use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::client::{self, Accepted, HolderError};
use crate::contract::DailyRoom;
use crate::server::{Holder, serve};
use crate::{BotRequest, Checks, Endpoint, HolderState, Outcome, Token};

/// A bound for every wait on something the holder does by itself.
const BOUND: Duration = Duration::from_secs(10);

/// An agent whose `GET /readyz` and `/livez` answer 200 at once unless it is frozen (a paused
/// process: accepted, never answered), and whose `POST /bot` answers the status the test sets,
/// whenever it sets it.
struct Agent {
    address: SocketAddr,
    answer: watch::Sender<Option<u16>>,
    frozen: watch::Sender<bool>,
    bots: Arc<AtomicUsize>,
    server: JoinHandle<()>,
}

async fn agent() -> Agent {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (answer, frozen) = (watch::Sender::new(None), watch::Sender::new(false));
    let bots = Arc::new(AtomicUsize::new(0));
    let (verdicts, freezes, counted) = (answer.clone(), frozen.clone(), bots.clone());
    let server = tokio::spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (verdicts, freezes, counted) = (verdicts.clone(), freezes.clone(), counted.clone());
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let bot = request.uri().path() == "/bot";
                if bot {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
                let (mut verdict, mut frozen) = (verdicts.subscribe(), freezes.subscribe());
                async move {
                    if *frozen.borrow_and_update() {
                        let _ = frozen.wait_for(|frozen| !frozen).await;
                    }
                    let status = match bot {
                        true => verdict.wait_for(Option::is_some).await.unwrap().unwrap(),
                        false => 200,
                    };
                    let mut response = Response::new(Full::new(Bytes::from_static(b"{}")));
                    *response.status_mut() = StatusCode::from_u16(status).unwrap();
                    Ok::<_, Infallible>(response)
                }
            });
            connections.spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Agent {
        address,
        answer,
        frozen,
        bots,
        server,
    }
}

const TOKEN: &str = "the-data-planes-token-0123456789abcdef";

/// A holder in front of `agent`, served on a port of its own, checking the agent every 100 ms.
async fn holder(agent: SocketAddr) -> Endpoint {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let checks = Checks {
        every: Duration::from_millis(100),
        misses: 3,
    };
    tokio::spawn(serve(
        listener,
        Holder::new(agent, Token::new(TOKEN), checks),
    ));
    Endpoint {
        address,
        token: Token::new(TOKEN),
    }
}

fn request(session_id: &str) -> BotRequest {
    BotRequest {
        session_id: session_id.to_owned(),
        body: json!({"durationSeconds": 1}),
        transport: None,
        room: None,
    }
}

/// The state once it is `ended`, by the long poll.
async fn ended(holder: &Endpoint) -> HolderState {
    tokio::time::timeout(BOUND, async {
        loop {
            let state = client::state(holder, Duration::from_secs(5)).await.unwrap();
            if matches!(state, HolderState::Ended { .. }) {
                return state;
            }
        }
    })
    .await
    .expect("the session ended")
}

#[tokio::test]
async fn a_session_is_taken_once_202_the_same_again_200_another_409() {
    let agent = agent().await;
    let holder = holder(agent.address).await;
    assert_eq!(
        client::hand_over(&holder, &request("s1")).await,
        Ok(Accepted::Now)
    );
    assert_eq!(
        client::hand_over(&holder, &request("s1")).await,
        Ok(Accepted::Already)
    );
    assert_eq!(
        client::hand_over(&holder, &request("s2")).await,
        Err(HolderError::Busy)
    );
    assert_eq!(agent.bots.load(Ordering::SeqCst), 1, "one POST /bot");
    agent.answer.send_replace(Some(200));
    ended(&holder).await;
    assert_eq!(
        client::hand_over(&holder, &request("s2")).await,
        Err(HolderError::Busy),
        "never a second session, even after the first ended"
    );
    assert_eq!(
        client::hand_over(&holder, &request("s1")).await,
        Ok(Accepted::Already)
    );
}

#[tokio::test]
async fn the_state_is_idle_then_holding_then_ended_completed_on_a_2xx() {
    let agent = agent().await;
    let holder = holder(agent.address).await;
    assert_eq!(
        client::state(&holder, Duration::ZERO).await,
        Ok(HolderState::Idle)
    );
    client::hand_over(&holder, &request("s1")).await.unwrap();
    let holding = client::state(&holder, Duration::ZERO).await.unwrap();
    assert!(
        matches!(&holding, HolderState::Holding { session_id, .. } if session_id == "s1"),
        "{holding:?}"
    );
    agent.answer.send_replace(Some(204));
    let HolderState::Ended {
        session_id,
        outcome,
        reason,
        since,
        ended_at,
    } = ended(&holder).await
    else {
        unreachable!()
    };
    assert_eq!(
        (session_id.as_str(), outcome, reason),
        ("s1", Outcome::Completed, None)
    );
    assert!(since <= ended_at);
}

#[tokio::test]
async fn a_non_2xx_answer_ends_it_agent_error_with_the_status() {
    let agent = agent().await;
    let holder = holder(agent.address).await;
    client::hand_over(&holder, &request("s1")).await.unwrap();
    agent.answer.send_replace(Some(500));
    let state = ended(&holder).await;
    assert!(
        matches!(&state, HolderState::Ended { outcome: Outcome::AgentError, reason: Some(reason), .. } if reason.contains("500")),
        "{state:?}"
    );
}

#[tokio::test]
async fn a_broken_connection_ends_it_agent_error() {
    let agent = agent().await;
    let holder = holder(agent.address).await;
    client::hand_over(&holder, &request("s1")).await.unwrap();
    // The agent's process dies: every connection it held closes unanswered.
    agent.server.abort();
    let state = ended(&holder).await;
    assert!(
        matches!(
            &state,
            HolderState::Ended {
                outcome: Outcome::AgentError,
                reason: Some(_),
                ..
            }
        ),
        "{state:?}"
    );
}

#[tokio::test]
async fn an_agent_that_shows_no_life_is_never_handed_the_session() {
    // Nothing listens where the agent should be: no answer to GET /readyz.
    let gone = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nowhere = gone.local_addr().unwrap();
    drop(gone);
    let holder = holder(nowhere).await;
    let refused = client::hand_over(&holder, &request("s1")).await;
    assert!(
        matches!(&refused, Err(HolderError::NotAlive { reason }) if reason.contains("/readyz")),
        "{refused:?}"
    );
    assert_eq!(
        client::state(&holder, Duration::ZERO).await,
        Ok(HolderState::Idle),
        "nothing handed"
    );
}

#[tokio::test]
async fn a_frozen_agent_is_never_handed_the_session_nor_sent_post_bot() {
    let agent = agent().await;
    agent.frozen.send_replace(true);
    let holder = holder(agent.address).await;
    let refused = client::hand_over(&holder, &request("s1")).await;
    assert!(
        matches!(&refused, Err(HolderError::NotAlive { .. })),
        "{refused:?}"
    );
    assert_eq!(agent.bots.load(Ordering::SeqCst), 0, "no POST /bot written");
}

#[tokio::test]
async fn an_agent_that_stops_answering_mid_session_has_it_ended_agent_error() {
    let agent = agent().await;
    let holder = holder(agent.address).await;
    client::hand_over(&holder, &request("s1")).await.unwrap();
    agent.frozen.send_replace(true);
    let state = ended(&holder).await;
    assert!(
        matches!(&state, HolderState::Ended { outcome: Outcome::AgentError, reason: Some(reason), .. }
            if reason.contains("stopped answering")),
        "{state:?}"
    );
}

#[tokio::test]
async fn a_request_without_the_token_is_refused_and_changes_nothing() {
    let agent = agent().await;
    let holder = holder(agent.address).await;
    // The agent beside the holder reaches its port: a session it made up, with no token or
    // a guessed one, is refused.
    for token in ["", "the-data-planes-token-0123456789abcdeX", "guess"] {
        let forged = Endpoint {
            address: holder.address,
            token: Token::new(token),
        };
        assert_eq!(
            client::hand_over(&forged, &request("made-up")).await,
            Err(HolderError::Unexpected { status: 401 })
        );
        assert_eq!(
            client::state(&forged, Duration::ZERO).await,
            Err(HolderError::Unexpected { status: 401 })
        );
    }
    assert_eq!(agent.bots.load(Ordering::SeqCst), 0);
    assert_eq!(
        client::hand_over(&holder, &request("s1")).await,
        Ok(Accepted::Now),
        "the data plane's own session is taken"
    );
}

#[tokio::test]
async fn a_long_poll_answers_when_the_session_ends_and_else_with_the_state_after_the_wait() {
    let agent = agent().await;
    let holder = holder(agent.address).await;
    client::hand_over(&holder, &request("s1")).await.unwrap();
    let after_wait = client::state(&holder, Duration::from_secs(1))
        .await
        .unwrap();
    assert!(
        matches!(after_wait, HolderState::Holding { .. }),
        "{after_wait:?}"
    );
    let polling = {
        let holder = holder.clone();
        tokio::spawn(async move { client::state(&holder, Duration::from_secs(30)).await })
    };
    // Lets the poll reach the holder first: one answered at once would say `holding`.
    tokio::time::sleep(Duration::from_millis(200)).await;
    agent.answer.send_replace(Some(200));
    let answered = tokio::time::timeout(BOUND, polling)
        .await
        .expect("answered at the end, not after 30 s")
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            answered,
            HolderState::Ended {
                outcome: Outcome::Completed,
                ..
            }
        ),
        "{answered:?}"
    );
}

#[test]
fn a_holders_token_never_shows_in_debug() {
    let endpoint = Endpoint {
        address: SocketAddr::from(([127, 0, 0, 1], 18080)),
        token: Token::new(TOKEN),
    };
    assert!(!format!("{endpoint:?}").contains(TOKEN));
}

#[test]
fn the_session_body_is_camel_case_json_and_its_token_never_in_debug() {
    let request = BotRequest {
        session_id: "s1".into(),
        body: json!({"a": 1}),
        transport: Some("daily".into()),
        room: Some(DailyRoom {
            url: "https://acme.daily.co/r".into(),
            token: "room-secret".into(),
        }),
    };
    let text = serde_json::to_value(&request).unwrap();
    assert_eq!(
        text,
        json!({"sessionId": "s1", "body": {"a": 1}, "transport": "daily",
               "room": {"url": "https://acme.daily.co/r", "token": "room-secret"}})
    );
    assert_eq!(serde_json::from_value::<BotRequest>(text).unwrap(), request);
    assert!(!format!("{request:?}").contains("room-secret"));
}

#[test]
fn the_states_are_tagged_json() {
    assert_eq!(
        serde_json::to_value(HolderState::Idle).unwrap(),
        json!({"state": "idle"})
    );
    let ended = HolderState::Ended {
        session_id: "s1".into(),
        since: time::macros::datetime!(2026-11-26 07:00 UTC),
        ended_at: time::macros::datetime!(2026-11-26 07:01 UTC),
        outcome: Outcome::AgentError,
        reason: Some("answered 500".into()),
    };
    let value = serde_json::to_value(&ended).unwrap();
    assert_eq!(value["state"], "ended");
    assert_eq!(value["sessionId"], "s1");
    assert_eq!(value["outcome"], "agentError");
    assert_eq!(value["endedAt"], "2026-11-26T07:01:00Z");
    assert_eq!(serde_json::from_value::<HolderState>(value).unwrap(), ended);
}

/// An agent of one connection that answers one request as Python's `http.server` does, its
/// headers first and its body a moment later, then reads on as an HTTP/1.1 server does: how
/// the connection ended (`Ok(0)`: closed in order after the whole answer; otherwise what the
/// agent saw instead: a close before its body, which the body's arrival turns into a reset,
/// which an agent's server logs as a traceback).
async fn one_answer_agent() -> (SocketAddr, JoinHandle<Result<usize, String>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let agent = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut buffer = vec![0; 4096];
        stream.read(&mut buffer).await.map_err(|e| e.to_string())?;
        let body = r#"{"status": "ok"}"#;
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let peeked = tokio::time::timeout(Duration::from_millis(10), stream.peek(&mut buffer));
        if let Ok(Ok(0)) = peeked.await {
            return Err("closed before the answer's body".to_owned());
        }
        stream
            .write_all(body.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        stream.read(&mut buffer).await.map_err(|e| e.to_string())
    });
    (addr, agent)
}

#[tokio::test]
async fn a_probe_reads_the_answer_to_its_end_so_the_agent_sees_a_close_not_a_reset() {
    let (addr, agent) = one_answer_agent().await;
    assert!(crate::contract::is_ready(addr).await);
    assert_eq!(agent.await.unwrap(), Ok(0), "/readyz's connection");
    let (addr, agent) = one_answer_agent().await;
    assert!(crate::contract::answers(addr, Duration::from_secs(1)).await);
    assert_eq!(agent.await.unwrap(), Ok(0), "/livez's connection");
}
