//! Items read per logs page, by filter kind and agent volume, against DynamoDB Local:
//!
//!     make logs-cost                    # 10^3, 10^4 and 10^5 lines (a few minutes)
//!     make logs-cost VOLUMES=1000,10000
//!
//! For each volume it stores that many lines for one agent (10 deployments of 10 sessions each,
//! one line a millisecond), then reads a default page (limit 10) with each filter and prints the
//! items the page read and the items counting `total` read (DynamoDB's ScannedCount).

use integration_tests::TestStore;
use shared::logs::{self, LogFilter, LogLine, LogQuery, LogStore};

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
            let (page, cost) = logs::read(&store.store, &filter, &query)
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
