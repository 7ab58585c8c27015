//! Lines kept in chunks read back in the contract's order (section 4, section 8): lines of many
//! sessions, delivered in batches late and out of order, walked page by page with cursors in
//! both orders under every filter, give each matching line exactly once, in order, with the
//! total every page. Generated cases (proptest) against the in-memory store, then a fixed set of
//! them against DynamoDB Local: the same test on both.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use shared::logs::{self, LogFilter, LogLine, LogQuery, LogStore};
use shared::store::memory::MemoryStore;

use integration_tests::TestStore;

const RETENTION_DAYS: u32 = 30;
const SECOND: u64 = 1_000_000_000;

/// A generated log: its lines, delivered as these batches in this order.
#[derive(Debug, Clone)]
struct Delivery {
    batches: Vec<Vec<LogLine>>,
}

/// A generated read: the filters and the page size of a walk.
#[derive(Debug, Clone)]
struct Walk {
    order: &'static str,
    deployment: Option<String>,
    session: Option<String>,
    /// Seconds after the log's start.
    start: Option<u64>,
    end: Option<u64>,
    query: Option<&'static str>,
    limit: usize,
}

const WORDS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];

fn delivery(base_nanos: u64) -> impl Strategy<Value = Delivery> {
    // Up to 300 lines in 30 s of 6 streams (3 deployments; sessions or none), so that streams
    // span many chunks; cut into batches and delivered in a shuffled order.
    (
        prop::collection::vec((0..6usize, 0..30 * SECOND, 0..4usize), 1..300),
        prop::collection::vec(1..60usize, 1..12),
        any::<u64>(),
    )
        .prop_map(move |(lines, cuts, shuffle)| {
            let mut lines: Vec<LogLine> = lines
                .into_iter()
                .enumerate()
                .map(|(i, (stream, offset, word))| LogLine {
                    service_id: "svc-order".into(),
                    deployment_id: format!("dep-{}", stream % 3),
                    session_id: (stream >= 3).then(|| format!("sess-{stream}")),
                    event_id: format!("{i:06}"),
                    // Some lines share a nanosecond: the event id breaks the tie.
                    timestamp_nanos: base_nanos + offset - offset % 3,
                    text: format!("line {i} {}", WORDS[word]),
                })
                .collect();
            // A batch is one log stream's, as CloudWatch delivers them.
            lines.sort_by_key(|line| (line.deployment_id.clone(), line.session_id.clone()));
            let mut batches = Vec::new();
            let mut rest = lines.as_slice();
            let mut cut = cuts.iter().cycle();
            while !rest.is_empty() {
                let take = (*cut.next().unwrap()).min(rest.len());
                let (batch, after) = rest.split_at(take);
                batches.push(batch.to_vec());
                rest = after;
            }
            // Late and out of order: a deterministic shuffle.
            let mut state = shuffle;
            for i in (1..batches.len()).rev() {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                batches.swap(i, (state >> 33) as usize % (i + 1));
            }
            Delivery { batches }
        })
}

fn walk() -> impl Strategy<Value = Walk> {
    (
        prop::bool::ANY,
        prop::option::of(0..3usize),
        prop::option::of(3..6usize),
        prop::option::of(0..30u64),
        prop::option::of(1..32u64),
        prop::option::of(prop::sample::select(WORDS.to_vec())),
        1..40usize,
    )
        .prop_map(
            |(asc, deployment, session, start, end, query, limit)| Walk {
                order: if asc { "asc" } else { "desc" },
                deployment: deployment.map(|d| format!("dep-{d}")),
                session: session.map(|s| format!("sess-{s}")),
                start,
                end: match (start, end) {
                    (Some(start), Some(end)) if end <= start => Some(start + 1),
                    (_, end) => end,
                },
                query,
                limit,
            },
        )
}

/// What the contract says the walk returns: the matching lines, each once, in order.
fn expected(delivery: &Delivery, walk: &Walk, base_seconds: u64) -> Vec<String> {
    let mut lines: BTreeMap<String, &LogLine> = BTreeMap::new();
    for line in delivery.batches.iter().flatten() {
        lines.insert(line.position(), line);
    }
    let seconds = |nanos: u64| nanos / SECOND;
    let mut matching: Vec<String> = lines
        .values()
        .filter(|line| {
            walk.deployment
                .as_ref()
                .is_none_or(|d| *d == line.deployment_id)
        })
        .filter(|line| walk.session.is_none() || walk.session == line.session_id)
        .filter(|line| {
            walk.start
                .is_none_or(|s| seconds(line.timestamp_nanos) >= base_seconds + s)
        })
        .filter(|line| {
            walk.end
                .is_none_or(|e| seconds(line.timestamp_nanos) < base_seconds + e)
        })
        .filter(|line| walk.query.is_none_or(|q| line.text.contains(q)))
        .map(|line| line.text.clone())
        .collect();
    if walk.order == "desc" {
        matching.reverse();
    }
    matching
}

/// Walks every page with its cursor: the lines in the order given, and each page's total.
async fn walked<S: LogStore>(
    store: &S,
    walk: &Walk,
    base_seconds: u64,
) -> (Vec<String>, Vec<serde_json::Value>) {
    let mut params: Vec<(&str, String)> = vec![
        ("order", walk.order.to_owned()),
        ("limit", walk.limit.to_string()),
    ];
    let optional = [
        ("deploymentId", walk.deployment.clone()),
        ("sessionId", walk.session.clone()),
        (
            "startTime",
            walk.start.map(|s| (base_seconds + s).to_string()),
        ),
        ("endTime", walk.end.map(|e| (base_seconds + e).to_string())),
        ("query", walk.query.map(str::to_owned)),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            params.push((name, value));
        }
    }
    let (mut texts, mut totals) = (Vec::new(), Vec::new());
    for _ in 0..1_000 {
        let query = LogQuery::from_params(params.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        let filter = LogFilter::new(
            "svc-order",
            &query,
            time::OffsetDateTime::now_utc(),
            RETENTION_DAYS,
        );
        let (page, _) = logs::read(
            store,
            &filter,
            &query,
            &integration_tests::LOGS_SETTINGS.cursor_key,
        )
        .await
        .unwrap();
        texts.extend(page.logs.into_iter().map(|entry| entry.log));
        totals.push(serde_json::json!(page.total));
        params.retain(|(name, _)| *name != "cursor");
        match page.next_cursor {
            Some(cursor) => params.push(("cursor", cursor)),
            None => return (texts, totals),
        }
    }
    panic!("a walk that does not end: {walk:?}");
}

async fn check<S: LogStore>(
    store: &S,
    delivery: &Delivery,
    walks: &[Walk],
    base_seconds: u64,
) -> Result<(), TestCaseError> {
    for batch in &delivery.batches {
        store.put_lines(batch, RETENTION_DAYS).await.unwrap();
    }
    for walk in walks {
        let want = expected(delivery, walk, base_seconds);
        let (got, totals) = walked(store, walk, base_seconds).await;
        prop_assert_eq!(&got, &want, "{:?}", walk);
        let total = serde_json::json!({"value": want.len(), "relation": "eq"});
        for page_total in totals {
            prop_assert_eq!(&page_total, &total, "{:?}", walk);
        }
    }
    Ok(())
}

fn base() -> (u64, u64) {
    // An hour ago, on a whole second: startTime and endTime are whole seconds.
    let seconds = time::OffsetDateTime::now_utc().unix_timestamp() as u64 - 3_600;
    (seconds * SECOND, seconds)
}

#[test]
fn late_and_out_of_order_batches_read_in_order_once_each_on_the_memory_store() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (base_nanos, base_seconds) = base();
    let mut runner = TestRunner::new(Config {
        cases: 300,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(delivery(base_nanos), prop::collection::vec(walk(), 1..6)),
            |(delivery, walks)| {
                let store = MemoryStore::default();
                runtime.block_on(check(&store, &delivery, &walks, base_seconds))
            },
        )
        .unwrap();
}

#[tokio::test]
async fn late_and_out_of_order_batches_read_in_order_once_each_on_dynamodb_local() {
    let (base_nanos, base_seconds) = base();
    // A fixed seed: the same cases every run, a few, since each is a table's worth of requests.
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 8,
            failure_persistence: None,
            ..Config::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let strategy = (delivery(base_nanos), prop::collection::vec(walk(), 4..8));
    for _ in 0..8 {
        let (delivery, walks) = strategy.new_tree(&mut runner).unwrap().current();
        let store = TestStore::new().await;
        check(&store.store, &delivery, &walks, base_seconds)
            .await
            .unwrap();
    }
}
