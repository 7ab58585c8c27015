//! What one session costs in DynamoDB, and a million of them in AWS charges: a session's life
//! run through the service's own code on DynamoDB Local (a start with a typical body, the data
//! plane's `started` report with a Daily room and token, its `ended` report), the items each step
//! reads and writes read back raw, and their units counted by DynamoDB's published rules
//! (an item's size is its attribute names and values; a write unit per started KB, doubled in a
//! transaction; a strongly consistent read unit per started 4 KB; an index write a unit per KB
//! of the entry, two when the entry's key changes). Prices: us-east-1, on-demand, as published.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;
use shared::agent::{AgentRecord, AgentStore, Change, ConfigChanges, DeploymentState};
use shared::auth::Principal;
use shared::config::TableNames;
use shared::session::SessionRequest;
use shared::session::lifecycle::{self, SessionRetention};
use shared::session::report::SessionReport;
use shared::store::dynamodb::{DynamoStore, items, session_items};

/// The start's reads of the session while it waits for the data plane's report, at 100, 200,
/// 400, 500 ms: a report within about a second of the start (a warm agent) is read on the 4th.
pub const WAIT_READS: u32 = 4;
/// How long the start waits for that report, billed as the start function's duration.
pub const WAIT_SECONDS: f64 = 1.2;

/// DynamoDB's size of a value (published rules: strings and binaries their bytes, numbers about
/// one byte per two digits plus one, booleans and nulls one, maps and lists 3 plus their
/// elements, each list element one more).
fn value_bytes(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(text) => text.len(),
        AttributeValue::N(number) => number.trim_start_matches('-').len().div_ceil(2) + 1,
        AttributeValue::B(blob) => blob.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::M(map) => 3 + item_bytes(map),
        AttributeValue::L(list) => 3 + list.iter().map(|v| 1 + value_bytes(v)).sum::<usize>(),
        AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
        AttributeValue::Ns(set) => set.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        _ => 0,
    }
}

fn item_bytes(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_bytes(value))
        .sum()
}

fn write_units(bytes: usize) -> u32 {
    bytes.div_ceil(1024).max(1) as u32
}

fn read_units(bytes: usize) -> u32 {
    bytes.div_ceil(4096).max(1) as u32
}

async fn raw(client: &Client, table: &str, pk: &str, sk: &str) -> HashMap<String, AttributeValue> {
    client
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(pk.into()))
        .key("sk", AttributeValue::S(sk.into()))
        .send()
        .await
        .expect("a read of DynamoDB Local")
        .item
        .expect("the item")
}

/// Agent `body` of `owner`, created and its deployment reported ready: it takes sessions.
pub async fn ready_agent(
    store: &DynamoStore,
    owner: &Principal,
    body: serde_json::Value,
) -> AgentRecord {
    let (name, config) = ConfigChanges::from_json(body)
        .and_then(ConfigChanges::into_new_agent)
        .expect("a valid agent");
    let agent = AgentRecord::new(
        owner,
        &name,
        config,
        shared::manifest::DeploymentMode::Simulated,
        "2026-11-25T10:00:00.000Z",
    );
    store.create_agent(&agent, None).await.expect("the agent");
    let mut ready = agent.next_version();
    ready.active.status.state = DeploymentState::Ready;
    let change = Change::Status {
        deployment_id: &ready.active.deployment.id,
        status: &ready.active.status,
    };
    store
        .write_agent(agent.version, &ready, change, None)
        .await
        .expect("ready");
    agent
}

/// One step of a session's life: its read and write units.
pub struct Step {
    pub name: &'static str,
    pub reads: u32,
    pub writes: u32,
    pub index_writes: u32,
}

pub struct SessionCost {
    pub agent_bytes: usize,
    pub session_bytes: [usize; 3],
    pub steps: Vec<Step>,
}

/// Runs one session's life and counts its units.
pub async fn measure(client: &Client, store: &DynamoStore, tables: &TableNames) -> SessionCost {
    let owner = Principal {
        account_id: "bench-cost".into(),
        namespace: "bench-cost-ns".into(),
    };
    let body = json!({"serviceName": "cost-agent", "image": "ghcr.io/acme/voice-agent:1.4.2"});
    let agent = ready_agent(store, &owner, body).await;
    let name = agent.name.clone();

    let request = SessionRequest {
        body: Some(
            json!({"user": {"name": "Ada", "id": "user-0193"}, "language": "en-US"}).to_string(),
        ),
        ..SessionRequest::default()
    };
    let now = time::OffsetDateTime::now_utc();
    let session = lifecycle::start(store, store, &owner, &name, &request, now)
        .await
        .expect("a start");
    let pk = items::namespace_pk(&owner.namespace);
    let agent_sk = items::agent_sk(&name);
    let session_sk = session_items::session_sk(&agent.service_id, &session.session_id);
    let agent_bytes = item_bytes(&raw(client, &tables.agents, &pk, &agent_sk).await);
    let starting = item_bytes(&raw(client, &tables.agents, &pk, &session_sk).await);

    let report = |state: &str, extra: serde_json::Value| -> SessionReport {
        let mut detail = json!({"namespace": owner.namespace, "agent": name,
            "sessionId": session.session_id, "state": state,
            "observedAt": time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339).unwrap()});
        for (key, value) in extra.as_object().unwrap() {
            detail[key] = value.clone();
        }
        serde_json::from_value(detail).expect("a report")
    };
    let kept = SessionRetention::days(30);
    let started = report(
        "started",
        json!({"dailyRoom": "https://acme.daily.co/a1b2c3d4e5f6", "dailyToken": "t".repeat(280),
               "botStartSeconds": 0.9, "coldStart": false}),
    );
    lifecycle::apply_report(store, store, &started, kept)
        .await
        .expect("started");
    let running = item_bytes(&raw(client, &tables.agents, &pk, &session_sk).await);
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let ended = report("ended", json!({"completionStatus": "completed"}));
    lifecycle::apply_report(store, store, &ended, kept)
        .await
        .expect("ended");
    let over = item_bytes(&raw(client, &tables.agents, &pk, &session_sk).await);

    let agent_wcu = write_units(agent_bytes);
    let agent_rcu = read_units(agent_bytes);
    let session_rcu = read_units(starting.max(running));
    let steps = vec![
        Step {
            name: "start: the agent read, one transaction (the agent's count, the session put)",
            reads: agent_rcu,
            writes: 2 * (agent_wcu + write_units(starting)),
            index_writes: 1,
        },
        Step {
            name: "the start's wait: the session read again until reported (a report at ~1 s)",
            reads: WAIT_READS * session_rcu,
            writes: 0,
            index_writes: 0,
        },
        Step {
            name: "`started` report: agent and session read, the session written (its deadline moves)",
            reads: agent_rcu + session_rcu,
            writes: 2 * write_units(starting.max(running)),
            index_writes: 2,
        },
        Step {
            name: "`ended` report: agent and session read, the session and the agent's count in one transaction",
            reads: agent_rcu + session_rcu,
            writes: 2 * (write_units(running.max(over)) + agent_wcu),
            index_writes: 1,
        },
    ];
    SessionCost {
        agent_bytes,
        session_bytes: [starting, running, over],
        steps,
    }
}

impl SessionCost {
    pub fn print(&self) {
        println!(
            "\nOne session's DynamoDB units (items measured on DynamoDB Local: the agent {} B; the \
             session {} B starting, {} B started, {} B ended):\n",
            self.agent_bytes, self.session_bytes[0], self.session_bytes[1], self.session_bytes[2]
        );
        println!("| step | read units | write units | index write units |");
        println!("|---|---:|---:|---:|");
        let (mut reads, mut writes, mut index) = (0, 0, 0);
        for step in &self.steps {
            println!(
                "| {} | {} | {} | {} |",
                step.name, step.reads, step.writes, step.index_writes
            );
            reads += step.reads;
            writes += step.writes;
            index += step.index_writes;
        }
        println!("| a session | {reads} | {writes} | {index} |");
        let dollars = |count: f64, per_million: f64| count * per_million;
        let rows = [
            (
                "DynamoDB writes ($0.625 per million write units)",
                dollars(f64::from(writes + index), 0.625),
            ),
            (
                "DynamoDB reads ($0.125 per million read units)",
                dollars(f64::from(reads), 0.125),
            ),
            ("API Gateway REST API, the start ($3.50 per million)", 3.50),
            (
                "Lambda requests: start, authorizer (at most), stream publisher (at most), two reports ($0.20 per million)",
                5.0 * 0.20,
            ),
            (
                "Lambda duration, arm64 256 MB: the start's ~1.2 s wait, three 20 ms invocations (publisher, reports) ($0.0000133334 per GB-s)",
                (0.25 * WAIT_SECONDS + 3.0 * 0.25 * 0.02) * 13.3334,
            ),
            (
                "EventBridge: Session Requested and two reports on the bus ($1.00 each)",
                3.0 * 1.00,
            ),
        ];
        println!(
            "\nA million sessions, us-east-1 list prices (docs/performance.md says where each is from):\n"
        );
        println!("| part | per million sessions |");
        println!("|---|---:|");
        let mut total = 0.0;
        for (part, cost) in rows {
            println!("| {part} | ${cost:.2} |");
            total += cost;
        }
        println!("| total | ${total:.2} |");
    }
}
