//! The data plane's service binary (src/bin/data-plane.rs) run as ECS runs it: the compiled
//! binary, given exactly the environment template.yaml gives the service, against moto's server
//! (ECS, SQS, EventBridge, CloudWatch Logs, Secrets Manager, KMS, Lambda) and DynamoDB Local
//! (scripts/with-dynamodb.sh). The control plane's events reach it only through its SQS inbox;
//! what it does is read back from ECS (the tasks and their task definitions) and the queues.
//!
//! moto runs no container: a task's holder never answers (its ENI address is moto's), so no
//! replica becomes ready and none is adopted as idle; what is asserted is what the binary asks
//! of ECS, which is what the next data plane finds.

mod moto_server;

use std::collections::BTreeSet;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aws_sdk_ecs::types::{CpuArchitecture, DesiredStatus, Task, TaskField};
use aws_sdk_sqs::types::QueueAttributeName;
use data_plane::ecs::definition::{AGENT_CONTAINER, HOLDER_CONTAINER};
use moto_server::MotoServer;
use serde_json::{Value, json};
use shared::agent::{AgentRecord, AgentStore, ConfigChanges, CreateOutcome};
use shared::config::TableNames;
use shared::store::dynamodb::DynamoStore;

const CLUSTER: &str = "agent-hosting";
const STACK: &str = "test-stack";
const BUS: &str = "agents";
const HOLDER_IMAGE: &str =
    "123456789012.dkr.ecr.us-east-1.amazonaws.com/agent-hosting-platform:holder-abc";
const REPLICA_LOG_GROUP: &str = "/agent-hosting-platform/test-stack/replicas";
/// The deployment whose reserve outlives its binary.
const SECOND_DEPLOYMENT: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
/// Bounds of the waits below (never asserted as timings).
const WAIT: Duration = Duration::from_secs(30);
const PAUSE: Duration = Duration::from_millis(200);
/// How long a second binary is watched for a task it should not start: past two of its
/// reconcile ticks (ECS_TICK, 5 s) and its adoption's holder question (2 s).
const WATCH: Duration = Duration::from_secs(12);

/// The compiled binary, killed when dropped (a failed assertion included); its output in a
/// file, printed when the test fails.
struct Binary {
    child: Child,
    output: PathBuf,
}

impl Binary {
    fn start(environment: &[(&str, String)], name: &str) -> Self {
        let output = std::env::temp_dir().join(format!(
            "service-binary-{name}-{}.log",
            uuid::Uuid::new_v4().simple()
        ));
        let file = File::create(&output).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_data-plane"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "info")
            .envs(environment.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Binary { child, output }
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGTERM (ECS stopping the task), then its exit status, waited for within [`WAIT`].
    async fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no exit within {WAIT:?} of SIGTERM"
            );
            tokio::time::sleep(PAUSE).await;
        }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let output = std::fs::read_to_string(&self.output).unwrap_or_default();
            eprintln!("--- the data plane's output ---\n{output}");
        }
        let _ = std::fs::remove_file(&self.output);
    }
}

/// moto and DynamoDB Local with what the stack makes, and the service's environment.
struct Stack {
    /// Held for the stack's life: stopped when dropped.
    _moto: MotoServer,
    ecs: aws_sdk_ecs::Client,
    sqs: aws_sdk_sqs::Client,
    inbox: String,
    reports: String,
    environment: Vec<(&'static str, String)>,
    /// The agents table, as the control plane writes it.
    store: DynamoStore,
}

impl Stack {
    async fn create() -> Self {
        let moto = MotoServer::start();
        let fixture = moto.ecs_fixture(CLUSTER);
        let config = moto.sdk_config();
        let sqs = aws_sdk_sqs::Client::new(&config);
        let inbox = create_queue(&sqs, "data-plane-inbox").await;
        let reports = create_queue(&sqs, "reports").await;
        report_rule(&aws_sdk_eventbridge::Client::new(&config), &sqs, &reports).await;
        let ingest = moto.lambda_function("ingest-logs");
        let dynamodb = std::env::var(shared::config::DYNAMODB_ENDPOINT)
            .expect("run under scripts/with-dynamodb.sh");
        let agents_table = format!("agents-{}", uuid::Uuid::new_v4().simple());
        let client = shared::aws::dynamodb_client(Some(&dynamodb)).unwrap();
        let tables = shared::store::tables::AGENTS;
        shared::store::tables::create_table(&client, &tables, &agents_table)
            .await
            .unwrap();
        let store = DynamoStore::new(
            client,
            TableNames {
                agents: agents_table.clone(),
                accounts: String::new(),
                logs: String::new(),
            },
        );
        let text = |key: &str| fixture[key].as_str().unwrap().to_owned();
        // template.yaml's DataPlaneTaskDefinition environment, every variable of it.
        let environment = vec![
            ("STACK_NAME", STACK.to_owned()),
            ("AGENTS_TABLE", agents_table),
            ("DATA_PLANE_INBOX_URL", inbox.clone()),
            ("EVENT_BUS_NAME", BUS.to_owned()),
            ("INGEST_FUNCTION_ARN", ingest),
            ("LOG_RETENTION_DAYS", "30".to_owned()),
            ("ECS_CLUSTER", CLUSTER.to_owned()),
            ("REPLICA_SUBNETS", text("subnet")),
            ("REPLICA_SECURITY_GROUP", text("securityGroup")),
            ("REPLICA_ASSIGN_PUBLIC_IP", "DISABLED".to_owned()),
            (
                "REPLICA_EXECUTION_ROLE_ARN",
                "arn:aws:iam::123456789012:role/test-stack-replica-execution".to_owned(),
            ),
            ("HOLDER_IMAGE", HOLDER_IMAGE.to_owned()),
            ("REPLICA_SECRETS_PREFIX", format!("agent-hosting/{STACK}/")),
            ("REPLICA_LOG_GROUP", REPLICA_LOG_GROUP.to_owned()),
            (
                "PLATFORM_LOG_GROUP",
                "/agent-hosting-platform/test-stack/holders".to_owned(),
            ),
            ("AWS_REGION", "us-east-1".to_owned()),
            // The SDK's own variables: every service at moto but DynamoDB, dummy credentials.
            ("AWS_ENDPOINT_URL", moto.endpoint().to_owned()),
            ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb),
            ("AWS_ACCESS_KEY_ID", "local".to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "local".to_owned()),
        ];
        Stack {
            ecs: aws_sdk_ecs::Client::new(&config),
            _moto: moto,
            sqs,
            inbox,
            reports,
            environment,
            store,
        }
    }

    /// `name` in `dev-local` as the control plane stores it, its active deployment `deployment`
    /// with a reserve of 2 (what a restarted data plane reads back); its service id.
    async fn store_agent(&self, name: &str, deployment: &str) -> String {
        let body = json!({
            "serviceName": name,
            "image": "ghcr.io/acme/demo-agent:1.0",
            "nodeType": "arm",
            "agentProfile": "agent-1x",
            "autoScaling": {"minAgents": 2, "maxAgents": 50},
        });
        let (name, config) = ConfigChanges::from_json(body)
            .and_then(ConfigChanges::into_new_agent)
            .unwrap();
        let owner = shared::testing::dev_owner();
        let mut agent = AgentRecord::new(
            &owner,
            &name,
            config,
            shared::manifest::DeploymentMode::Simulated,
            "2026-11-26T10:00:00.000Z",
        );
        agent.active.deployment.id = deployment.to_owned();
        let created = self.store.create_agent(&agent, None).await.unwrap();
        assert!(matches!(created, CreateOutcome::Created), "{created:?}");
        agent.service_id
    }

    fn binary(&self, name: &str) -> Binary {
        Binary::start(&self.environment, name)
    }

    async fn send(&self, event: &Value) {
        self.sqs
            .send_message()
            .queue_url(&self.inbox)
            .message_body(event.to_string())
            .send()
            .await
            .unwrap();
    }

    /// The cluster's tasks not stopped, started for `deployment`.
    async fn tasks(&self, deployment: &str) -> Vec<Task> {
        let listed = self
            .ecs
            .list_tasks()
            .cluster(CLUSTER)
            .desired_status(DesiredStatus::Running)
            .send()
            .await
            .unwrap();
        if listed.task_arns().is_empty() {
            return Vec::new();
        }
        let described = self
            .ecs
            .describe_tasks()
            .cluster(CLUSTER)
            .set_tasks(Some(listed.task_arns().to_vec()))
            .include(TaskField::Tags)
            .send()
            .await
            .unwrap();
        described
            .tasks()
            .iter()
            .filter(|task| task.started_by() == Some(deployment))
            .filter(|task| task.last_status() != Some("STOPPED"))
            .cloned()
            .collect()
    }

    /// The inbox's messages, visible or being handled.
    async fn in_inbox(&self) -> usize {
        MotoServer::messages_in(&self.sqs, &self.inbox).await
    }

    /// Waits (bounded) until `deployment` has `count` tasks; their ARNs.
    async fn until_tasks(&self, deployment: &str, count: usize) -> BTreeSet<String> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let tasks = self.tasks(deployment).await;
            if tasks.len() == count {
                return arns(&tasks);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{deployment}: {} tasks, not {count}, within {WAIT:?}",
                tasks.len()
            );
            tokio::time::sleep(PAUSE).await;
        }
    }

    async fn until_inbox_empty(&self) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while self.in_inbox().await > 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the inbox is not emptied"
            );
            tokio::time::sleep(PAUSE).await;
        }
    }

    /// The reports the binary put on the bus so far (the rule's queue), as events.
    async fn reports(&self) -> Vec<Value> {
        let received = self
            .sqs
            .receive_message()
            .queue_url(&self.reports)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        received
            .messages()
            .iter()
            .filter_map(|message| serde_json::from_str(message.body()?).ok())
            .collect()
    }
}

async fn create_queue(sqs: &aws_sdk_sqs::Client, name: &str) -> String {
    sqs.create_queue()
        .queue_name(name)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap()
}

/// The agents bus with a rule taking the data plane's reports to `queue` (to read them back).
async fn report_rule(events: &aws_sdk_eventbridge::Client, sqs: &aws_sdk_sqs::Client, queue: &str) {
    let queue_arn = sqs
        .get_queue_attributes()
        .queue_url(queue)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&QueueAttributeName::QueueArn]
        .clone();
    events.create_event_bus().name(BUS).send().await.unwrap();
    events
        .put_rule()
        .name("data-plane-reports")
        .event_bus_name(BUS)
        .event_pattern(json!({"source": ["agent-hosting.data-plane"]}).to_string())
        .send()
        .await
        .unwrap();
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("reports")
        .arn(queue_arn)
        .build()
        .unwrap();
    events
        .put_targets()
        .rule("data-plane-reports")
        .event_bus_name(BUS)
        .targets(target)
        .send()
        .await
        .unwrap();
}

fn arns(tasks: &[Task]) -> BTreeSet<String> {
    tasks
        .iter()
        .filter_map(|task| task.task_arn().map(str::to_owned))
        .collect()
}

/// A `Deployment Requested` as the bus delivers it (the inbox's fixture), for `agent` with
/// `deployment`, its reserve 2.
fn deployment_requested(agent: &str, deployment: &str) -> Value {
    let mut event: Value = serde_json::from_str(include_str!(
        "../../events/data-plane-inbox-deployment-requested.json"
    ))
    .unwrap();
    event["detail"]["agentName"] = json!(agent);
    event["detail"]["deploymentId"] = json!(deployment);
    let manifest = &mut event["detail"]["manifest"];
    manifest["metadata"]["M"]["name"]["S"] = json!(agent);
    manifest["spec"]["M"]["autoScaling"]["M"]["minReplicas"]["N"] = json!("2");
    event
}

fn agent_deleted(namespace: &str, agent: &str) -> Value {
    json!({
        "version": "0",
        "id": uuid::Uuid::new_v4().to_string(),
        "detail-type": "Agent Deleted",
        "source": "agent-hosting",
        "account": "123456789012",
        "time": "2026-11-26T10:05:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {"namespace": namespace, "agentName": agent},
    })
}

/// The reserve's task definition is what the manifest and the stack say, with no secret.
async fn assert_task_definition(stack: &Stack, task: &Task) {
    let described = stack
        .ecs
        .describe_task_definition()
        .task_definition(task.task_definition_arn().unwrap())
        .send()
        .await
        .unwrap();
    let definition = described.task_definition().unwrap();
    assert_eq!(
        definition
            .runtime_platform()
            .and_then(|platform| platform.cpu_architecture()),
        Some(&CpuArchitecture::Arm64)
    );
    // The manifest's 500m / 1Gi: Fargate's 512 CPU units / 1024 MiB (agent-1x).
    assert_eq!(
        (definition.cpu(), definition.memory()),
        (Some("512"), Some("1024"))
    );
    let containers = definition.container_definitions();
    let agent = containers
        .iter()
        .find(|container| container.name() == Some(AGENT_CONTAINER))
        .unwrap();
    assert_eq!(agent.image(), Some("ghcr.io/acme/demo-agent:1.0"));
    let logging = agent.log_configuration().unwrap();
    assert_eq!(logging.log_driver().as_str(), "awslogs");
    assert_eq!(
        logging.options().unwrap()["awslogs-group"],
        REPLICA_LOG_GROUP
    );
    // No set named: nothing for the task definition to reference.
    assert!(agent.secrets().is_empty(), "{:?}", agent.secrets());
    let holder = containers
        .iter()
        .find(|container| container.name() == Some(HOLDER_CONTAINER))
        .unwrap();
    assert_eq!(holder.image(), Some(HOLDER_IMAGE));
}

fn assert_tagged(task: &Task, namespace: &str) {
    let tags: Vec<(&str, &str)> = task
        .tags()
        .iter()
        .filter_map(|tag| Some((tag.key()?, tag.value()?)))
        .collect();
    assert!(
        tags.contains(&("agent-hosting.namespace", namespace)),
        "{tags:?}"
    );
}

/// Steps 1, 2 and 4 of the service's life on one binary, then its SIGTERM: the second
/// deployment's reserve left running (its task ARNs) for the next binary.
async fn a_reserve_left_on_sigterm(stack: &Stack) -> BTreeSet<String> {
    let mut first = stack.binary("first");

    // A deployment's reserve: two tasks of its task definition, the message deleted.
    let deployment = "0f8fad5b-d9cb-469f-a165-70867728950e";
    stack
        .send(&deployment_requested("demo-agent", deployment))
        .await;
    stack.until_tasks(deployment, 2).await;
    for task in stack.tasks(deployment).await {
        assert_tagged(&task, "dev-local");
        assert_task_definition(stack, &task).await;
    }
    stack.until_inbox_empty().await;

    // The agent deleted: every one of its tasks stopped.
    stack.send(&agent_deleted("dev-local", "demo-agent")).await;
    stack.until_tasks(deployment, 0).await;

    // A malformed message (left for the dead-letter queue) does not stop the binary: the
    // next message is taken. The second agent is stored as the control plane stores it (a
    // restarted data plane reads what should run from the agents table), then requested.
    let mut malformed = deployment_requested("other-agent", "x");
    malformed["detail"]
        .as_object_mut()
        .unwrap()
        .remove("manifest");
    stack.send(&malformed).await;
    let service_id = stack.store_agent("second-agent", SECOND_DEPLOYMENT).await;
    let mut requested = deployment_requested("second-agent", SECOND_DEPLOYMENT);
    requested["detail"]["serviceId"] = json!(service_id);
    stack.send(&requested).await;
    let reserve = stack.until_tasks(SECOND_DEPLOYMENT, 2).await;
    assert!(
        first.running(),
        "the binary ended after a malformed message"
    );

    // SIGTERM: exit 0, the reserve left running for the next data plane.
    let status = first.terminate().await;
    assert!(status.success(), "exit {status:?}");
    let left = stack.tasks(SECOND_DEPLOYMENT).await;
    assert_eq!(arns(&left), reserve, "a task stopped on SIGTERM");
    assert!(
        left.iter()
            .all(|task| task.last_status() == Some("RUNNING")),
        "{left:?}"
    );
    reserve
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_wired_as_ecs_runs_it_keeps_reserves_from_its_inbox_and_leaves_them_on_sigterm()
{
    let stack = Stack::create().await;
    let reserve = a_reserve_left_on_sigterm(&stack).await;

    // The next binary over the same stack reads the deployment back from the agents table and
    // stops none of the reserve (a binary that knew no deployment would stop them all as
    // strays). Its holders never answer on moto, so the tasks stay being adopted, asked again
    // at each listing.
    let mut second = stack.binary("second");
    let watched_until = tokio::time::Instant::now() + WATCH;
    while tokio::time::Instant::now() < watched_until {
        let running = arns(&stack.tasks(SECOND_DEPLOYMENT).await);
        assert!(
            running.is_superset(&reserve),
            "a task of the reserve was stopped"
        );
        assert!(second.running(), "the second binary ended");
        tokio::time::sleep(PAUSE).await;
    }

    // No deployment was reported failed meanwhile.
    for report in stack.reports().await {
        assert_ne!(report["detail"]["state"], "failed", "{report}");
    }
    let status = second.terminate().await;
    assert!(status.success(), "exit {status:?}");
}

/// A second binary whose holders do not answer (moto runs no holder) counts the replicas it is
/// adopting in the reserve: it starts no second reserve beside them (they are stopped and
/// replaced only after the readiness timeout, longer than this watch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_binary_starts_no_second_reserve_beside_the_one_it_adopts() {
    let stack = Stack::create().await;
    let reserve = a_reserve_left_on_sigterm(&stack).await;
    let mut second = stack.binary("second");
    let watched_until = tokio::time::Instant::now() + WATCH;
    while tokio::time::Instant::now() < watched_until {
        let running = arns(&stack.tasks(SECOND_DEPLOYMENT).await);
        assert_eq!(running, reserve, "a second reserve was started");
        assert!(second.running(), "the second binary ended");
        tokio::time::sleep(PAUSE).await;
    }
    let status = second.terminate().await;
    assert!(status.success(), "exit {status:?}");
}
