//! dev-data-plane: see lib.rs. Started by `make run` and `make sam-local` (scripts/stack.sh).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use dev_data_plane::checkpoint::Checkpoint;
use dev_data_plane::cluster;
use dev_data_plane::functions::{self, Function, Schedule};
use dev_data_plane::outbox::{Message, Scheduled, SessionLines};
use dev_data_plane::rules::{self, Rule};
use dev_data_plane::secrets::SetReader;
use dev_data_plane::sessions;
use dev_data_plane::stream::{self, BoxError, StreamReader, StreamRecord};
use serde_json::Value;
use shared::store::kms::KmsKeyOpener;
use tokio::sync::{Semaphore, mpsc};

/// How the stack names the functions its Invoke API serves.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Names {
    /// sam local start-lambda: the template's logical ids.
    Logical,
    /// cargo lambda watch: the binaries.
    Binary,
}

#[derive(Parser)]
#[command(
    name = "dev-data-plane",
    about = "A simulated data plane for local runs"
)]
struct Cli {
    #[arg(long, env = "DYNAMODB_ENDPOINT")]
    endpoint: String,
    #[arg(long, env = "AGENTS_TABLE", default_value = "agents")]
    agents_table: String,
    /// Lambda's Invoke API of the stack (cargo lambda watch's port, or sam's start-lambda).
    #[arg(long)]
    invoke_url: String,
    #[arg(long, value_enum)]
    function_names: Names,
    /// How long a requested deployment takes to be ready.
    #[arg(long, default_value_t = 2000)]
    ready_after_ms: u64,
    /// Reports sent at once, at most; the rest wait their turn. cargo lambda watch stops
    /// answering every route once one function has 100 invocations waiting (docs/testing.md), and a
    /// cluster's controller paces what it sends as well.
    #[arg(long, env = "DEV_MAX_IN_FLIGHT", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    max_in_flight: u16,
    /// Where the place in the stream is kept between runs (resumed at the next start).
    #[arg(long, default_value = ".local/dev-data-plane.checkpoint.json")]
    checkpoint: PathBuf,
    #[arg(long, default_value = "template.yaml")]
    template: String,
    /// KMS (moto's server locally) to open the secret sets each deployment names; without it,
    /// sets are not read.
    #[arg(long, env = "KMS_ENDPOINT")]
    kms_endpoint: Option<String>,
    /// The template's schedules run at least this often locally (the sweeper's minute, every
    /// 10 s by default, so that a session past its deadline is ended soon after); 0 runs none.
    #[arg(long, env = "DEV_SCHEDULE_EVERY_MS", default_value_t = 10_000)]
    schedule_every_ms: u64,
}

/// Delivers reports and lines through the stack's Invoke API, a bounded number at a time.
#[derive(Clone)]
struct Delivery {
    http: reqwest::Client,
    rules: Arc<Vec<Rule>>,
    /// Where a session's lines go: the subscription's function.
    ingest: Arc<Function>,
    invoke_url: String,
    names: Names,
    permits: Arc<Semaphore>,
}

/// Attempts at delivering one report before it is given up (and said so), as EventBridge
/// retries a target before its dead-letter queue.
const DELIVERY_ATTEMPTS: u32 = 3;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dev data plane: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn open_reader(streams: &stream::LocalStreams, table: &str) -> StreamReader {
    loop {
        match StreamReader::open(streams.clone(), table).await {
            Ok(reader) => return reader,
            Err(error) => {
                eprintln!("dev data plane: waiting for the {table} table's stream ({error})");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn run(cli: Cli) -> Result<(), BoxError> {
    let template = std::fs::read_to_string(&cli.template)?;
    let rules = rules::from_template(&template)?.rules;
    let streams = stream::LocalStreams::new(&cli.endpoint);
    let mut reader = open_reader(&streams, &cli.agents_table).await;
    let mut checkpoint = Checkpoint::load(&cli.checkpoint, reader.stream_arn());
    reader.resume_after(checkpoint.resume_points().clone());
    println!(
        "dev data plane (a simulation): the stream publisher's events of {}'s stream ({} shards \
         resumed from {}), reports to {} after {} ms, {} at a time",
        cli.agents_table,
        checkpoint.resume_points().len(),
        cli.checkpoint.display(),
        cli.invoke_url,
        cli.ready_after_ms,
        cli.max_in_flight
    );
    let delivery = Delivery {
        http: reqwest::Client::new(),
        rules: Arc::new(rules),
        ingest: Arc::new(functions::by_binary(&template, "ingest-logs")?),
        invoke_url: cli.invoke_url.clone(),
        names: cli.function_names,
        permits: Arc::new(Semaphore::new(usize::from(cli.max_in_flight))),
    };
    if cli.schedule_every_ms > 0 {
        let most = Duration::from_millis(cli.schedule_every_ms);
        for schedule in functions::schedules(&template)? {
            tokio::spawn(delivery.clone().run_schedule(schedule, most));
        }
    }
    let sets = set_reader(&cli)?.map(Arc::new);
    let ready_after = Duration::from_millis(cli.ready_after_ms);
    // Each delivered (or abandoned) message says which record it was for.
    let (done, mut delivered) = mpsc::unbounded_channel::<(String, String)>();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            Some((shard, sequence)) = delivered.recv() => checkpoint.delivered(&shard, &sequence),
            _ = tick.tick() => {
                for record in poll(&mut reader).await {
                    let events = publish(&record);
                    if let Some(sets) = &sets {
                        receive_sets(sets, &events);
                    }
                    let messages: Vec<Scheduled> = events
                        .iter()
                        .flat_map(|event| {
                            let mut answers = cluster::respond(event, ready_after);
                            answers.extend(sessions::respond(event));
                            answers
                        })
                        .collect();
                    checkpoint.read(&record.shard, &record.sequence, messages.len());
                    for scheduled in messages {
                        let (delivery, done) = (delivery.clone(), done.clone());
                        let origin = (record.shard.clone(), record.sequence.clone());
                        tokio::spawn(async move {
                            delivery.send(scheduled).await;
                            let _ = done.send(origin);
                        });
                    }
                }
                if let Err(error) = checkpoint.save() {
                    eprintln!("dev data plane: saving {}: {error}", cli.checkpoint.display());
                }
            }
        }
    }
}

/// The records written since the last poll; none while the store is away (they are still
/// there when it is back).
async fn poll(reader: &mut StreamReader) -> Vec<StreamRecord> {
    reader.poll().await.unwrap_or_else(|error| {
        eprintln!("dev data plane: reading the stream: {error}");
        Vec::new()
    })
}

/// The event the stream publisher puts on the bus for a record (its own code), said; a record
/// no event can be made of is said too, and passed, as the publisher passes it.
fn publish(record: &StreamRecord) -> Vec<Value> {
    match shared::stream_events::event_of(&record.record) {
        Ok(Some(event)) => {
            let detail = &event.detail;
            let text = |name: &str| detail[name].as_str().unwrap_or_default().to_owned();
            let subject = match detail.get("sessionId") {
                Some(_) => format!("session {}", text("sessionId")),
                None => format!("deployment {}", text("deploymentId")),
            };
            println!(
                "dev data plane: {} {}/{} {subject}",
                event.detail_type.as_str(),
                text("namespace"),
                text("agentName"),
            );
            vec![rules::as_delivered(&event)]
        }
        Ok(None) => Vec::new(),
        Err(error) => {
            eprintln!("dev data plane: stream record {}: {error}", record.sequence);
            Vec::new()
        }
    }
}

/// The secret sets reader, when a KMS is given: the agents table's client and KMS's.
fn set_reader(cli: &Cli) -> Result<Option<SetReader>, BoxError> {
    let Some(kms_endpoint) = &cli.kms_endpoint else {
        println!("dev data plane: no KMS_ENDPOINT, secret sets are not read");
        return Ok(None);
    };
    let dynamodb = shared::aws::dynamodb_client(Some(&cli.endpoint))?;
    let tables = shared::config::TableNames {
        agents: cli.agents_table.clone(),
        accounts: String::new(),
        logs: String::new(),
    };
    Ok(Some(SetReader {
        store: shared::store::dynamodb::DynamoStore::new(dynamodb, tables),
        keys: KmsKeyOpener::new(shared::aws::kms_client(Some(kms_endpoint))?),
    }))
}

/// Reads the sets each requested deployment names, beside its reports (which do not wait).
fn receive_sets(sets: &Arc<SetReader>, events: &[Value]) {
    for event in events {
        if event["detail-type"] != "Deployment Requested" {
            continue;
        }
        let (sets, event) = (sets.clone(), event.clone());
        tokio::spawn(async move {
            for line in sets.receive(&event).await {
                println!("dev data plane: {line}");
            }
        });
    }
}

impl Delivery {
    /// Waits the message's delay, then sends it (a report on the simulated bus, lines to the
    /// ingest function), tried again a few times.
    async fn send(&self, mut scheduled: Scheduled) {
        tokio::time::sleep(scheduled.after).await;
        let Ok(_permit) = self.permits.acquire().await else {
            return;
        };
        let message = &mut scheduled.message;
        for attempt in 1..=DELIVERY_ATTEMPTS {
            message.stamped(time::OffsetDateTime::now_utc());
            let sent = match (message.bus_event(), &*message) {
                (Some(event), _) => self.put(&event).await,
                (None, Message::Lines(lines)) => self.ingest(lines).await,
                (None, _) => return,
            };
            match sent {
                Ok(outcomes) => {
                    println!("dev data plane: sent {}: {outcomes}", message.describe());
                    return;
                }
                Err(error) if attempt < DELIVERY_ATTEMPTS => {
                    eprintln!(
                        "dev data plane: a message was not delivered ({error}); trying again"
                    );
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(error) => eprintln!(
                    "dev data plane: {} was given up after {attempt} attempts: {error}",
                    message.describe()
                ),
            }
        }
    }

    /// The name the stack's Invoke API knows `function` by.
    fn name_of<'a>(&self, logical: &'a str, binary: &'a str) -> &'a str {
        match self.names {
            Names::Logical => logical,
            Names::Binary => binary,
        }
    }

    /// Invokes `function` with `event`; what it answered.
    async fn invoke(&self, function: &str, event: &Value) -> Result<String, BoxError> {
        let response = self
            .http
            .post(format!(
                "{}/2015-03-31/functions/{function}/invocations",
                self.invoke_url
            ))
            .json(event)
            .send()
            .await?;
        let status = response.status();
        // Lambda's Invoke API says a function's own error in a header, with a 200.
        let failed = response.headers().contains_key("x-amz-function-error");
        let outcome: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() || failed {
            return Err(format!("{function}: {status} {outcome}").into());
        }
        Ok(format!("{status} {outcome}"))
    }

    /// Invokes the function of each rule the event matches; what they answered.
    async fn put(&self, event: &Value) -> Result<String, BoxError> {
        let mut outcomes = Vec::new();
        for rule in self.rules.iter() {
            if rules::matches(&rule.pattern, event)? {
                let function = self.name_of(&rule.function, &rule.binary);
                outcomes.push(self.invoke(function, event).await?);
            }
        }
        Ok(outcomes.join(", "))
    }

    /// Delivers a session's lines as its log stream's subscription would.
    async fn ingest(&self, lines: &SessionLines) -> Result<String, BoxError> {
        let source = shared::logs::LineSource {
            namespace: &lines.namespace,
            agent: &lines.agent,
            deployment_id: &lines.deployment_id,
            session_id: Some(&lines.session_id),
        };
        let millis = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
        let events: Vec<(String, i64, String)> = lines
            .lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let at = i64::try_from(millis).unwrap_or(0) + i as i64;
                (format!("{at}{i:04}"), at, line.clone())
            })
            .collect();
        let data = shared::logs::subscription::log_data(
            &source.log_group(),
            &source.log_stream(),
            &events,
        );
        let event = shared::logs::subscription::subscription_event(&data);
        let ingest = self.name_of(&self.ingest.logical, &self.ingest.binary);
        self.invoke(ingest, &event).await
    }

    /// Invokes the schedule's function as its rule would, at least every `most`.
    async fn run_schedule(self, schedule: Schedule, most: Duration) {
        let mut tick = tokio::time::interval(schedule.every.min(most));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let function = &schedule.function;
        let name = self.name_of(&function.logical, &function.binary);
        loop {
            tick.tick().await;
            let event = functions::scheduled_event(time::OffsetDateTime::now_utc());
            if let Err(error) = self.invoke(name, &event).await {
                eprintln!("dev data plane: the schedule of {name}: {error}");
            }
        }
    }
}
