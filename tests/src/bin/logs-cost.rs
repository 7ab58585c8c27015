//! What logs cost, against DynamoDB Local:
//!
//!     make logs-cost                    # writes, then reads at 10^3, 10^4, 10^5 lines (minutes)
//!     make logs-cost VOLUMES=1000,10000
//!
//! Writes: batches of 1, 10, 50 and 500 lines (one log stream: a deployment and a session, as a
//! CloudWatch subscription batch is) of about 100, 200 and 1,000 bytes, of agent-like text and
//! of random characters, packed into chunks and written by the store's own write path; the
//! write units the table and its indexes consumed, as DynamoDB Local reports them
//! (`ReturnConsumedCapacity`), per line, and the bytes stored (each copy's attributes and its
//! 100 bytes of overhead, as DynamoDB bills storage) per byte of raw text.
//!
//! Load: one agent at 5,000 lines a second (LOAD_SECONDS of log time, 10 by default), and the
//! write units each partition key of the table and its indexes receives per second.
//!
//! Reads: for each volume it stores that many lines for one agent (10 deployments of 10
//! sessions each, one line a millisecond), then reads a default page (limit 10) with each filter
//! and prints the lines the page read and the lines counting `total` read (every line of every
//! chunk read).

use integration_tests::TestStore;
use integration_tests::lines::{Batch, Text, batch_of};
use shared::logs::{self, LogFilter, LogLine, LogQuery, LogStore};
use shared::store::dynamodb::logs::stored_bytes;

const RETENTION_DAYS: u32 = 30;

fn lines_of_volume(service_id: &str, count: usize, base_nanos: u64) -> Vec<LogLine> {
    (0..count)
        .map(|i| {
            let deployment = i % 10;
            let session = (i / 10) % 10;
            LogLine {
                service_id: service_id.to_owned(),
                deployment_id: format!("deployment-{deployment}"),
                session_id: Some(format!("session-{deployment}-{session}")),
                event_id: format!("{i:010}"),
                timestamp_nanos: base_nanos + i as u64 * 1_000_000,
                text: if i % 997 == 0 {
                    format!("ERROR upstream timeout on call {i}")
                } else {
                    format!("frame {i} processed in 3 ms, audio level -23 dB")
                },
            }
        })
        .collect()
}

/// The write side: write units per line and stored bytes per raw byte, per batch and line size.
async fn writes(store: &TestStore) {
    println!(
        "| text | batch (lines) | line (bytes) | chunks | write units per line | stored bytes per raw byte |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64;
    for (kind, name) in [(Text::Agent, "agent log"), (Text::Random, "random")] {
        for batch in [1usize, 10, 50, 500] {
            for bytes in [100usize, 200, 1000] {
                let service_id = format!("write-{name}-{batch}-{bytes}");
                // A busy session: a line a millisecond.
                let lines = batch_of(Batch {
                    service_id: &service_id,
                    deployment_id: "0b5f8e0e-6d8c-4a4e-9b7e-3f1c2d4e5a6b",
                    session_id: "c7e1f0a2-9b3d-4e5f-8a6b-1c2d3e4f5a6b",
                    count: batch,
                    bytes,
                    kind,
                    start: now - 60_000_000_000,
                    spacing: 1_000_000,
                    first_id: 0,
                });
                let chunks = logs::pack(&lines, RETENTION_DAYS);
                let write_units = store
                    .store
                    .put_chunks_measured(&chunks)
                    .await
                    .expect("storing lines")
                    .total();
                let raw: usize = lines.iter().map(|line| line.text.len()).sum();
                let stored: usize = chunks.iter().map(stored_bytes).sum();
                println!(
                    "| {name} | {batch} | {bytes} | {} | {:.3} | {:.2} |",
                    chunks.len(),
                    write_units / batch as f64,
                    stored as f64 / raw as f64
                );
            }
        }
    }
    println!();
}

/// One agent at 5,000 lines a second: 100 sessions (of 2 deployments) at 50 lines a second,
/// each delivering a batch a second (as CloudWatch's subscription does, per log stream), for
/// `seconds` seconds of log time, written through the ingest path's store call. DynamoDB Local
/// does not throttle, so what shows that nothing would is what each partition key receives per
/// second, against DynamoDB's 1,000 write units a second per partition key.
async fn load(store: &TestStore, seconds: u64) {
    const SESSIONS: usize = 100;
    const LINES_PER_SECOND: usize = 50;
    let service_id = "load-agent";
    let start = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64 - 3_600_000_000_000;
    let mut by_key: std::collections::BTreeMap<String, f64> = Default::default();
    let mut total = 0.0;
    let mut lines_written = 0;
    for second in 0..seconds {
        for session in 0..SESSIONS {
            let deployment = session % 2;
            let session_id = format!("session-{session:03}");
            let lines = batch_of(Batch {
                service_id,
                deployment_id: &format!("deployment-{deployment}"),
                session_id: &session_id,
                count: LINES_PER_SECOND,
                bytes: 200,
                kind: Text::Agent,
                start: start + second * 1_000_000_000 + session as u64 * 7_000,
                spacing: 1_000_000_000 / LINES_PER_SECOND as u64,
                first_id: (second as usize * SESSIONS + session) * LINES_PER_SECOND,
            });
            lines_written += lines.len();
            let units = store
                .store
                .put_chunks_measured(&logs::pack(&lines, RETENTION_DAYS))
                .await
                .expect("storing lines");
            total += units.total();
            *by_key.entry(format!("table pk {service_id}")).or_default() += units.table;
            for (index, value) in &units.indexes {
                let key = if index == "by-deployment" {
                    format!("by-deployment {service_id}#deployment-{deployment}")
                } else {
                    format!("{index} {service_id}#{session_id}")
                };
                *by_key.entry(key).or_default() += value;
            }
        }
    }
    let per_second = |units: f64| units / seconds as f64;
    println!(
        "Load: {} lines/s for {seconds} s of log time ({SESSIONS} sessions, 2 deployments): {:.3} write units a line, {:.0} write units/s in all.",
        lines_written as u64 / seconds,
        total / lines_written as f64,
        per_second(total)
    );
    println!();
    println!("| partition key (table or index) | write units per second | of DynamoDB's 1,000 |");
    println!("|---|---:|---:|");
    let busiest_session = by_key
        .iter()
        .filter(|(key, _)| key.starts_with("by-session"))
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(key, value)| (key.clone(), *value));
    for (key, units) in by_key
        .iter()
        .filter(|(key, _)| !key.starts_with("by-session"))
        .map(|(key, value)| (key.clone(), *value))
        .chain(busiest_session.map(|(key, value)| (format!("{key} (the busiest session)"), value)))
    {
        println!(
            "| {key} | {:.0} | {:.0}% |",
            per_second(units),
            per_second(units) / 10.0
        );
    }
    println!();
}

#[tokio::main]
async fn main() {
    let volumes: Vec<usize> = std::env::var("VOLUMES")
        .unwrap_or_else(|_| "1000,10000,100000".to_owned())
        .split(',')
        .map(|v| {
            v.trim()
                .parse()
                .expect("VOLUMES: comma-separated line counts")
        })
        .collect();
    let store = TestStore::new().await;
    writes(&store).await;
    let load_seconds = std::env::var("LOAD_SECONDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(10);
    load(&store, load_seconds).await;
    println!("| lines | filter | returned | page items read | total items read | total |");
    println!("|---:|---|---:|---:|---:|---|");
    for volume in volumes {
        // One agent's service a volume.
        let service_id = format!("service-{volume}");
        let now = time::OffsetDateTime::now_utc();
        // The lines end an hour ago, one per millisecond.
        let base =
            (now.unix_timestamp_nanos() as u64) - 3_600_000_000_000 - volume as u64 * 1_000_000;
        let all = lines_of_volume(&service_id, volume, base);
        let started = std::time::Instant::now();
        for chunk in all.chunks(2_000) {
            store
                .store
                .put_lines(chunk, RETENTION_DAYS)
                .await
                .expect("storing lines");
        }
        eprintln!(
            "stored {volume} lines in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let middle_second = ((base + volume as u64 * 500_000) / 1_000_000_000) as i64;
        let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
            ("none", vec![]),
            (
                "deploymentId",
                vec![("deploymentId", "deployment-3".into())],
            ),
            ("sessionId", vec![("sessionId", "session-3-4".into())]),
            (
                "deploymentId + sessionId",
                vec![
                    ("deploymentId", "deployment-3".into()),
                    ("sessionId", "session-3-4".into()),
                ],
            ),
            (
                "time range (2 s)",
                vec![
                    ("startTime", middle_second.to_string()),
                    ("endTime", (middle_second + 2).to_string()),
                ],
            ),
            ("query (rare word)", vec![("query", "error".into())]),
            ("offset 100", vec![("offset", "100".into())]),
            ("offset 5000", vec![("offset", "5000".into())]),
            ("limit 1000", vec![("limit", "1000".into())]),
        ];
        for (name, params) in cases {
            let query =
                LogQuery::from_params(params.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
            let filter = LogFilter::new(&service_id, &query, now, RETENTION_DAYS);
            let (page, cost) = logs::read(
                &store.store,
                &filter,
                &query,
                &integration_tests::LOGS_SETTINGS.cursor_key,
            )
            .await
            .expect("reading");
            println!(
                "| {volume} | {name} | {} | {} | {} | {} {} |",
                page.logs.len(),
                cost.page_lines_read,
                cost.total_lines_read,
                page.total.value,
                page.total.relation
            );
        }
    }
}
