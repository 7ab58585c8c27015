//! The shipper on an engine that only has lines, and reports recorded as sent.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use time::OffsetDateTime;
use tokio::sync::watch;

use super::*;
use crate::engine::{EngineError, LogLine, Output, RunError};
use crate::ports::{LineBatch, SessionStatus};
use crate::replica::{ReplicaSpec, ReplicaView};

/// An engine whose every replica wrote `lines`; its stream then ends, or stays open.
struct LinesOnly {
    lines: Vec<LogLine>,
    open: bool,
}

impl Engine for LinesOnly {
    async fn run(&self, _: &ReplicaSpec) -> Result<ReplicaId, RunError> {
        Err(EngineError::Refused("this engine only has lines".into()).into())
    }
    async fn stop(&self, _: &ReplicaId, _: Duration) -> Result<(), EngineError> {
        Err(EngineError::Refused("this engine only has lines".into()))
    }
    async fn list(&self, _: &str) -> Result<Vec<ReplicaView>, EngineError> {
        Err(EngineError::Refused("this engine only has lines".into()))
    }
    fn logs(
        &self,
        _: &ReplicaId,
        _: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        let lines = stream::iter(self.lines.clone().into_iter().map(Ok));
        if self.open {
            lines.chain(stream::pending()).boxed()
        } else {
            lines.boxed()
        }
    }
}

/// The batches of lines sent, in order; each send waits while the gate is shut (a delivery
/// that does not answer).
struct Recorded(watch::Sender<Vec<LineBatch>>, watch::Sender<bool>);

impl Default for Recorded {
    fn default() -> Self {
        Recorded(watch::Sender::default(), watch::Sender::new(true))
    }
}

impl Reports for Recorded {
    async fn deployment(&self, _: shared::agent::StatusReport) {}
    async fn session(&self, _: SessionStatus) {}
    async fn lines(&self, batch: LineBatch) {
        let _ = self.1.subscribe().wait_for(|open| *open).await;
        self.0.send_modify(|batches| batches.push(batch));
    }
}

impl Recorded {
    /// The batches, once `done` holds of them (bounded wait).
    async fn until(&self, done: impl Fn(&[LineBatch]) -> bool) -> Vec<LineBatch> {
        let mut sent = self.0.subscribe();
        tokio::time::timeout(Duration::from_secs(20), sent.wait_for(|b| done(b)))
            .await
            .expect("the lines were shipped")
            .expect("the recorder lives")
            .clone()
    }

    /// The batches, once they carry `lines` lines (bounded wait).
    async fn once(&self, lines: usize) -> Vec<LineBatch> {
        let mut sent = self.0.subscribe();
        let counted = |batches: &Vec<LineBatch>| {
            batches.iter().map(|b| b.events.len()).sum::<usize>() >= lines
        };
        tokio::time::timeout(Duration::from_secs(30), sent.wait_for(counted))
            .await
            .expect("the lines were shipped")
            .expect("the recorder lives")
            .clone()
    }
}

const T0: i128 = 1_800_000_000_000_000_000;

fn line(nanos: i128, text: &str) -> LogLine {
    LogLine {
        at: OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap(),
        output: Output::Stderr,
        partial: false,
        text: text.into(),
    }
}

fn numbered(count: usize) -> Vec<LogLine> {
    (0..count)
        .map(|i| line(T0 + i as i128 * 1000, &format!("line {i}")))
        .collect()
}

fn labels() -> ReplicaLabels {
    ReplicaLabels {
        stack: "run-9000".into(),
        namespace: "tiny-ferret-1".into(),
        agent: "voice-bot".into(),
        service_id: "svc-1".into(),
        deployment_id: "dep-1".into(),
    }
}

fn shipper(lines: Vec<LogLine>, open: bool) -> (Shipper<LinesOnly, Recorded>, Arc<Recorded>) {
    shipper_limited(lines, open, LogLimit::default())
}

fn shipper_limited(
    lines: Vec<LogLine>,
    open: bool,
    limit: LogLimit,
) -> (Shipper<LinesOnly, Recorded>, Arc<Recorded>) {
    let reports = Arc::new(Recorded::default());
    let engine = Arc::new(LinesOnly { lines, open });
    (Shipper::new(engine, reports.clone(), limit), reports)
}

fn replica() -> ReplicaId {
    ReplicaId("4f1c0ffee".into())
}

fn texts(batch: &LineBatch) -> Vec<&str> {
    batch
        .events
        .iter()
        .map(|(_, _, message)| shared::logs::parse_message(message, 0).1)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn lines_before_the_hand_over_go_to_the_deployments_stream_and_the_rest_to_the_sessions() {
    let lines = vec![
        line(T0, "starting"),
        line(T0 + 1, "ready"),
        line(T0 + 2, "session started"),
        line(T0 + 3, "session ending"),
    ];
    let (shipper, reports) = shipper(lines, false);
    shipper.follow(&replica(), &labels());
    let at = OffsetDateTime::from_unix_timestamp_nanos(T0 + 2).unwrap();
    shipper.hand_over(&replica(), "sess-1", at);
    let batches = reports.once(4).await;
    let streams: Vec<_> = batches
        .iter()
        .map(|b| (b.session_id.as_deref(), texts(b)))
        .collect();
    assert_eq!(
        streams,
        vec![
            (None, vec!["starting", "ready"]),
            (Some("sess-1"), vec!["session started", "session ending"]),
        ]
    );
    for batch in &batches {
        assert_eq!(
            (&*batch.namespace, &*batch.agent, &*batch.deployment_id),
            ("tiny-ferret-1", "voice-bot", "dep-1")
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_withdrawn_hand_over_leaves_the_lines_in_the_deployments_stream() {
    let lines = vec![line(T0, "starting"), line(T0 + 2, "shutting down")];
    let (shipper, reports) = shipper(lines, false);
    shipper.follow(&replica(), &labels());
    let at = OffsetDateTime::from_unix_timestamp_nanos(T0 + 1).unwrap();
    shipper.hand_over(&replica(), "sess-1", at);
    shipper.withdraw(&replica(), "sess-1");
    let batches = reports.once(2).await;
    let streams: Vec<_> = batches
        .iter()
        .map(|b| (b.session_id.as_deref(), texts(b)))
        .collect();
    assert_eq!(streams, vec![(None, vec!["starting", "shutting down"])]);
}

#[tokio::test(start_paused = true)]
async fn a_line_read_twice_gets_the_same_id() {
    let mut lines = numbered(3);
    // Two lines of one nanosecond.
    lines.push(line(T0 + 5000, "same instant a"));
    lines.push(line(T0 + 5000, "same instant b"));
    let read = || async {
        let (shipper, reports) = shipper(lines.clone(), false);
        shipper.follow(&replica(), &labels());
        reports.once(5).await.concat_events()
    };
    let (first, second) = (read().await, read().await);
    assert_eq!(first, second);
    let mut ids: Vec<_> = first.iter().map(|(id, _, _)| id.clone()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 5, "{ids:?}");
}

trait ConcatEvents {
    fn concat_events(self) -> Vec<(String, i64, String)>;
}

impl ConcatEvents for Vec<LineBatch> {
    fn concat_events(self) -> Vec<(String, i64, String)> {
        self.into_iter().flat_map(|b| b.events).collect()
    }
}

#[tokio::test(start_paused = true)]
async fn batches_carry_at_most_500_lines() {
    let (shipper, reports) = shipper(numbered(1200), false);
    shipper.follow(&replica(), &labels());
    let sizes: Vec<_> = reports
        .once(1200)
        .await
        .iter()
        .map(|b| b.events.len())
        .collect();
    assert_eq!(sizes, vec![500, 500, 200]);
}

#[tokio::test(start_paused = true)]
async fn a_few_lines_are_shipped_while_the_replica_still_runs() {
    let (shipper, reports) = shipper(numbered(3), true);
    shipper.follow(&replica(), &labels());
    let batches = reports.once(3).await;
    assert_eq!(texts(&batches[0]), vec!["line 0", "line 1", "line 2"]);
}

#[tokio::test(start_paused = true)]
async fn following_a_followed_replica_again_ships_its_lines_once() {
    let (shipper, reports) = shipper(numbered(3), false);
    shipper.follow(&replica(), &labels());
    shipper.follow(&replica(), &labels());
    reports.once(3).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(reports.once(3).await.concat_events().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_last_lines_are_those_the_replica_wrote_before_its_stream_ended() {
    let (shipper, _reports) = shipper(numbered(30), false);
    shipper.follow(&replica(), &labels());
    assert_eq!(
        shipper.last_lines(&replica(), 3).await,
        vec!["line 27", "line 28", "line 29"]
    );
    let kept = shipper.last_lines(&replica(), 100).await;
    assert_eq!(kept.len(), KEPT_LINES);
    assert_eq!(kept.first().map(String::as_str), Some("line 10"));
    shipper.forget(&replica());
    assert_eq!(shipper.last_lines(&replica(), 1).await, vec!["line 29"]);
    assert!(
        shipper
            .last_lines(&ReplicaId("unknown".into()), 1)
            .await
            .is_empty()
    );
}

#[tokio::test(start_paused = true)]
async fn the_last_lines_of_a_running_replica_are_answered_after_a_bounded_wait() {
    let (shipper, _reports) = shipper(numbered(2), true);
    shipper.follow(&replica(), &labels());
    let lines = tokio::time::timeout(LAST_LINES_WAIT * 2, shipper.last_lines(&replica(), 5))
        .await
        .expect("bounded");
    assert_eq!(lines, vec!["line 0", "line 1"]);
}

#[tokio::test(start_paused = true)]
async fn a_platform_line_is_marked_on_stderr_in_the_sessions_stream() {
    let (shipper, reports) = shipper(Vec::new(), false);
    shipper.platform_line(&labels(), Some("sess-1"), "the session was stopped");
    let batches = reports.once(1).await;
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].session_id.as_deref(), Some("sess-1"));
    assert_eq!(
        texts(&batches[0]),
        vec!["[agent-hosting] the session was stopped"]
    );
    assert!(batches[0].events[0].2.contains(" stderr F "));
}

/// Whether a batch of the session's stream (or the deployment's) has a line containing `text`.
fn shipped(batches: &[LineBatch], session: Option<&str>, text: &str) -> bool {
    batches
        .iter()
        .filter(|b| b.session_id.as_deref() == session)
        .any(|b| texts(b).iter().any(|t| t.contains(text)))
}

/// `POST /bot` for a session of no length, answered.
async fn post_bot(address: std::net::SocketAddr, session_id: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = r#"{"durationSeconds": 0}"#;
    let request = format!(
        "POST /bot HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\n\
         X-Daily-Session-Id: {session_id}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_string(&mut answer))
        .await
        .expect("answered")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn an_agents_lines_reach_its_streams_and_no_value_of_its_environment_ever_appears() {
    use crate::replica::{EnvVar, Limits, NodeType};
    use crate::testing::fake::{EXAMPLE_IMAGE, FakeEngine};
    const SECRET: &str = "sk-never-shown-4711";
    let engine = Arc::new(FakeEngine::new());
    let env = |name: &str, value: &str| EnvVar {
        name: name.into(),
        value: value.into(),
    };
    let spec = ReplicaSpec {
        labels: labels(),
        image: EXAMPLE_IMAGE.into(),
        pull: None,
        limits: Limits::of_resources("500m", "1Gi").unwrap(),
        node_type: NodeType::Arm,
        env: vec![env("PORT", "8080"), env("OPENAI_API_KEY", SECRET)],
        holder: crate::replica::HolderSettings::new(agent_holder::Checks::default()),
    };
    let id = engine.run(&spec).await.unwrap();
    let reports = Arc::new(Recorded::default());
    let shipper = Shipper::new(engine.clone(), reports.clone(), LogLimit::default());
    shipper.follow(&id, &labels());
    reports.until(|b| shipped(b, None, "ready")).await;
    let views = engine.list(&labels().stack).await.unwrap();
    let address = views[0].address.expect("a running replica has an address");
    shipper.hand_over(&id, "sess-1", OffsetDateTime::now_utc());
    post_bot(address, "sess-1").await;
    let batches = reports
        .until(|b| shipped(b, Some("sess-1"), "session ending"))
        .await;
    assert!(shipped(&batches, None, "starting"));
    assert!(shipped(&batches, Some("sess-1"), "session started"));
    assert!(!shipped(&batches, None, "session started"));
    assert!(shipped(&batches, Some("sess-1"), "OPENAI_API_KEY"));
    let messages = batches.iter().flat_map(|b| &b.events);
    assert!(messages.clone().all(|(_, _, m)| !m.contains(SECRET)));
    engine.stop(&id, Duration::ZERO).await.unwrap();
    shipper.forget(&id);
}

/// Every text shipped, in order, and the count the markers among them say was dropped.
fn shipped_and_dropped(batches: &[LineBatch]) -> (Vec<String>, u64) {
    let texts: Vec<String> = batches
        .iter()
        .flat_map(|b| texts(b).into_iter().map(str::to_owned))
        .collect();
    let dropped = (texts.iter())
        .filter_map(|t| t.strip_prefix(PLATFORM_PREFIX))
        .filter_map(|t| t.split_once(" lines dropped"))
        .map(|(count, _)| count.parse::<u64>().expect("a count"))
        .sum();
    (texts, dropped)
}

fn small_limit() -> LogLimit {
    LogLimit {
        lines_per_second: 100,
        burst_lines: 1_000,
        bytes_per_second: 1 << 30,
        burst_bytes: 1 << 30,
    }
}

#[tokio::test(start_paused = true)]
async fn a_flood_past_the_limit_is_dropped_and_every_dropped_line_counted_in_a_marker() {
    // 30,000 lines in 30 ms: the burst is kept, the rest over the rate.
    let flood: Vec<LogLine> = (0..30_000)
        .map(|i| line(T0 + i as i128 * 1_000, &format!("flood {i}")))
        .collect();
    let (shipper, reports) = shipper_limited(flood, false, small_limit());
    shipper.follow(&replica(), &labels());
    let batches = reports
        .until(|b| shipped_and_dropped(b).1 > 0 && shipped_and_dropped(b).0.len() >= 1_001)
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let batches = reports.until(|b| b.len() >= batches.len()).await;
    let (texts, dropped) = shipped_and_dropped(&batches);
    let kept: Vec<&String> = texts.iter().filter(|t| t.starts_with("flood ")).collect();
    assert!(
        (1_000..=1_003).contains(&kept.len()),
        "the burst and 30 ms of the rate: {}",
        kept.len()
    );
    assert_eq!(
        kept.len() as u64 + dropped,
        30_000,
        "every line stored or counted"
    );
    let marker = texts.last().expect("the marker closes the flood");
    assert!(marker.contains("log limit of 100 lines"), "{marker}");
}

#[tokio::test(start_paused = true)]
async fn a_delivery_that_does_not_answer_never_holds_the_reading_back() {
    let (shipper, reports) = shipper(numbered(2_000), true);
    reports.1.send_replace(false);
    shipper.follow(&replica(), &labels());
    // Nothing delivered, yet the whole log was read.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(reports.0.borrow().is_empty());
    assert_eq!(
        shipper.last_lines(&replica(), 1).await,
        vec!["line 1999"],
        "read to its last line while the first batch waits"
    );
    reports.1.send_replace(true);
    let (texts, dropped) = shipped_and_dropped(&reports.once(2_000).await);
    assert_eq!((texts.len(), dropped), (2_000, 0));
    assert_eq!(texts.last().map(String::as_str), Some("line 1999"));
}

#[tokio::test(start_paused = true)]
async fn past_what_is_buffered_for_a_stalled_delivery_lines_are_dropped_and_marked() {
    let long = "x".repeat(16 * 1024);
    let count = MAX_PENDING_BYTES / long.len() + 100;
    let lines: Vec<LogLine> = (0..count)
        .map(|i| line(T0 + i as i128 * 1_000, &format!("{i:06} {long}")))
        .collect();
    let unlimited = LogLimit {
        lines_per_second: u32::MAX,
        burst_lines: u32::MAX,
        bytes_per_second: u64::MAX / 4,
        burst_bytes: u64::MAX / 4,
    };
    let (shipper, reports) = shipper_limited(lines, false, unlimited);
    reports.1.send_replace(false);
    shipper.follow(&replica(), &labels());
    tokio::time::sleep(Duration::from_secs(5)).await;
    reports.1.send_replace(true);
    let batches = reports.until(|b| shipped_and_dropped(b).1 > 0).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let batches = reports.until(|b| b.len() >= batches.len()).await;
    let (texts, dropped) = shipped_and_dropped(&batches);
    let kept = texts
        .iter()
        .filter(|t| !t.starts_with(PLATFORM_PREFIX))
        .count();
    assert!(dropped > 0);
    assert_eq!(
        kept as u64 + dropped,
        count as u64,
        "every line stored or counted"
    );
    let marker = texts
        .iter()
        .find(|t| t.starts_with(PLATFORM_PREFIX))
        .unwrap();
    assert!(marker.ends_with("fell behind"), "{marker}");
}
