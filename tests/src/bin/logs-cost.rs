//! What logs cost, against DynamoDB Local:
//!
//!     make logs-cost                    # writes, then reads at 10^3, 10^4, 10^5 lines (minutes)
//!     make logs-cost VOLUMES=1000,10000
//!
//! Writes: batches of 1, 10, 50 and 500 lines (one log stream: a deployment and a session, as a
//! CloudWatch subscription batch is) of about 100, 200 and 1,000 bytes, through the store's own
//! write path; the write units the table and its indexes consumed, as DynamoDB Local reports
//! them (`ReturnConsumedCapacity`), per line, and the bytes stored (each copy's attributes and
//! its 100 bytes of overhead, as DynamoDB bills storage) per byte of raw text.
//!
//! Reads: for each volume it stores that many lines for one agent (10 deployments of 10
//! sessions each, one line a millisecond), then reads a default page (limit 10) with each filter
//! and prints the items the page read and the items counting `total` read (DynamoDB's
//! ScannedCount).

use integration_tests::TestStore;
use shared::logs::{self, LogFilter, LogLine, LogQuery, LogStore};
use shared::store::dynamodb::logs::stored_bytes;

const RETENTION_DAYS: u32 = 30;

fn lines(service_id: &str, count: usize, base_nanos: u64) -> Vec<LogLine> {
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

/// A line of about `bytes` bytes, as an agent writes them: words and numbers that vary.
fn text_of(i: usize, bytes: usize) -> String {
    let mut text = format!("{i:06} session joined, audio level -{} dB", 20 + i % 7);
    let words = [
        " frame",
        " processed",
        " in",
        " ms",
        " codec=opus",
        " jitter",
        " buffer",
        " ok",
    ];
    let mut n = i;
    while text.len() < bytes {
        text.push_str(words[n % words.len()]);
        text.push_str(&format!(" {}", n % 1000));
        n = n.wrapping_mul(31).wrapping_add(7);
    }
    text.truncate(bytes);
    text
}

/// The write side: write units per line and stored bytes per raw byte, per batch and line size.
async fn writes(store: &TestStore) {
    println!("| batch (lines) | line (bytes) | write units per line | stored bytes per raw byte |");
    println!("|---:|---:|---:|---:|");
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64;
    for batch in [1usize, 10, 50, 500] {
        for bytes in [100usize, 200, 1000] {
            let service_id = format!("write-{batch}-{bytes}");
            let lines: Vec<LogLine> = (0..batch)
                .map(|i| LogLine {
                    service_id: service_id.clone(),
                    deployment_id: "0b5f8e0e-6d8c-4a4e-9b7e-3f1c2d4e5a6b".into(),
                    session_id: Some("c7e1f0a2-9b3d-4e5f-8a6b-1c2d3e4f5a6b".into()),
                    event_id: format!("{:056}", 38_000_000 + i),
                    timestamp_nanos: now - 60_000_000_000 + i as u64 * 1_000_000,
                    text: text_of(i, bytes),
                })
                .collect();
            let write_units = store
                .store
                .put_lines_measured(&lines, RETENTION_DAYS)
                .await
                .expect("storing lines");
            let raw: usize = lines.iter().map(|line| line.text.len()).sum();
            let stored: usize = lines
                .iter()
                .map(|line| stored_bytes(line, RETENTION_DAYS))
                .sum();
            println!(
                "| {batch} | {bytes} | {:.2} | {:.2} |",
                write_units / batch as f64,
                stored as f64 / raw as f64
            );
        }
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
    println!("| lines | filter | returned | page items read | total items read | total |");
    println!("|---:|---|---:|---:|---:|---|");
    for volume in volumes {
        // One agent's service a volume.
        let service_id = format!("service-{volume}");
        let now = time::OffsetDateTime::now_utc();
        // The lines end an hour ago, one per millisecond.
        let base =
            (now.unix_timestamp_nanos() as u64) - 3_600_000_000_000 - volume as u64 * 1_000_000;
        let all = lines(&service_id, volume, base);
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
                cost.page_items_read,
                cost.total_items_read,
                page.total.value,
                page.total.relation
            );
        }
    }
}
