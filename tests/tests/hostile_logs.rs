//! What a careless or hostile agent (through its log lines) or caller (through its queries) can
//! do to logs, on DynamoDB Local through the real handlers: a line too long for an item, an event
//! id repeated within a batch, a line dated centuries ahead, a page of control characters, a
//! forged cursor, a query that only Unicode case folding matches.

use std::time::Duration;

use integration_tests::bounded::Bound;
use integration_tests::{LOGS_SETTINGS, TestStore, create_named_agent, ingest, log_data};
use lambda_http::Body;
use serde_json::{Value, json};
use shared::auth::ApiKey;

const RETENTION_DAYS: u32 = 30;

fn now_millis() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// The logs handler's answer: status, body as JSON, and the body's size in bytes.
async fn read_raw(
    store: &TestStore,
    key: &ApiKey,
    agent: &str,
    params: &[(&str, String)],
) -> (u16, Value, usize) {
    let response = agent_logs::handle(
        &store.store,
        &store.store,
        &store.store,
        LOGS_SETTINGS,
        integration_tests::logs_request(key, agent, params),
    )
    .await;
    let status = response.status().as_u16();
    let bytes = match response.body() {
        Body::Text(text) => text.as_bytes().to_vec(),
        Body::Binary(bytes) => bytes.clone(),
        Body::Empty => Vec::new(),
        _ => panic!("unexpected body"),
    };
    (status, serde_json::from_slice(&bytes).unwrap(), bytes.len())
}

/// Every entry of a walk from the first page, following nextCursor.
async fn walk(
    store: &TestStore,
    key: &ApiKey,
    agent: &str,
    params: &[(&str, String)],
) -> (Vec<Value>, Vec<usize>) {
    let (mut entries, mut sizes) = (Vec::new(), Vec::new());
    let mut cursor: Option<String> = None;
    let mut pages = Bound::new(1_000, Duration::from_secs(120)).start("the walk's last page");
    loop {
        pages.spend();
        let mut pairs = params.to_vec();
        if let Some(cursor) = &cursor {
            pairs.push(("cursor", cursor.clone()));
        }
        let (status, body, size) = read_raw(store, key, agent, &pairs).await;
        assert_eq!(status, 200, "{body}");
        sizes.push(size);
        entries.extend(body["logs"].as_array().unwrap().iter().cloned());
        match body["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (entries, sizes),
        }
    }
}

async fn agent_in(store: &TestStore, account: &str) -> (ApiKey, String, String) {
    let (owner, key) = store.account_with_key(account).await;
    let agent = create_named_agent(store, &key, "noisy").await;
    let deployment = agent["activeDeploymentId"].as_str().unwrap().to_owned();
    (
        key,
        format!("/agent-hosting/{}/noisy", owner.namespace),
        deployment,
    )
}

#[tokio::test]
async fn a_line_past_the_item_limit_and_a_repeated_id_never_fail_their_batch() {
    let store = TestStore::new().await;
    let (key, group, deployment) = agent_in(&store, "acme").await;
    let now = now_millis();
    // 1 MB, as CloudWatch accepts; DynamoDB refuses items over 400 KB.
    let huge: String = (0..1_048_576u32)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let events = vec![
        ("0001".to_owned(), now, "before".to_owned()),
        ("0002".to_owned(), now + 1, huge.clone()),
        ("0003".to_owned(), now + 2, "after".to_owned()),
        // The same id again within the batch: one write request may not name an item twice.
        ("0003".to_owned(), now + 2, "after, again".to_owned()),
    ];
    let report = ingest(
        &store,
        RETENTION_DAYS,
        log_data(&group, &deployment, &events),
    )
    .await;
    assert_eq!(
        (report.split_lines, report.dropped_duplicate),
        (1, 1),
        "{report:?}"
    );

    let (entries, _) = walk(
        &store,
        &key,
        "noisy",
        &[("order", "asc".into()), ("limit", "100".into())],
    )
    .await;
    let texts: Vec<&str> = entries.iter().map(|e| e["log"].as_str().unwrap()).collect();
    assert_eq!(texts.first(), Some(&"before"));
    assert_eq!(texts.last(), Some(&"after"), "the first of the repeated id");
    let parts = &texts[1..texts.len() - 1];
    assert_eq!(parts.len(), 16);
    let mut joined = String::new();
    for (index, part) in parts.iter().enumerate() {
        let marker = format!(" [part {}/16 of a split line]", index + 1);
        joined.push_str(
            part.strip_suffix(&marker)
                .expect("each part is marked, in order"),
        );
    }
    assert_eq!(joined, huge, "every character kept, in order");
    let (_, body, _) = read_raw(&store, &key, "noisy", &[]).await;
    assert_eq!(body["total"], json!({"value": 18, "relation": "eq"}));
}

#[tokio::test]
async fn a_line_dated_centuries_ahead_is_kept_at_its_arrival_time() {
    let store = TestStore::new().await;
    let (key, group, deployment) = agent_in(&store, "acme").await;
    let now = now_millis();
    let events = vec![
        ("0001".to_owned(), now, "now".to_owned()),
        (
            "0002".to_owned(),
            now,
            "2500-01-01T00:00:00.000000000Z stdout F from the future".to_owned(),
        ),
        (
            "0003".to_owned(),
            i64::MAX,
            "event time i64::MAX".to_owned(),
        ),
    ];
    let report = ingest(
        &store,
        RETENTION_DAYS,
        log_data(&group, &deployment, &events),
    )
    .await;
    assert_eq!(report.future_times_replaced, 2, "{report:?}");
    let (_, body, _) = read_raw(&store, &key, "noisy", &[]).await;
    let latest_allowed = time::OffsetDateTime::now_utc() + time::Duration::minutes(1);
    for entry in body["logs"].as_array().unwrap() {
        let at = time::OffsetDateTime::parse(
            entry["timestamp"].as_str().unwrap(),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        assert!(at <= latest_allowed, "{entry}");
    }
    assert_eq!(body["total"]["value"], 3);
}

/// The most a page's answer takes: its entries' budget (4 MiB, under Lambda's 6 MB answer),
/// and the members around them (`total`, a cursor of at most 228 characters, punctuation).
const PAGE_LIMIT: usize = shared::logs::read::PAGE_BYTE_BUDGET + 512;

#[tokio::test]
async fn a_page_stops_before_its_byte_budget_and_its_cursor_continues() {
    let store = TestStore::new().await;
    let (key, group, deployment) = agent_in(&store, "acme").await;
    let now = now_millis();
    // Ten lines of 262,000 control characters: 1.5 MB each once escaped in JSON.
    let events: Vec<(String, i64, String)> = (0..10)
        .map(|i| (format!("{i:04}"), now + i, "\u{1}".repeat(262_000)))
        .collect();
    ingest(
        &store,
        RETENTION_DAYS,
        log_data(&group, &deployment, &events),
    )
    .await;
    let (status, first, size) = read_raw(&store, &key, "noisy", &[("limit", "1000".into())]).await;
    assert_eq!(status, 200);
    assert!(size <= PAGE_LIMIT, "within the page's 4 MiB budget: {size}");
    assert!(first["logs"].as_array().unwrap().len() < 40);
    assert!(first["nextCursor"].is_string(), "the page says more follow");
    assert_eq!(first["total"], json!({"value": 40, "relation": "eq"}));

    let (entries, sizes) = walk(&store, &key, "noisy", &[("limit", "1000".into())]).await;
    assert_eq!(entries.len(), 40, "every part once");
    assert!(sizes.iter().all(|size| *size <= PAGE_LIMIT), "{sizes:?}");
    let timestamps: Vec<&str> = entries
        .iter()
        .map(|e| e["timestamp"].as_str().unwrap())
        .collect();
    let mut sorted = timestamps.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(timestamps, sorted, "newest first across pages");
}

#[tokio::test]
async fn a_forged_or_oversized_cursor_is_a_400_naming_cursor() {
    use base64::Engine;
    let store = TestStore::new().await;
    let (key, _, _) = agent_in(&store, "acme").await;
    let unsigned = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
        "v1.{}.{:020}#{}",
        "0".repeat(24),
        1,
        "1".repeat(1_079)
    ));
    for cursor in [unsigned, "x".repeat(5_000), "%%%".to_owned()] {
        let (status, body, _) = read_raw(&store, &key, "noisy", &[("cursor", cursor)]).await;
        assert_eq!(
            (status, body["code"].as_str(), body["field"].as_str()),
            (400, Some("GENERIC_BAD_REQUEST"), Some("cursor")),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_text_query_matches_under_unicode_case_folding() {
    let store = TestStore::new().await;
    let (key, group, deployment) = agent_in(&store, "acme").await;
    let now = now_millis();
    let lines = ["ΟΔΟΣ κλειστή", "Straße gesperrt", "all clear"];
    let events: Vec<(String, i64, String)> = lines
        .iter()
        .enumerate()
        .map(|(i, text)| (format!("{i:04}"), now + i as i64, (*text).to_owned()))
        .collect();
    ingest(
        &store,
        RETENTION_DAYS,
        log_data(&group, &deployment, &events),
    )
    .await;
    for (query, expected) in [
        ("οδος", vec!["ΟΔΟΣ κλειστή"]),
        ("Σ", vec!["ΟΔΟΣ κλειστή"]),
        ("STRASSE", vec!["Straße gesperrt"]),
        ("CLEAR", vec!["all clear"]),
    ] {
        let (status, body, _) = read_raw(&store, &key, "noisy", &[("query", query.into())]).await;
        assert_eq!(status, 200);
        let found: Vec<&str> = body["logs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["log"].as_str().unwrap())
            .collect();
        assert_eq!(found, expected, "{query}");
    }
}
