use std::time::Duration;

use aws_sdk_ecs::types::ContainerDefinition;

use super::*;
use crate::replica::{EnvVar, NodeType, PIDS_LIMIT, PullAuth};

fn config() -> EcsConfig {
    EcsConfig {
        cluster: "agent-hosting".into(),
        subnets: vec!["subnet-1".into()],
        security_groups: vec!["sg-1".into()],
        assign_public_ip: false,
        execution_role_arn: "arn:aws:iam::123456789012:role/exec".into(),
        holder_image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/holder:abc".into(),
        secrets_prefix: "agent-hosting/stack/".into(),
        secrets_kms_key: None,
        region: "us-east-1".into(),
        platform_log_group: "/agent-hosting/platform/holders".into(),
        replica_log_group: "/agent-hosting-platform/stack/replicas".into(),
        poll: Duration::from_millis(10),
        start_timeout: Duration::from_secs(1),
    }
}

fn spec(cpu_millis: u32, memory_mib: u32) -> ReplicaSpec {
    ReplicaSpec {
        labels: ReplicaLabels {
            stack: "stack".into(),
            namespace: "acme".into(),
            agent: "voice".into(),
            service_id: "svc-1".into(),
            deployment_id: "dep-1".into(),
        },
        image: "ghcr.io/acme/voice:1.0".into(),
        pull: Some(PullAuth {
            registry: "ghcr.io".into(),
            username: "acme".into(),
            password: "pull-password-value".into(),
        }),
        limits: Limits {
            cpu_millis,
            memory_mib,
            pids: PIDS_LIMIT,
        },
        node_type: NodeType::Arm,
        env: vec![
            EnvVar {
                name: "PORT".into(),
                value: "8080".into(),
            },
            EnvVar {
                name: "OPENAI_API_KEY".into(),
                value: "sk-secret-value".into(),
            },
        ],
        holder: HolderSettings::new(agent_holder::Checks::default()),
    }
}

fn references() -> References {
    References {
        env: Some("arn:aws:secretsmanager:us-east-1:123456789012:secret:agent-hosting/stack/dep-1/env-AbCdEf".into()),
        pull: Some("arn:aws:secretsmanager:us-east-1:123456789012:secret:agent-hosting/stack/dep-1/pull-GhIjKl".into()),
    }
}

fn container<'a>(definition: &'a Definition, name: &str) -> &'a ContainerDefinition {
    definition
        .containers
        .iter()
        .find(|container| container.name() == Some(name))
        .unwrap_or_else(|| panic!("no container {name}"))
}

#[test]
fn on_fargate_the_profiles_are_exactly_their_task_sizes() {
    for profile in shared::catalog::PROFILES {
        let limits = Limits::of_resources(profile.cpu, profile.memory).unwrap();
        let size = TaskSize::of(&limits).unwrap_or_else(|| panic!("{}", profile.name));
        assert_eq!(size.memory_mib, limits.memory_mib, "{}", profile.name);
    }
    let size = |cpu_millis, memory_mib| {
        TaskSize::of(&Limits {
            cpu_millis,
            memory_mib,
            pids: PIDS_LIMIT,
        })
        .map(|size| (size.cpu_units, size.memory_mib))
    };
    assert_eq!(size(500, 1024), Some((512, 1024)));
    assert_eq!(size(1000, 2048), Some((1024, 2048)));
    assert_eq!(size(1500, 2048), None);
    assert_eq!(size(500, 512), None);
    assert_eq!(size(1000, 1536), None);
}

#[test]
fn an_arm_deployments_task_definition_is_arm64() {
    let arm = ReplicaSpec {
        node_type: NodeType::Arm,
        ..spec(500, 1024)
    };
    let definition = definition(&config(), &arm, &references()).unwrap();
    assert_eq!(
        definition.runtime_platform().cpu_architecture(),
        Some(&CpuArchitecture::Arm64)
    );
}

#[test]
fn the_secret_sets_keys_are_named_by_reference_never_by_value() {
    let definition = definition(&config(), &spec(500, 1024), &references()).unwrap();
    let agent = container(&definition, AGENT_CONTAINER);
    let environment: Vec<_> = agent
        .environment()
        .iter()
        .map(|pair| (pair.name().unwrap(), pair.value().unwrap()))
        .collect();
    assert_eq!(environment, [("PORT", "8080")]);
    let secrets: Vec<_> = agent
        .secrets()
        .iter()
        .map(|secret| (secret.name(), secret.value_from()))
        .collect();
    assert_eq!(
        secrets,
        [(
            "OPENAI_API_KEY",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:agent-hosting/stack/dep-1/env-AbCdEf:OPENAI_API_KEY::"
        )]
    );
    assert_eq!(
        agent
            .repository_credentials()
            .map(|credentials| credentials.credentials_parameter()),
        references().pull.as_deref()
    );
    let shown = format!("{definition:?}");
    assert!(!shown.contains("sk-secret-value"), "{shown}");
    assert!(!shown.contains("pull-password-value"), "{shown}");
}

#[test]
fn a_secret_key_without_its_secret_is_no_definition() {
    let refused = definition(&config(), &spec(500, 1024), &References::default());
    assert!(
        matches!(refused, Err(DefinitionError::MissingReference(name)) if name == "OPENAI_API_KEY")
    );
}

#[test]
fn the_agent_has_the_task_but_the_holders_32_mib_and_stops_first_with_10_s() {
    let definition = definition(&config(), &spec(1000, 2048), &references()).unwrap();
    assert_eq!(definition.family, "ah-dep-1");
    assert_eq!(definition.containers[0].name(), Some(AGENT_CONTAINER));
    let agent = container(&definition, AGENT_CONTAINER);
    assert_eq!(agent.memory_reservation(), Some(2048 - 32));
    assert_eq!(agent.memory(), None);
    assert_eq!(agent.stop_timeout(), Some(10));
    assert_eq!(agent.essential(), Some(true));
    assert_eq!(
        agent
            .depends_on()
            .iter()
            .map(|dependency| (dependency.container_name(), dependency.condition()))
            .collect::<Vec<_>>(),
        [(HOLDER_CONTAINER, &ContainerCondition::Start)]
    );
    let log = agent.log_configuration().unwrap();
    assert_eq!(log.log_driver(), &LogDriver::Awslogs);
    let options = log.options().unwrap();
    // The stack's staging group, never section 5's (whose subscription would ingest it twice).
    assert_eq!(
        options["awslogs-group"],
        "/agent-hosting-platform/stack/replicas"
    );
    assert_eq!(options["awslogs-stream-prefix"], "acme/voice/dep-1");
    assert!(!options["awslogs-group"].starts_with("/agent-hosting/"));
    let dropped = agent
        .linux_parameters()
        .and_then(|parameters| parameters.capabilities())
        .map(|capabilities| capabilities.drop())
        .unwrap_or_default();
    for capability in ["NET_RAW", "MKNOD"] {
        assert!(dropped.iter().any(|c| c == capability), "{dropped:?}");
    }
    let added = agent
        .linux_parameters()
        .and_then(|parameters| parameters.capabilities())
        .map(|capabilities| capabilities.add());
    assert!(
        added.is_none_or(<[String]>::is_empty),
        "none added: {added:?}"
    );
    let holder = container(&definition, HOLDER_CONTAINER);
    assert_eq!(holder.memory(), Some(32));
    assert_eq!(holder.essential(), Some(true));
    assert_eq!(holder.readonly_root_filesystem(), Some(true));
    assert_eq!(holder.user(), Some("65534"));
    let dropped = holder
        .linux_parameters()
        .and_then(|parameters| parameters.capabilities())
        .map(|capabilities| capabilities.drop());
    assert_eq!(dropped, Some(&["ALL".to_owned()][..]));
    assert_eq!(holder.environment(), &[]);
    assert_eq!(holder.secrets(), &[]);
}

#[test]
fn a_task_carries_the_replicas_labels_and_its_holders_token_as_tags() {
    let spec = spec(500, 1024);
    let tags: Vec<_> = tags(&spec.labels, &spec.holder.token)
        .iter()
        .map(|tag| {
            (
                tag.key().unwrap().to_owned(),
                tag.value().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        tags.contains(&("agent-hosting.namespace".into(), "acme".into())),
        "{tags:?}"
    );
    assert!(
        tags.contains(&("agent-hosting.stack".into(), "stack".into())),
        "{tags:?}"
    );
    let token = (
        "agent-hosting.holderToken".into(),
        spec.holder.token.as_str().into(),
    );
    assert!(tags.contains(&token), "the holder's token");
    assert_eq!(tags.len(), 6);
    // The task's own: its definition, shared by the deployment's replicas, has no token.
    assert_eq!(label_tags(&spec.labels).len(), 5);
}

#[test]
fn a_task_gives_its_holder_its_token_and_checks_in_an_override() {
    let spec = spec(500, 1024);
    let overrides = holder_overrides(&spec.holder);
    let holder = &overrides.container_overrides()[0];
    assert_eq!(holder.name(), Some(HOLDER_CONTAINER));
    let env: Vec<(&str, &str)> = (holder.environment().iter())
        .map(|var| {
            (
                var.name().unwrap_or_default(),
                var.value().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        env.contains(&("HOLDER_TOKEN", spec.holder.token.as_str())),
        "{:?}",
        env.len()
    );
    assert!(env.contains(&("HOLDER_CHECK_SECONDS", "5")));
}
