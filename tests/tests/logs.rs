//! Agent logs end to end: lines ingested through the ingest handler into DynamoDB Local, read
//! through the logs handler, and compared with a plain in-memory filter-sort-slice of the same
//! lines.

use integration_tests::{TestStore, log_data};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use shared::auth::ApiKey;
use shared::logs::LogStore;
use shared::logs::{LogFilter, LogLine, LogQuery};

const RETENTION_DAYS: u32 = 30;
const SETTINGS: agent_logs::Settings = agent_logs::Settings {
    retention_days: RETENTION_DAYS,
    ..integration_tests::LOGS_SETTINGS
};

fn now_nanos() -> u64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64
}

/// Creates the agent; the id of its (first) deployment.
async fn create_agent(store: &TestStore, key: &ApiKey, name: &str) -> String {
    let agent = integration_tests::create_named_agent(store, key, name).await;
    agent["activeDeploymentId"].as_str().unwrap().to_owned()
}

async fn ingest(
    store: &TestStore,
    data: aws_lambda_events::cloudwatch_logs::LogData,
) -> shared::logs::intake::IngestReport {
    integration_tests::ingest(store, RETENTION_DAYS, data).await
}

async fn read(
    store: &TestStore,
    key: &ApiKey,
    agent: &str,
    params: &[(&str, String)],
) -> (u16, Value) {
    integration_tests::read_logs(store, key, SETTINGS, agent, params).await
}

/// Line `i` of a numbered run of a service's log: one a millisecond from `first_nanos`, all in
/// deployment dep-1, outside any session (written to the store directly).
fn numbered_line(service_id: &str, first_nanos: u64, i: u64) -> LogLine {
    LogLine {
        service_id: service_id.into(),
        deployment_id: "dep-1".into(),
        session_id: None,
        event_id: format!("{i:08}"),
        timestamp_nanos: first_nanos + i * 1_000_000,
        text: format!("line {i}"),
    }
}

/// The filter and query the logs handler builds for the agent of service `service_id`, for
/// calling `shared::logs::read` directly (it also reports the items it read).
fn filter_and_query(service_id: &str, params: &[(&str, String)]) -> (LogFilter, LogQuery) {
    let query = LogQuery::from_params(params.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
    let now = time::OffsetDateTime::now_utc();
    let filter = LogFilter::new(service_id, &query, now, RETENTION_DAYS);
    (filter, query)
}

/// One line as the model keeps it.
#[derive(Debug, Clone)]
struct ModelLine {
    nanos: u64,
    event_id: String,
    text: String,
    deployment: String,
    session: Option<String>,
}

impl ModelLine {
    fn entry(&self) -> Value {
        let mut entry = json!({
            "log": self.text,
            "timestamp": shared::logs::rfc3339_nanos(self.nanos),
            "deploymentId": self.deployment,
        });
        if let Some(session) = &self.session {
            entry["sessionId"] = json!(session);
        }
        entry
    }
}

#[derive(Debug, Clone, Default)]
struct Params {
    limit: Option<usize>,
    offset: Option<usize>,
    asc: bool,
    start: Option<i64>,
    end: Option<i64>,
    deployment: Option<String>,
    session: Option<String>,
    query: Option<String>,
}

impl Params {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        if let Some(limit) = self.limit {
            pairs.push(("limit", limit.to_string()));
        }
        if let Some(offset) = self.offset {
            pairs.push(("offset", offset.to_string()));
        }
        pairs.push(("order", if self.asc { "asc" } else { "desc" }.to_owned()));
        if let Some(start) = self.start {
            pairs.push(("startTime", start.to_string()));
        }
        if let Some(end) = self.end {
            pairs.push(("endTime", end.to_string()));
        }
        if let Some(deployment) = &self.deployment {
            pairs.push(("deploymentId", deployment.clone()));
        }
        if let Some(session) = &self.session {
            pairs.push(("sessionId", session.clone()));
        }
        if let Some(query) = &self.query {
            pairs.push(("query", query.clone()));
        }
        pairs
    }

    /// The model's answer: every matching line, in order.
    fn expected(&self, lines: &[ModelLine]) -> Vec<ModelLine> {
        let mut matching: Vec<ModelLine> = lines
            .iter()
            .filter(|line| {
                let seconds = (line.nanos / 1_000_000_000) as i64;
                self.start.is_none_or(|start| seconds >= start)
                    && self.end.is_none_or(|end| seconds < end)
                    && self
                        .deployment
                        .as_ref()
                        .is_none_or(|d| *d == line.deployment)
                    && self
                        .session
                        .as_ref()
                        .is_none_or(|s| Some(s) == line.session.as_ref())
                    && self
                        .query
                        .as_ref()
                        .is_none_or(|q| line.text.to_lowercase().contains(&q.to_lowercase()))
            })
            .cloned()
            .collect();
        matching.sort_by(|a, b| (a.nanos, &a.event_id).cmp(&(b.nanos, &b.event_id)));
        if !self.asc {
            matching.reverse();
        }
        matching
    }
}

const WORDS: &[&str] = &[
    "Connected",
    "error",
    "ERROR",
    "warn",
    "Timeout",
    "session",
    "ok",
    "Ünïcode",
    "audio",
    "frame",
];

/// Ingests a few thousand lines for one agent (its 3 deployments): sessions and no-session lines,
/// over 40 seconds, many sharing a timestamp.
async fn seed(
    store: &TestStore,
    namespace: &str,
    agent: &str,
    deployments: &[String],
    rng: &mut StdRng,
) -> Vec<ModelLine> {
    let base = now_nanos() - 3_600 * 1_000_000_000;
    let streams: Vec<(String, Option<String>)> = (0..3)
        .flat_map(|d| {
            let deployment = deployments[d].clone();
            [
                None,
                Some(format!("sess-{d}-a")),
                Some(format!("sess-{d}-b")),
            ]
            .into_iter()
            .map(move |session| (deployment.clone(), session))
        })
        .collect();
    let mut lines = Vec::new();
    let mut next_id = 0u64;
    for (deployment, session) in &streams {
        let mut events = Vec::new();
        for _ in 0..rng.random_range(250..450) {
            // 40 seconds, 8 instants per second: plenty of exact ties.
            let nanos = base + rng.random_range(0..320u64) * 125_000_000;
            let text = format!(
                "{} {} #{}",
                WORDS[rng.random_range(0..WORDS.len())],
                WORDS[rng.random_range(0..WORDS.len())],
                next_id
            );
            let id = format!("{:056}", 37_000_000 + next_id * 7919 % 1_000_003);
            next_id += 1;
            // Half the lines in CRI form (nanoseconds from the text), half plain (milliseconds
            // from the event).
            let (message, stored_nanos) = if rng.random_bool(0.5) {
                (
                    format!("{} stdout F {text}", shared::logs::rfc3339_nanos(nanos)),
                    nanos,
                )
            } else {
                let millis = nanos / 1_000_000;
                (text.clone(), millis * 1_000_000)
            };
            events.push((id.clone(), (nanos / 1_000_000) as i64, message));
            lines.push(ModelLine {
                nanos: stored_nanos,
                event_id: id,
                text,
                deployment: deployment.clone(),
                session: session.clone(),
            });
        }
        let stream = match session {
            Some(session) => format!("{deployment}/{session}"),
            None => deployment.clone(),
        };
        for batch in events.chunks(200) {
            let report = ingest(
                store,
                log_data(
                    &format!("/agent-hosting/{namespace}/{agent}"),
                    &stream,
                    batch,
                ),
            )
            .await;
            assert_eq!(report.stored, batch.len());
        }
    }
    lines
}

/// Random parameters; a deployment filter names one of `deployments` or one the agent never had.
fn random_params(rng: &mut StdRng, lines: &[ModelLine], deployments: &[String]) -> Params {
    let min_second = (lines.iter().map(|l| l.nanos).min().unwrap() / 1_000_000_000) as i64;
    let mut params = Params {
        asc: rng.random_bool(0.5),
        ..Params::default()
    };
    if rng.random_bool(0.7) {
        params.limit = Some(
            *[1, 2, 7, 10, 50, 333, 1000]
                .get(rng.random_range(0..7))
                .unwrap(),
        );
    }
    if rng.random_bool(0.4) {
        params.offset = Some(rng.random_range(0..400));
    }
    if rng.random_bool(0.4) {
        params.start = Some(min_second + rng.random_range(-2..42));
    }
    if rng.random_bool(0.4) {
        params.end = Some(params.start.unwrap_or(min_second) + rng.random_range(1..45));
    }
    if rng.random_bool(0.4) {
        params.deployment = Some(
            deployments
                .get(rng.random_range(0..4))
                .cloned()
                .unwrap_or_else(|| "never-deployed".to_owned()),
        );
    }
    if rng.random_bool(0.3) {
        let deployment = rng.random_range(0..3);
        params.session = Some(format!(
            "sess-{deployment}-{}",
            if rng.random_bool(0.5) { "a" } else { "b" }
        ));
    }
    if rng.random_bool(0.3) {
        params.query = Some(WORDS[rng.random_range(0..WORDS.len())].to_lowercase());
    }
    params
}

fn entries(body: &Value) -> Vec<Value> {
    body["logs"].as_array().unwrap().clone()
}

#[tokio::test]
async fn random_requests_agree_with_the_in_memory_model() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let deployments = integration_tests::agent_with_deployments(&store, &key, "voice-bot", 3).await;
    let mut rng = StdRng::seed_from_u64(0x5eed_1095);
    let lines = seed(
        &store,
        &caller.namespace,
        "voice-bot",
        &deployments,
        &mut rng,
    )
    .await;
    assert!(lines.len() > 2_000);

    for case in 0..300 {
        let params = random_params(&mut rng, &lines, &deployments);
        let expected = params.expected(&lines);
        let (limit, offset) = (params.limit.unwrap_or(10), params.offset.unwrap_or(0));
        let (status, body) = read(&store, &key, "voice-bot", &params.pairs()).await;
        assert_eq!(status, 200, "case {case} {params:?}: {body}");
        let want: Vec<Value> = expected
            .iter()
            .skip(offset)
            .take(limit)
            .map(ModelLine::entry)
            .collect();
        assert_eq!(entries(&body), want, "case {case} {params:?}");
        assert_eq!(
            body["total"],
            json!({"value": expected.len(), "relation": "eq"}),
            "case {case} {params:?}"
        );
        let more = expected.len() > offset + limit;
        assert_eq!(
            body.get("nextCursor").is_some(),
            more,
            "case {case} {params:?}"
        );
    }
}

#[tokio::test]
async fn offset_pages_and_cursor_walks_both_concatenate_to_the_model() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let deployments = integration_tests::agent_with_deployments(&store, &key, "voice-bot", 3).await;
    let mut rng = StdRng::seed_from_u64(42);
    let lines = seed(
        &store,
        &caller.namespace,
        "voice-bot",
        &deployments,
        &mut rng,
    )
    .await;

    for case in 0..16 {
        let mut params = random_params(&mut rng, &lines, &deployments);
        params.offset = None;
        params.limit = Some([25, 60, 150, 400][case % 4]);
        let limit = params.limit.unwrap();
        let want: Vec<Value> = params
            .expected(&lines)
            .iter()
            .map(ModelLine::entry)
            .collect();

        // Offsets.
        let mut by_offset = Vec::new();
        while by_offset.len() < want.len() && by_offset.len() + limit <= 10_000 {
            let mut paged = params.clone();
            paged.offset = Some(by_offset.len());
            let (status, body) = read(&store, &key, "voice-bot", &paged.pairs()).await;
            assert_eq!(status, 200, "{body}");
            let page = entries(&body);
            assert!(!page.is_empty());
            by_offset.extend(page);
        }
        assert_eq!(by_offset, want, "offset walk, case {case} {params:?}");

        // Cursors.
        let mut by_cursor = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages =
            integration_tests::bounded::Bound::new(1_000, std::time::Duration::from_secs(120))
                .start(format!("the cursor walk's last page, case {case}"));
        loop {
            pages.spend();
            let mut pairs = params.pairs();
            if let Some(cursor) = &cursor {
                pairs.push(("cursor", cursor.clone()));
            }
            let (status, body) = read(&store, &key, "voice-bot", &pairs).await;
            assert_eq!(status, 200, "{body}");
            // Every page's total is the whole range's, cursor or not, text query or not.
            let total = json!({"value": want.len(), "relation": "eq"});
            assert_eq!(body["total"], total, "cursor walk, case {case} {params:?}");
            by_cursor.extend(entries(&body));
            match body.get("nextCursor") {
                Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
                None => break,
            }
        }
        assert_eq!(by_cursor, want, "cursor walk, case {case} {params:?}");

        // With a cursor, offset skips entries after it.
        if want.len() > limit + 3 {
            let (_, first) = read(&store, &key, "voice-bot", &params.pairs()).await;
            let mut pairs = params.pairs();
            pairs.push(("cursor", first["nextCursor"].as_str().unwrap().to_owned()));
            pairs.push(("offset", "3".to_owned()));
            let (status, body) = read(&store, &key, "voice-bot", &pairs).await;
            assert_eq!(status, 200, "{body}");
            let skipped: Vec<Value> = want.iter().skip(limit + 3).take(limit).cloned().collect();
            assert_eq!(entries(&body), skipped, "cursor + offset, case {case}");
            let total = json!({"value": want.len(), "relation": "eq"});
            assert_eq!(body["total"], total, "cursor + offset, case {case}");
        }
    }
}

#[tokio::test]
async fn every_bad_parameter_is_a_400_naming_it() {
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    create_agent(&store, &key, "bot").await;
    // Well-formed, but made under other filters.
    let other_cursor = shared::logs::cursor::encode(
        &SETTINGS.cursor_key,
        "000000000000000000000000",
        "01700000000000000000#1",
    );
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (vec![("limit", "0".into())], "limit"),
        (vec![("limit", "1001".into())], "limit"),
        (vec![("limit", "ten".into())], "limit"),
        (vec![("limit", "2.5".into())], "limit"),
        (vec![("offset", "-1".into())], "offset"),
        (
            vec![("offset", "9995".into()), ("limit", "10".into())],
            "offset",
        ),
        (vec![("order", "newest".into())], "order"),
        (vec![("startTime", "yesterday".into())], "startTime"),
        (vec![("startTime", "1745008457153".into())], "startTime"),
        (vec![("endTime", "1745008457153".into())], "endTime"),
        (
            vec![
                ("startTime", "1745008457".into()),
                ("endTime", "1745008457".into()),
            ],
            "endTime",
        ),
        (vec![("query", "x".repeat(257))], "query"),
        (vec![("sesionId", "abc".into())], "sesionId"),
        (vec![("limit", "5".into()), ("limit", "6".into())], "limit"),
        (vec![("cursor", "not-a-cursor".into())], "cursor"),
        (vec![("cursor", other_cursor)], "cursor"),
    ];
    for (params, field) in cases {
        let (status, body) = read(&store, &key, "bot", &params).await;
        assert_eq!(status, 400, "{params:?}: {body}");
        assert_eq!(body["code"], "GENERIC_BAD_REQUEST");
        assert_eq!(body["field"], field, "{params:?}");
        if params[0].1.len() == 13 {
            assert!(
                body["error"].as_str().unwrap().contains("milliseconds"),
                "{body}"
            );
        }
    }
    // A range that ends before the retention period starts is empty, not an error.
    let (status, body) = read(&store, &key, "bot", &[("endTime", "1".into())]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["total"], json!({"value": 0, "relation": "eq"}));
    // Empty values are absent parameters.
    let (status, _) = read(
        &store,
        &key,
        "bot",
        &[("query", String::new()), ("limit", String::new())],
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn agents_of_other_accounts_are_not_found_and_cursors_do_not_travel() {
    let store = TestStore::new().await;
    let (alice, alice_key) = store.account_with_key("alice").await;
    let (_, bob_key) = store.account_with_key("bob").await;
    let support = create_agent(&store, &alice_key, "support-bot").await;
    create_agent(&store, &alice_key, "other-bot").await;
    let events: Vec<(String, i64, String)> = (0..30)
        .map(|i| {
            (
                format!("{i:056}"),
                (now_nanos() / 1_000_000) as i64 - 1_000 + i,
                format!("secret line {i}"),
            )
        })
        .collect();
    ingest(
        &store,
        log_data(
            &format!("/agent-hosting/{}/support-bot", alice.namespace),
            &format!("{support}/s-1"),
            &events,
        ),
    )
    .await;

    let (status, body) = read(&store, &alice_key, "support-bot", &[("limit", "5".into())]).await;
    assert_eq!(status, 200);
    assert_eq!(body["total"]["value"], 30);
    let cursor = body["nextCursor"].as_str().unwrap().to_owned();

    let (status, body) = read(&store, &bob_key, "support-bot", &[]).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["code"], "NOT_FOUND");
    assert!(!body.to_string().contains("secret"));

    let (status, body) = read(
        &store,
        &bob_key,
        "support-bot",
        &[("cursor", cursor.clone())],
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = read(&store, &alice_key, "other-bot", &[("cursor", cursor)]).await;
    assert_eq!(
        status, 400,
        "a cursor of one agent is refused on another: {body}"
    );
    assert_eq!(body["field"], "cursor");

    let (status, _) = read(&store, &alice_key, "no-such-bot", &[]).await;
    assert_eq!(status, 404);
    let (status, _) = read(&store, &alice_key, "Not_A_Name", &[]).await;
    assert_eq!(status, 404);
    let (status, body) = read(&store, &alice_key, "other-bot", &[]).await;
    assert_eq!(
        (status, body["total"].clone()),
        (200, json!({"value": 0, "relation": "eq"}))
    );
}

#[tokio::test]
async fn redelivery_stores_nothing_twice_and_unknown_agents_are_dropped() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let deployment = create_agent(&store, &key, "bot").await;
    let millis = (now_nanos() / 1_000_000) as i64;
    let events: Vec<(String, i64, String)> = (0..60)
        .map(|i| {
            (
                format!("{:056}", 900 + i),
                millis - 5_000,
                format!("line {i}"),
            )
        })
        .collect();
    let group = format!("/agent-hosting/{}/bot", caller.namespace);
    let mut items_stored = Vec::new();
    for _ in 0..3 {
        let report = ingest(&store, log_data(&group, &deployment, &events)).await;
        assert_eq!(report.stored, 60);
        items_stored.push(store.item_count(&store.logs_table).await);
    }
    let (_, body) = read(&store, &key, "bot", &[("limit", "100".into())]).await;
    assert_eq!(body["total"], json!({"value": 60, "relation": "eq"}));
    assert_eq!(entries(&body).len(), 60);
    assert_eq!(
        items_stored,
        vec![items_stored[0]; 3],
        "each delivery again overwrote the items of the first"
    );

    let report = ingest(
        &store,
        log_data(
            &format!("/agent-hosting/{}/ghost", caller.namespace),
            &deployment,
            &events,
        ),
    )
    .await;
    assert_eq!((report.stored, report.dropped_unknown_agent), (0, 60));
    let report = ingest(
        &store,
        log_data("/agent-hosting/no-such-namespace/bot", &deployment, &events),
    )
    .await;
    assert_eq!((report.stored, report.dropped_unknown_agent), (0, 60));
    assert_eq!(store.item_count(&store.logs_table).await, items_stored[0]);
}

#[tokio::test]
async fn expired_lines_are_never_returned_or_counted() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    create_agent(&store, &key, "bot").await;
    let service_id = store.service_of(&caller.namespace, "bot").await;
    let day = 86_400 * 1_000_000_000u64;
    let line = |nanos: u64, id: &str, text: &str| LogLine {
        service_id: service_id.clone(),
        deployment_id: "dep-1".into(),
        session_id: Some("s-1".into()),
        event_id: id.into(),
        timestamp_nanos: nanos,
        text: text.into(),
    };
    let now = now_nanos();
    // Past the retention period (TTL passed; DynamoDB Local never deletes it).
    store
        .store
        .put_lines(&[line(now - 31 * day, "1", "too old")], RETENTION_DAYS)
        .await
        .unwrap();
    // Within the period, but written under a one-day retention: its TTL passed too.
    store
        .store
        .put_lines(&[line(now - 2 * day, "2", "short retention")], 1)
        .await
        .unwrap();
    store
        .store
        .put_lines(&[line(now - day, "3", "alive")], RETENTION_DAYS)
        .await
        .unwrap();
    assert_eq!(store.item_count(&store.logs_table).await, 3);

    for params in [
        vec![],
        vec![("deploymentId", "dep-1".to_owned())],
        vec![("sessionId", "s-1".to_owned())],
        vec![("query", "ALI".to_owned())],
        vec![("startTime", "0".to_owned()), ("order", "asc".to_owned())],
    ] {
        let (status, body) = read(&store, &key, "bot", &params).await;
        assert_eq!(status, 200);
        assert_eq!(
            body["total"],
            json!({"value": 1, "relation": "eq"}),
            "{params:?}"
        );
        assert_eq!(entries(&body)[0]["log"], "alive", "{params:?}");
    }
}

#[tokio::test]
async fn past_ten_thousand_lines_the_total_is_a_lower_bound() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    create_agent(&store, &key, "busy-bot").await;
    let service_id = store.service_of(&caller.namespace, "busy-bot").await;
    let base = now_nanos() - 7_200 * 1_000_000_000;
    let lines: Vec<LogLine> = (0..10_050u64)
        .map(|i| numbered_line(&service_id, base, i))
        .collect();
    store.store.put_lines(&lines, RETENTION_DAYS).await.unwrap();

    let (status, body) = read(&store, &key, "busy-bot", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(body["total"], json!({"value": 10_000, "relation": "gte"}));
    assert_eq!(entries(&body)[0]["log"], "line 10049", "newest first");
    let (_, body) = read(
        &store,
        &key,
        "busy-bot",
        &[("deploymentId", "dep-1".into()), ("offset", "9990".into())],
    )
    .await;
    assert_eq!(body["total"], json!({"value": 10_000, "relation": "gte"}));
    assert_eq!(entries(&body)[0]["log"], "line 59");
    // A narrower range is exact again.
    let start = (base / 1_000_000_000) as i64;
    let (_, body) = read(
        &store,
        &key,
        "busy-bot",
        &[
            ("startTime", start.to_string()),
            ("endTime", (start + 2).to_string()),
        ],
    )
    .await;
    let in_range = lines
        .iter()
        .filter(|l| ((l.timestamp_nanos / 1_000_000_000) as i64) < start + 2)
        .count();
    assert_eq!(body["total"], json!({"value": in_range, "relation": "eq"}));
    // A text query within its budget (100,000 lines) counts exactly past 10,000 lines: "line 1"
    // is line 1, 10-19, 100-199, 1000-1999 and 10000-10049.
    let (_, body) = read(&store, &key, "busy-bot", &[("query", "line 1".into())]).await;
    assert_eq!(body["total"], json!({"value": 1_161, "relation": "eq"}));
    assert_eq!(entries(&body)[0]["log"], "line 10049");
}

#[tokio::test]
async fn a_text_query_reads_at_most_its_budget_then_says_gte_and_its_cursor_continues() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    create_agent(&store, &key, "chatty-bot").await;
    let service_id = store.service_of(&caller.namespace, "chatty-bot").await;
    let base = now_nanos() - 7_200 * 1_000_000_000;
    let count = shared::logs::QUERY_READ_BUDGET as u64 + 5_000;
    let lines: Vec<LogLine> = (0..count)
        .map(|i| numbered_line(&service_id, base, i))
        .collect();
    for batch in lines.chunks(10_000) {
        store.store.put_lines(batch, RETENTION_DAYS).await.unwrap();
    }
    // Oldest first: "line 9" is line 9, 90-99, 900-999, 9000-9999 and 90000-99999, the last
    // ones near the budget's end.
    let (status, body) = read(
        &store,
        &key,
        "chatty-bot",
        &[("query", "line 9".into()), ("order", "asc".into())],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["total"]["relation"], "gte", "{}", body["total"]);
    assert_eq!(entries(&body)[0]["log"], "line 9");
    // The only match lies past the budget: the first page is empty and says so, its cursor
    // continues where reading stopped and finds it.
    let only_last = [("query", "line 104999".into()), ("order", "asc".into())];
    let (status, first) = read(&store, &key, "chatty-bot", &only_last).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(entries(&first).len(), 0);
    assert_eq!(first["total"], json!({"value": 0, "relation": "gte"}));
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a cursor past the budget");
    let mut next = only_last.to_vec();
    next.push(("cursor", cursor.to_owned()));
    let (status, second) = read(&store, &key, "chatty-bot", &next).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(entries(&second)[0]["log"], "line 104999");
    assert!(second.get("nextCursor").is_none());
}

#[tokio::test]
async fn cri_timestamps_have_nanoseconds_and_ties_keep_one_order() {
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let deployment = create_agent(&store, &key, "bot").await;
    let at = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let stamp = shared::logs::rfc3339_nanos(at.unix_timestamp_nanos() as u64 / 1000 * 1000 + 7);
    let events: Vec<(String, i64, String)> = ["c", "a", "b"]
        .iter()
        .enumerate()
        .map(|(i, text)| {
            (
                format!("{:056}", 3 - i),
                0,
                format!("{stamp} stdout F tie {text}"),
            )
        })
        .collect();
    ingest(
        &store,
        log_data(
            &format!("/agent-hosting/{}/bot", caller.namespace),
            &format!("{deployment}/sess-1"),
            &events,
        ),
    )
    .await;
    let (_, asc) = read(&store, &key, "bot", &[("order", "asc".into())]).await;
    let (_, desc) = read(&store, &key, "bot", &[]).await;
    let mut reversed = entries(&desc);
    reversed.reverse();
    assert_eq!(entries(&asc), reversed);
    let first = &entries(&asc)[0];
    assert_eq!(first["timestamp"], stamp.as_str());
    assert_eq!(
        first["timestamp"].as_str().unwrap().len(),
        "2025-04-18T20:34:17.153744602Z".len()
    );
    assert_eq!(first["log"], "tie b", "ties ordered by event id");
    assert_eq!(first["deploymentId"], deployment.as_str());
    assert_eq!(first["sessionId"], "sess-1");
}

/// A log store that tallies what it answers, outside the code under test: the requests made
/// and the lines in the chunks each returned (every line of a chunk read counts, whether the
/// reader decoded it or counted it by its line count).
struct Tallied<'a, S> {
    store: &'a S,
    requests: std::sync::atomic::AtomicUsize,
    lines: std::sync::atomic::AtomicUsize,
}

impl<'a, S> Tallied<'a, S> {
    fn new(store: &'a S) -> Self {
        Tallied {
            store,
            requests: Default::default(),
            lines: Default::default(),
        }
    }

    /// Requests and lines since the last call.
    fn take(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.requests.swap(0, Relaxed), self.lines.swap(0, Relaxed))
    }
}

impl<S: LogStore> LogStore for Tallied<'_, S> {
    async fn put_chunks(
        &self,
        chunks: &[shared::logs::LogChunk],
    ) -> Result<(), shared::StoreError> {
        self.store.put_chunks(chunks).await
    }

    async fn read_chunks(
        &self,
        request: &shared::logs::ChunkRequest<'_>,
    ) -> Result<shared::logs::ChunksRead, shared::StoreError> {
        use std::sync::atomic::Ordering::Relaxed;
        let read = self.store.read_chunks(request).await?;
        self.requests.fetch_add(1, Relaxed);
        let lines: usize = read.chunks.iter().map(|chunk| chunk.line_count).sum();
        self.lines.fetch_add(lines, Relaxed);
        Ok(read)
    }
}

/// The contract: `total` is exact (`eq`) up to 10,000, `{10000, gte}` beyond, and counting never
/// reads more than 10,000 lines. Shown at exactly 10,000 matching lines, at 10,001 and at 30,001,
/// on first pages, deep by offset and by cursor, in both orders and on an index, on DynamoDB
/// Local and on the in-memory store. What was read is tallied at the store: at most twice the
/// page's own lines (oldest first, with the span of lines after them that tells the last) and
/// 10,000 for the total, each pass reading at most a chunk past its budget.
#[tokio::test]
async fn total_is_exact_at_ten_thousand_and_counting_reads_at_most_ten_thousand() {
    let dynamodb = TestStore::new().await;
    total_window_on(&dynamodb.store).await;
    total_window_on(&shared::store::memory::MemoryStore::default()).await;
}

async fn total_window_on<S: LogStore>(store: &S) {
    use shared::logs::chunk::{MAX_CHUNK_LINES, MAX_CHUNK_SPAN_NANOS};
    use shared::logs::{Order, RESULT_WINDOW};
    let store = Tallied::new(store);
    let base = now_nanos() - 7_200 * 1_000_000_000;
    let line = |i: u64| numbered_line("svc-window", base, i);
    let cases: [&[(&str, &str)]; 6] = [
        &[],
        &[("limit", "1")],
        &[("order", "asc"), ("limit", "1000")],
        &[("offset", "9990"), ("limit", "10")],
        &[
            ("deploymentId", "dep-1"),
            ("offset", "4000"),
            ("limit", "1000"),
        ],
        &[("deploymentId", "dep-1"), ("order", "asc"), ("limit", "7")],
    ];
    let mut cursor_pages = 0;
    let mut most_read = 0;
    let mut stored = 0;
    for (lines, expected) in [
        (10_000, json!({"value": 10_000, "relation": "eq"})),
        (10_001, json!({"value": 10_000, "relation": "gte"})),
        (30_001, json!({"value": 10_000, "relation": "gte"})),
    ] {
        let more: Vec<LogLine> = (stored..lines).map(line).collect();
        for chunk in more.chunks(2_000) {
            store.put_lines(chunk, RETENTION_DAYS).await.unwrap();
        }
        stored = lines;
        store.take();
        for params in cases {
            let mut params: Vec<(&str, String)> =
                params.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
            let mut pages = 0;
            // The first page, then one by its cursor.
            loop {
                let (filter, query) = filter_and_query("svc-window", &params);
                let (page, _) = shared::logs::read(&store, &filter, &query, &SETTINGS.cursor_key)
                    .await
                    .unwrap();
                let (requests, read) = store.take();
                let context = format!("{lines} lines, {params:?}: {requests} requests");
                assert_eq!(json!(page.total), expected, "{context}");
                // With a cursor, a second pass counts the lines before it, beside the page's.
                let passes = if query.cursor.is_some() { 2 } else { 1 };
                let page_lines = query.offset + query.limit + 1;
                // Oldest first, a page knows its last line once the chunks of the span after it
                // are read (shared::logs::chunk): here a line a millisecond.
                let lookahead = match query.order {
                    Order::Asc => (MAX_CHUNK_SPAN_NANOS / 1_000_000) as usize,
                    Order::Desc => 0,
                };
                // A pass asks for twice the chunks of its last request until it has its lines:
                // a page reads at most twice what it needs.
                let bound = 2 * (page_lines + lookahead) + RESULT_WINDOW + passes * MAX_CHUNK_LINES;
                assert!(
                    read <= bound,
                    "{context}: read {read} lines, more than {bound}"
                );
                most_read = most_read.max(read);
                pages += 1;
                cursor_pages += usize::from(pages == 2);
                match page.next_cursor {
                    Some(cursor) if pages < 2 => params.push(("cursor", cursor)),
                    _ => break,
                }
            }
        }
    }
    // Every case reads a second page by cursor, but the deep offset at exactly 10,000 lines
    // (its first page is the last).
    assert_eq!(cursor_pages, 17);
    println!("the most lines one page read, its total included: {most_read}");
}

/// A cursor whose position lies outside the request's range (the retention start moved past it,
/// or it was forged) must not reach DynamoDB as a start key outside the key condition: before
/// the range in reading order, the range is read from its start; past it, nothing follows. The
/// total is still the whole range's.
#[tokio::test]
async fn cursors_outside_the_range_read_from_its_start_or_find_nothing() {
    let dynamodb = TestStore::new().await;
    cursors_outside_the_range_on(&dynamodb.store).await;
    cursors_outside_the_range_on(&shared::store::memory::MemoryStore::default()).await;
}

async fn cursors_outside_the_range_on<S: LogStore>(store: &S) {
    use shared::logs::position;
    let start = (now_nanos() / 1_000_000_000 - 3_600) as i64;
    let start_nanos = start as u64 * 1_000_000_000;
    let lines: Vec<LogLine> = (0..30u64)
        .map(|i| numbered_line("svc-cursor", start_nanos, i))
        .collect();
    store.put_lines(&lines, RETENTION_DAYS).await.unwrap();
    let earlier = position(start_nanos - 1_000_000_000, "1");
    let later = position(start_nanos + 2_000_000_000, "1");
    let text = |line: &LogLine| line.text.clone();
    let oldest: Vec<String> = lines.iter().take(10).map(text).collect();
    let newest: Vec<String> = lines.iter().rev().take(10).map(text).collect();
    let all = json!({"value": 30, "relation": "eq"});
    let range = [
        ("startTime", start.to_string()),
        ("endTime", (start + 1).to_string()),
    ];
    for (order, query, cursor_at, logs, total) in [
        ("asc", None, &earlier, oldest.clone(), all.clone()),
        ("asc", None, &later, vec![], all.clone()),
        ("desc", None, &later, newest.clone(), all.clone()),
        ("desc", None, &earlier, vec![], all.clone()),
        ("asc", Some("LINE"), &earlier, oldest, all.clone()),
        ("desc", Some("line"), &later, newest, all.clone()),
        // Past the range with a text query: nothing follows, and the total is still every
        // match (the pages before counted it).
        ("asc", Some("line"), &later, vec![], all),
    ] {
        let mut params: Vec<(&str, String)> = range.to_vec();
        params.push(("order", order.to_owned()));
        if let Some(query) = query {
            params.push(("query", query.to_owned()));
        }
        let (filter, _) = filter_and_query("svc-cursor", &params);
        let fingerprint = filter.fingerprint(Some(start), Some(start + 1));
        params.push((
            "cursor",
            shared::logs::cursor::encode(&SETTINGS.cursor_key, &fingerprint, cursor_at),
        ));
        let (filter, query) = filter_and_query("svc-cursor", &params);
        let context = format!("{order} {query:?} from {cursor_at}");
        let (page, _) = shared::logs::read(store, &filter, &query, &SETTINGS.cursor_key)
            .await
            .unwrap_or_else(|error| panic!("{context}: {error:?}"));
        let read: Vec<String> = page.logs.iter().map(|entry| entry.log.clone()).collect();
        assert_eq!(read, logs, "{context}");
        assert_eq!(json!(page.total), total, "{context}");
        assert_eq!(page.next_cursor.is_some(), !logs.is_empty(), "{context}");
    }
}
