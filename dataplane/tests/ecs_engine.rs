//! The ECS engine against moto's server (ECS, EC2, Secrets Manager, CloudWatch Logs), started
//! per test by scripts/local.sh: a deployment's task definition, tasks run, listed and stopped,
//! their tags, their lines. What moto does not emulate (tasks that really run and exit, their
//! stop reasons) is tested on AWS-shaped fixtures in src/ecs/tasks/tests.rs.

mod ecs_moto;

use std::time::Duration;

use aws_sdk_ecs::types::{CpuArchitecture, TaskDefinitionField, TaskField};
use data_plane::ecs::definition::{AGENT_CONTAINER, HOLDER_CONTAINER, log_stream};
use data_plane::ecs::tasks::task_id;
use data_plane::engine::{Engine, STOP_GRACE};
use data_plane::replica::{
    EnvVar, HolderSettings, Limits, NodeType, PullAuth, ReplicaId, ReplicaLabels, ReplicaSpec,
    ReplicaStatus,
};
use ecs_moto::Moto;
use futures_util::StreamExt;

const SECRET_VALUE: &str = "sk-ecs-secret-value";
const PULL_PASSWORD: &str = "ecs-pull-password";
const BOUND: Duration = Duration::from_secs(30);

fn spec(stack: &str, namespace: &str, deployment: &str) -> ReplicaSpec {
    ReplicaSpec {
        labels: ReplicaLabels {
            stack: stack.into(),
            namespace: namespace.into(),
            agent: "voice".into(),
            service_id: "svc-1".into(),
            deployment_id: deployment.into(),
        },
        image: "ghcr.io/acme/voice:1.0".into(),
        pull: Some(PullAuth {
            registry: "ghcr.io".into(),
            username: "acme".into(),
            password: PULL_PASSWORD.into(),
        }),
        limits: Limits::of_resources("500m", "1Gi").unwrap(),
        node_type: NodeType::Arm,
        env: vec![
            EnvVar {
                name: "PORT".into(),
                value: "8080".into(),
            },
            EnvVar {
                name: "OPENAI_API_KEY".into(),
                value: SECRET_VALUE.into(),
            },
        ],
        holder: HolderSettings::new(agent_holder::Checks::default()),
    }
}

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .unwrap_or_else(|_| panic!("{what} within {BOUND:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployments_task_definition_names_its_secrets_by_reference_never_a_value() {
    let moto = Moto::start();
    let engine = moto.engine();
    let replica = bounded("run", engine.run(&spec("stack", "acme", "dep-1")))
        .await
        .unwrap();

    let clients = moto.clients();
    let described = clients
        .ecs
        .describe_task_definition()
        .task_definition("ah-dep-1")
        .include(TaskDefinitionField::Tags)
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
    assert_eq!(
        (definition.cpu(), definition.memory()),
        (Some("512"), Some("1024"))
    );
    let agent = &definition.container_definitions()[0];
    assert_eq!(agent.name(), Some(AGENT_CONTAINER));
    assert_eq!(agent.image(), Some("ghcr.io/acme/voice:1.0"));
    let options = agent.log_configuration().unwrap().options().unwrap();
    assert_eq!(
        options["awslogs-group"],
        "/agent-hosting-platform/stack/replicas"
    );
    assert_eq!(options["awslogs-stream-prefix"], "acme/voice/dep-1");
    let holder = &definition.container_definitions()[1];
    assert_eq!(holder.name(), Some(HOLDER_CONTAINER));

    // Each reference reads back, in Secrets Manager, the value it names.
    let secret = agent.secrets().first().unwrap();
    assert_eq!(secret.name(), "OPENAI_API_KEY");
    let (arn, key) = secret
        .value_from()
        .strip_suffix("::")
        .and_then(|reference| reference.rsplit_once(':'))
        .unwrap();
    assert_eq!(key, "OPENAI_API_KEY");
    let stored = clients
        .secrets
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(stored.secret_string().unwrap()).unwrap();
    assert_eq!(stored[key], SECRET_VALUE);
    let pull = agent
        .repository_credentials()
        .unwrap()
        .credentials_parameter();
    let stored = clients
        .secrets
        .get_secret_value()
        .secret_id(pull)
        .send()
        .await
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(stored.secret_string().unwrap()).unwrap();
    assert_eq!(
        (stored["username"].as_str(), stored["password"].as_str()),
        (Some("acme"), Some(PULL_PASSWORD))
    );

    // Anyone with ecs:Describe* reads these: no value anywhere in them.
    let tasks = clients
        .ecs
        .describe_tasks()
        .cluster("agent-hosting")
        .tasks(&replica.0)
        .include(TaskField::Tags)
        .send()
        .await
        .unwrap();
    let shown = format!("{described:?} {tasks:?}");
    for value in [SECRET_VALUE, PULL_PASSWORD] {
        assert!(!shown.contains(value), "a secret value in ECS's answers");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_run_are_listed_with_their_namespace_and_a_stopped_one_is_gone() {
    let moto = Moto::start();
    let engine = moto.engine();
    let first = bounded("run", engine.run(&spec("stack", "acme", "dep-1")))
        .await
        .unwrap();
    let second = bounded("run", engine.run(&spec("stack", "globex", "dep-2")))
        .await
        .unwrap();
    let other = bounded("run", engine.run(&spec("other-stack", "acme", "dep-3")))
        .await
        .unwrap();

    let mut listed = bounded("list", engine.list("stack")).await.unwrap();
    listed.sort_by(|a, b| a.labels.deployment_id.cmp(&b.labels.deployment_id));
    let ids: Vec<&ReplicaId> = listed.iter().map(|view| &view.id).collect();
    assert_eq!(ids, [&first, &second], "another stack's task is not listed");
    let namespaces: Vec<&str> = listed
        .iter()
        .map(|view| view.labels.namespace.as_str())
        .collect();
    assert_eq!(namespaces, ["acme", "globex"]);
    for view in &listed {
        assert_eq!(view.status, ReplicaStatus::Running);
        let address = view.address.expect("the task's ENI address");
        assert_eq!(address.port(), 8080);
        assert_eq!(
            (view.holder.as_ref()).map(|holder| (holder.address.ip(), holder.address.port())),
            Some((address.ip(), 18080)),
            "its holder, with the token the task was given"
        );
    }

    // The tags themselves carry the namespace (a tenant's tasks are found, and billed, by it).
    let tasks = moto
        .clients()
        .ecs
        .describe_tasks()
        .cluster("agent-hosting")
        .tasks(&second.0)
        .include(TaskField::Tags)
        .send()
        .await
        .unwrap();
    let tags: Vec<(&str, &str)> = tasks.tasks()[0]
        .tags()
        .iter()
        .filter_map(|tag| Some((tag.key()?, tag.value()?)))
        .collect();
    assert!(
        tags.contains(&("agent-hosting.namespace", "globex")),
        "{tags:?}"
    );
    assert_eq!(tasks.tasks()[0].started_by(), Some("dep-2"));

    bounded("stop", engine.stop(&first, STOP_GRACE))
        .await
        .unwrap();
    let listed = bounded("list", engine.list("stack")).await.unwrap();
    assert_eq!(
        listed.iter().map(|view| &view.id).collect::<Vec<_>>(),
        [&second]
    );
    // A stop again is no error; a stopped task is gone for a new engine too (a restart).
    bounded("stop again", engine.stop(&first, STOP_GRACE))
        .await
        .unwrap();
    let restarted = moto.engine();
    let listed = bounded("list", restarted.list("stack")).await.unwrap();
    assert_eq!(
        listed.iter().map(|view| &view.id).collect::<Vec<_>>(),
        [&second]
    );
    let _ = other;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicas_lines_are_read_from_its_log_stream_until_it_is_stopped() {
    let moto = Moto::start();
    let engine = moto.engine();
    let replica = bounded("run", engine.run(&spec("stack", "acme", "dep-1")))
        .await
        .unwrap();

    // What awslogs would write for the task's agent container (moto runs no container), in
    // the stack's staging group.
    let logs = moto.clients().logs;
    let group = "/agent-hosting-platform/stack/replicas";
    let stream = log_stream("acme/voice/dep-1", task_id(&replica.0));
    logs.create_log_group()
        .log_group_name(group)
        .send()
        .await
        .unwrap();
    logs.create_log_stream()
        .log_group_name(group)
        .log_stream_name(&stream)
        .send()
        .await
        .unwrap();
    let now = time::OffsetDateTime::now_utc();
    let millis = (now.unix_timestamp_nanos() / 1_000_000) as i64;
    let mut put = logs
        .put_log_events()
        .log_group_name(group)
        .log_stream_name(&stream);
    for (offset, text) in ["starting up", "ready on 8080"].iter().enumerate() {
        put = put.log_events(
            aws_sdk_cloudwatchlogs::types::InputLogEvent::builder()
                .timestamp(millis + offset as i64)
                .message(*text)
                .build()
                .unwrap(),
        );
    }
    put.send().await.unwrap();

    let mut lines = engine.logs(&replica, None);
    let mut texts = Vec::new();
    for _ in 0..2 {
        let line = bounded("a line", lines.next()).await.unwrap().unwrap();
        texts.push(line.text);
    }
    assert_eq!(texts, ["starting up", "ready on 8080"]);

    // From a time on: only the lines since.
    let later = engine.logs(&replica, Some(now + Duration::from_millis(1)));
    bounded("stop", engine.stop(&replica, STOP_GRACE))
        .await
        .unwrap();
    let later: Vec<_> = bounded("the lines since, to the stop", later.collect::<Vec<_>>()).await;
    let later: Vec<String> = later.into_iter().map(|line| line.unwrap().text).collect();
    assert_eq!(later, ["ready on 8080"]);
    // Once the task is stopped, following ends.
    let rest: Vec<_> = bounded("the end of the lines", lines.collect::<Vec<_>>()).await;
    assert!(rest.is_empty(), "{rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retired_deployments_secrets_are_deleted_and_its_revisions_deregistered() {
    let moto = Moto::start();
    let engine = moto.engine();
    bounded("run", engine.run(&spec("stack", "acme", "dep-1")))
        .await
        .unwrap();
    // Another process registers a revision of its own; dep-10 shares dep-1's family prefix.
    bounded("run", moto.engine().run(&spec("stack", "acme", "dep-1")))
        .await
        .unwrap();
    bounded("run", engine.run(&spec("stack", "acme", "dep-10")))
        .await
        .unwrap();
    for replica in engine.list("stack").await.unwrap() {
        bounded("stop", engine.stop(&replica.id, STOP_GRACE))
            .await
            .unwrap();
    }
    let secrets = moto.clients().secrets;
    let names = [
        "agent-hosting/test-stack/dep-1/env",
        "agent-hosting/test-stack/dep-1/pull",
    ];
    for name in names {
        secrets
            .describe_secret()
            .secret_id(name)
            .send()
            .await
            .unwrap();
    }
    assert_eq!(revisions(&moto, "ah-dep-1", "ACTIVE").await, 2);

    bounded("retire", engine.retire("dep-1")).await.unwrap();
    for name in names {
        let gone = secrets.describe_secret().secret_id(name).send().await;
        assert!(
            gone.is_err_and(|err| err
                .as_service_error()
                .is_some_and(|err| err.is_resource_not_found_exception())),
            "{name} is deleted"
        );
    }
    assert_eq!(revisions(&moto, "ah-dep-1", "ACTIVE").await, 0);
    assert_eq!(revisions(&moto, "ah-dep-1", "INACTIVE").await, 2);
    assert_eq!(
        revisions(&moto, "ah-dep-10", "ACTIVE").await,
        1,
        "not dep-10's"
    );
    secrets
        .describe_secret()
        .secret_id("agent-hosting/test-stack/dep-10/env")
        .send()
        .await
        .expect("dep-10's secret is kept");
    // Retiring again is no error; a later run writes and registers again.
    bounded("retire again", engine.retire("dep-1"))
        .await
        .unwrap();
    bounded(
        "run after retire",
        engine.run(&spec("stack", "acme", "dep-1")),
    )
    .await
    .unwrap();
    secrets
        .describe_secret()
        .secret_id(names[0])
        .send()
        .await
        .expect("written again");
    assert_eq!(revisions(&moto, "ah-dep-1", "ACTIVE").await, 1);
}

/// How many of the family's revisions have `status` (moto matches the family exactly).
async fn revisions(moto: &Moto, family: &str, status: &str) -> usize {
    let listed = moto
        .clients()
        .ecs
        .list_task_definitions()
        .family_prefix(family)
        .status(status.into())
        .send()
        .await
        .unwrap();
    listed
        .task_definition_arns()
        .iter()
        .filter(|arn| {
            let name = arn.rsplit_once('/').map_or("", |(_, name)| name);
            name.rsplit_once(':')
                .is_some_and(|(named, _)| named == family)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployments_replicas_share_one_task_definition_and_its_secrets_follow_the_spec() {
    let moto = Moto::start();
    let engine = moto.engine();
    let first = spec("stack", "acme", "dep-1");
    for _ in 0..2 {
        bounded("run", engine.run(&first)).await.unwrap();
    }
    let clients = moto.clients();
    let families = clients
        .ecs
        .list_task_definitions()
        .family_prefix("ah-dep-1")
        .send()
        .await
        .unwrap();
    assert_eq!(families.task_definition_arns().len(), 1, "one revision");

    // The set's value changed (a new secret value for the same deployment): the secret follows.
    let mut rotated = first.clone();
    rotated.env[1].value = "sk-rotated-value".into();
    bounded("run", engine.run(&rotated)).await.unwrap();
    let stored = clients
        .secrets
        .get_secret_value()
        .secret_id("agent-hosting/test-stack/dep-1/env")
        .send()
        .await
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(stored.secret_string().unwrap()).unwrap();
    assert_eq!(stored["OPENAI_API_KEY"], "sk-rotated-value");
}
