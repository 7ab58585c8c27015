//! Where reports and lines go locally: the bus's rules to the status functions, and the log
//! subscription to the ingest function, all through the stack's Invoke API, a bounded number
//! at a time, each tried again a few times (as EventBridge retries a target). The simulation
//! sends what it schedules; the data plane on an engine sends through [`Reports`].

use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use data_plane::ports::{LineBatch, Reports, SessionStatus};
use dev_data_plane::functions::{self, Function, Schedule};
use dev_data_plane::outbox::{Message, Scheduled, SessionLines};
use dev_data_plane::rules::{self, Rule};
use dev_data_plane::stream::BoxError;
use serde_json::Value;
use shared::agent::StatusReport;
use shared::logs::LineSource;
use shared::logs::subscription::{log_data, subscription_event};
use tokio::sync::Semaphore;

/// How the stack names the functions its Invoke API serves.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Names {
    /// sam local start-lambda: the template's logical ids.
    Logical,
    /// cargo lambda watch: the binaries.
    Binary,
}

/// Attempts at delivering one report before it is given up (and said so), as EventBridge
/// retries a target before its dead-letter queue.
const DELIVERY_ATTEMPTS: u32 = 3;

/// Delivers reports and lines through the stack's Invoke API, a bounded number at a time.
#[derive(Clone)]
pub struct Delivery {
    http: reqwest::Client,
    rules: Arc<Vec<Rule>>,
    /// Where a log stream's lines go: the subscription's function.
    ingest: Arc<Function>,
    invoke_url: String,
    names: Names,
    permits: Arc<Semaphore>,
}

impl Delivery {
    pub fn new(
        rules: Vec<Rule>,
        ingest: Function,
        invoke_url: String,
        names: Names,
        max_in_flight: u16,
    ) -> Self {
        Delivery {
            http: reqwest::Client::new(),
            rules: Arc::new(rules),
            ingest: Arc::new(ingest),
            invoke_url,
            names,
            permits: Arc::new(Semaphore::new(usize::from(max_in_flight))),
        }
    }

    /// Waits the message's delay, then sends it (a report on the simulated bus, lines to the
    /// ingest function), tried again a few times.
    pub async fn send(&self, mut scheduled: Scheduled) {
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
                (None, Message::Batch(batch)) => self.ingest_batch(batch).await,
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

    /// Delivers a simulated session's lines as its log stream's subscription would, dated now.
    async fn ingest(&self, lines: &SessionLines) -> Result<String, BoxError> {
        let source = LineSource {
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
        self.subscription(&source, &events).await
    }

    /// Delivers a replica's lines, their events made, as its log stream's subscription would.
    async fn ingest_batch(&self, batch: &LineBatch) -> Result<String, BoxError> {
        let source = LineSource {
            namespace: &batch.namespace,
            agent: &batch.agent,
            deployment_id: &batch.deployment_id,
            session_id: batch.session_id.as_deref(),
        };
        self.subscription(&source, &batch.events).await
    }

    /// Invokes the ingest function with one subscription delivery of `source`'s stream.
    async fn subscription(
        &self,
        source: &LineSource<'_>,
        events: &[(String, i64, String)],
    ) -> Result<String, BoxError> {
        let data = log_data(&source.log_group(), &source.log_stream(), events);
        let event = subscription_event(&data);
        let ingest = self.name_of(&self.ingest.logical, &self.ingest.binary);
        self.invoke(ingest, &event).await
    }

    /// Invokes the schedule's function as its rule would, at least every `most`.
    pub async fn run_schedule(self, schedule: Schedule, most: Duration) {
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

/// The data plane on an engine reports as the simulation does: at once, stamped when sent.
impl Reports for Delivery {
    async fn deployment(&self, report: StatusReport) {
        self.send(now(Message::Deployment(report))).await;
    }

    async fn session(&self, report: SessionStatus) {
        self.send(now(Message::Session(report))).await;
    }

    async fn lines(&self, batch: LineBatch) {
        self.send(now(Message::Batch(batch))).await;
    }
}

fn now(message: Message) -> Scheduled {
    Scheduled {
        after: Duration::ZERO,
        message,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use http_body_util::{BodyExt, Full};
    use hyper::body::{Bytes, Incoming};
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use serde_json::json;
    use time::OffsetDateTime;

    use super::*;

    type Invoked = Arc<Mutex<Vec<(String, Value)>>>;

    /// An Invoke API that answers every function 200 `{}` and records what it was sent.
    async fn invoke_api() -> (String, Invoked) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let invoked = Invoked::default();
        let recorder = invoked.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorder = recorder.clone();
                let service = service_fn(move |request: hyper::Request<Incoming>| {
                    let recorder = recorder.clone();
                    async move {
                        let path = request.uri().path().to_owned();
                        let body = request.into_body().collect().await?.to_bytes();
                        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        recorder.lock().unwrap().push((path, body));
                        Ok::<_, hyper::Error>(hyper::Response::new(Full::new(Bytes::from("{}"))))
                    }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        (url, invoked)
    }

    async fn delivery() -> (Delivery, Invoked) {
        let template =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .unwrap();
        let rules = rules::from_template(&template).unwrap().rules;
        let ingest = functions::by_binary(&template, "ingest-logs").unwrap();
        let (url, invoked) = invoke_api().await;
        (Delivery::new(rules, ingest, url, Names::Binary, 4), invoked)
    }

    #[tokio::test]
    async fn a_replicas_lines_reach_the_ingest_function_as_their_log_streams_subscription_delivers_them()
     {
        let (delivery, invoked) = delivery().await;
        let events = vec![(
            "0000000000000000000100000000070000".to_owned(),
            1,
            "1970-01-01T00:00:00.001000000Z stderr F ready".to_owned(),
        )];
        let batch = LineBatch {
            namespace: "tiny-ferret-1".into(),
            agent: "voice-bot".into(),
            deployment_id: "dep-1".into(),
            session_id: Some("sess-1".into()),
            events: events.clone(),
        };
        delivery.lines(batch).await;
        let data = log_data(
            "/agent-hosting/tiny-ferret-1/voice-bot",
            "dep-1/sess-1",
            &events,
        );
        assert_eq!(
            *invoked.lock().unwrap(),
            vec![(
                "/2015-03-31/functions/ingest-logs/invocations".to_owned(),
                subscription_event(&data)
            )]
        );
    }

    #[tokio::test]
    async fn a_session_report_goes_by_the_buss_rules_to_the_session_status_function_stamped_when_sent()
     {
        let (delivery, invoked) = delivery().await;
        let report = SessionStatus {
            namespace: "tiny-ferret-1".into(),
            agent: "voice-bot".into(),
            session_id: "sess-1".into(),
            state: "started",
            ws_url: None,
            daily_room: None,
            daily_token: None,
            completion_status: None,
            bot_start_seconds: Some(0.5),
            cold_start: Some(true),
            observed_at: OffsetDateTime::UNIX_EPOCH,
        };
        delivery.session(report).await;
        let invoked = invoked.lock().unwrap();
        let [(path, event)] = invoked.as_slice() else {
            panic!("{invoked:?}")
        };
        assert_eq!(path, "/2015-03-31/functions/session-status/invocations");
        assert_eq!(event["detail-type"], "Session Status");
        assert_eq!(event["detail"]["sessionId"], "sess-1");
        assert_eq!(event["detail"]["coldStart"], json!(true));
        let observed = event["detail"]["observedAt"].as_str().unwrap();
        assert!(!observed.starts_with("1970"), "{observed}");
    }

    #[tokio::test]
    async fn a_deployment_report_goes_by_the_buss_rules_to_the_deployment_status_function() {
        let (delivery, invoked) = delivery().await;
        let report = StatusReport {
            namespace: "tiny-ferret-1".into(),
            agent: "voice-bot".into(),
            deployment_id: "dep-1".into(),
            state: shared::agent::DeploymentState::Ready,
            ready_replicas: 1,
            active_session_count: 0,
            restart_count: 0,
            replicas_started: 1,
            last_exit_code: None,
            error: None,
            observed_at: OffsetDateTime::UNIX_EPOCH,
        };
        delivery.deployment(report).await;
        let invoked = invoked.lock().unwrap();
        let [(path, event)] = invoked.as_slice() else {
            panic!("{invoked:?}")
        };
        assert_eq!(path, "/2015-03-31/functions/deployment-status/invocations");
        assert_eq!(event["detail-type"], "Deployment Status");
        assert_eq!(event["detail"]["readyReplicas"], json!(1));
        let observed = event["detail"]["observedAt"].as_str().unwrap();
        assert!(!observed.starts_with("1970"), "{observed}");
    }
}
