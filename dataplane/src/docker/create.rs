//! A replica's two containers as the Docker Engine is asked for them: their names, and the
//! create bodies from a [`ReplicaSpec`]. The holder's comes first, on the namespace's network
//! (the platform's: 32 MiB, read-only, no capability, user nobody; its token in its environment
//! and in a label, which only the engine's clients read); the agent's joins its
//! network namespace (contract section 12: the profile's limits as hard limits, the secret
//! set's keys as environment, no privilege), so that the holder reaches it on `localhost`.
//! Both carry the replica's labels. The agent's lines go to the data plane's socket through the
//! fluentd log driver ([`super::forward`]); the holder's stay in Docker's capped json-file log,
//! for the operator. Pure: no daemon is asked here.

use std::collections::HashMap;

use std::path::Path;

use bollard::models::{
    ContainerCreateBody, HostConfig, HostConfigLogConfig, RestartPolicy, RestartPolicyNameEnum,
};

use crate::replica::{
    DROPPED_CAPABILITIES, HOLDER_MEMORY_MIB, HOLDER_PIDS, HOLDER_USER, ReplicaSpec, label,
};

/// The holder's json-file logs, capped: 3 files of 10 MB at most.
const LOG_MAX_SIZE: &str = "10m";
const LOG_MAX_FILE: &str = "3";

/// The container's name: `ah-<stack>-<deploymentId first 8>-<suffix>`, so that `docker ps`
/// shows whose it is and two replicas of a deployment never share one.
pub fn container_name(spec: &ReplicaSpec, suffix: &str) -> String {
    let deployment: String = spec.labels.deployment_id.chars().take(8).collect();
    format!("ah-{}-{deployment}-{suffix}", spec.labels.stack)
}

/// The holder's container's name: the agent's, `-holder`.
pub fn holder_name(agent_name: &str) -> String {
    format!("{agent_name}-holder")
}

/// A random suffix of 8 hex digits for [`container_name`].
pub fn random_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// The replica's labels, and which part this container is.
fn labels(spec: &ReplicaSpec, part: &str) -> HashMap<String, String> {
    let mut labels: HashMap<String, String> = spec
        .labels
        .pairs()
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    labels.insert(label::PART.to_owned(), part.to_owned());
    labels
}

/// The create body of the replica's holder, of `image`, attached to `network`.
pub fn holder_body(spec: &ReplicaSpec, network: &str, image: &str) -> ContainerCreateBody {
    let memory = i64::from(HOLDER_MEMORY_MIB) * 1024 * 1024;
    let mut labels = labels(spec, label::part::HOLDER);
    labels.insert(
        label::HOLDER_TOKEN.to_owned(),
        spec.holder.token.as_str().to_owned(),
    );
    ContainerCreateBody {
        image: Some(image.to_owned()),
        user: Some(HOLDER_USER.to_owned()),
        env: Some(
            (spec.holder.env().into_iter())
                .map(|var| format!("{}={}", var.name, var.value))
                .collect(),
        ),
        labels: Some(labels),
        tty: Some(false),
        open_stdin: Some(false),
        attach_stdin: Some(false),
        host_config: Some(HostConfig {
            memory: Some(memory),
            memory_swap: Some(memory),
            pids_limit: Some(i64::from(HOLDER_PIDS)),
            readonly_rootfs: Some(true),
            cap_drop: Some(vec!["ALL".to_owned()]),
            network_mode: Some(network.to_owned()),
            log_config: Some(HostConfigLogConfig {
                typ: Some("json-file".to_owned()),
                config: Some(HashMap::from([
                    ("max-size".to_owned(), LOG_MAX_SIZE.to_owned()),
                    ("max-file".to_owned(), LOG_MAX_FILE.to_owned()),
                ])),
            }),
            ..isolated()
        }),
        ..Default::default()
    }
}

/// The create body of the replica's agent, of the deployment's image, in the network namespace
/// of the holder's container `holder_id`, its lines sent to the socket `logs`. The image's own
/// command, entrypoint, user and working directory are kept: an image built for the anchor runs
/// as it is.
pub fn container_body(spec: &ReplicaSpec, holder_id: &str, logs: &Path) -> ContainerCreateBody {
    let mut labels = labels(spec, label::part::AGENT);
    labels.insert(label::HOLDER_ID.to_owned(), holder_id.to_owned());
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        env: Some(
            spec.env
                .iter()
                .map(|var| format!("{}={}", var.name, var.value))
                .collect(),
        ),
        labels: Some(labels),
        tty: Some(false),
        open_stdin: Some(false),
        attach_stdin: Some(false),
        host_config: Some(HostConfig {
            log_config: Some(super::forward::log_config(logs)),
            ..host_config(spec, &format!("container:{holder_id}"))
        }),
        ..Default::default()
    }
}

/// The agent's limits: memory without swap (an image is OOM-killed at the profile's memory),
/// CPU, a PID limit, Docker's default capabilities less [`DROPPED_CAPABILITIES`] and nothing
/// added, in `network_mode`.
fn host_config(spec: &ReplicaSpec, network_mode: &str) -> HostConfig {
    let memory = i64::from(spec.limits.memory_mib) * 1024 * 1024;
    HostConfig {
        memory: Some(memory),
        memory_swap: Some(memory),
        nano_cpus: Some(i64::from(spec.limits.cpu_millis) * 1_000_000),
        pids_limit: Some(i64::from(spec.limits.pids)),
        cap_drop: Some(DROPPED_CAPABILITIES.map(str::to_owned).to_vec()),
        network_mode: Some(network_mode.to_owned()),
        ..isolated()
    }
}

/// What both containers run with: no new privileges, no binds, volumes or published ports,
/// and no restart by Docker (the reconciler replaces a replica; one that restarted in place
/// could take a second session).
fn isolated() -> HostConfig {
    HostConfig {
        security_opt: Some(vec!["no-new-privileges".to_owned()]),
        privileged: Some(false),
        publish_all_ports: Some(false),
        init: Some(false),
        restart_policy: Some(RestartPolicy {
            name: Some(RestartPolicyNameEnum::NO),
            maximum_retry_count: None,
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica::{EnvVar, HolderSettings, Limits, NodeType, ReplicaLabels, label};
    use agent_holder::Checks;

    const SOCKET: &str = "/tmp/agent-hosting-run-9000.sock";

    fn spec() -> ReplicaSpec {
        ReplicaSpec {
            labels: ReplicaLabels {
                stack: "run-9000".into(),
                namespace: "acme".into(),
                agent: "voice".into(),
                service_id: "svc-1".into(),
                deployment_id: "0b5a2c1e-7d44-4b8e-9d0a-1f2e3d4c5b6a".into(),
            },
            image: "agent-hosting.local/example-agent:abc".into(),
            pull: None,
            limits: Limits {
                cpu_millis: 500,
                memory_mib: 1024,
                pids: 4096,
            },
            node_type: NodeType::Arm,
            env: vec![
                EnvVar {
                    name: "PORT".into(),
                    value: "8080".into(),
                },
                EnvVar {
                    name: "OPENAI_API_KEY".into(),
                    value: "sk-test".into(),
                },
            ],
            holder: HolderSettings::new(Checks::default()),
        }
    }

    #[test]
    fn a_replica_is_named_for_its_stack_and_deployment_and_never_shares_a_name() {
        let spec = spec();
        let name = container_name(&spec, &random_suffix());
        assert!(name.starts_with("ah-run-9000-0b5a2c1e-"), "{name}");
        assert_eq!(name.len(), "ah-run-9000-0b5a2c1e-".len() + 8, "{name}");
        assert_ne!(random_suffix(), random_suffix());
    }

    #[test]
    fn the_profiles_resources_are_hard_limits_without_swap() {
        let host = container_body(&spec(), "h0ld3r", Path::new(SOCKET))
            .host_config
            .unwrap_or_default();
        assert_eq!(host.memory, Some(1024 * 1024 * 1024));
        assert_eq!(host.memory_swap, host.memory);
        assert_eq!(host.nano_cpus, Some(500_000_000));
        assert_eq!(host.pids_limit, Some(4096));
    }

    #[test]
    fn a_replica_runs_without_privileges_in_its_holders_network_namespace_alone() {
        let host = container_body(&spec(), "h0ld3r", Path::new(SOCKET))
            .host_config
            .unwrap_or_default();
        assert_eq!(
            host.security_opt,
            Some(vec!["no-new-privileges".to_owned()])
        );
        assert_eq!(host.privileged, Some(false));
        assert_eq!(host.cap_add, None);
        let dropped = host.cap_drop.unwrap_or_default();
        for capability in ["NET_RAW", "MKNOD"] {
            assert!(dropped.iter().any(|c| c == capability), "{dropped:?}");
        }
        assert_eq!(host.binds, None);
        assert_eq!(host.mounts, None);
        assert_eq!(host.port_bindings, None);
        assert_eq!(host.publish_all_ports, Some(false));
        assert_eq!(host.pid_mode, None);
        assert_eq!(host.ipc_mode, None);
        assert_eq!(host.network_mode.as_deref(), Some("container:h0ld3r"));
        assert_eq!(
            host.restart_policy.and_then(|policy| policy.name),
            Some(RestartPolicyNameEnum::NO)
        );
    }

    #[test]
    fn its_lines_go_to_the_data_planes_socket_each_before_the_next_and_the_holders_to_a_capped_file()
     {
        let log = container_body(&spec(), "n", Path::new(SOCKET))
            .host_config
            .and_then(|host| host.log_config)
            .unwrap_or_default();
        assert_eq!(log.typ.as_deref(), Some("fluentd"));
        let config = log.config.unwrap_or_default();
        let option = |name: &str| config.get(name).map(String::as_str);
        assert_eq!(
            option("fluentd-address"),
            Some("unix:///tmp/agent-hosting-run-9000.sock")
        );
        assert_eq!(
            option("fluentd-async"),
            Some("false"),
            "no line waits in a buffer that the container's stop would drop"
        );
        assert_eq!(option("fluentd-sub-second-precision"), Some("true"));
        let holder = holder_body(&spec(), "net", "holder:1")
            .host_config
            .and_then(|host| host.log_config)
            .unwrap_or_default();
        assert_eq!(holder.typ.as_deref(), Some("json-file"));
        let config = holder.config.unwrap_or_default();
        assert_eq!(config.get("max-size").map(String::as_str), Some("10m"));
        assert_eq!(config.get("max-file").map(String::as_str), Some("3"));
    }

    #[test]
    fn the_environment_is_port_first_then_the_secret_sets_keys_and_labels_name_the_owner() {
        let spec = spec();
        let body = container_body(&spec, "n", Path::new(SOCKET));
        let env = body.env.unwrap_or_default();
        assert_eq!(env.len(), 2);
        assert!(
            env.iter()
                .all(|var| !var.contains(spec.holder.token.as_str())),
            "the holder's token is never the agent's"
        );
        assert_eq!(env[0], "PORT=8080");
        assert!(env[1].starts_with("OPENAI_API_KEY="));
        let labels = body.labels.unwrap_or_default();
        assert_eq!(labels.get(label::HOLDER_TOKEN), None, "the agent's labels");
        assert_eq!(
            labels.get(label::STACK).map(String::as_str),
            Some("run-9000")
        );
        assert_eq!(
            labels.get(label::NAMESPACE).map(String::as_str),
            Some("acme")
        );
        assert_eq!(labels.get(label::AGENT).map(String::as_str), Some("voice"));
        assert_eq!(
            labels.get(label::SERVICE_ID).map(String::as_str),
            Some("svc-1")
        );
        assert_eq!(
            labels.get(label::DEPLOYMENT_ID).map(String::as_str),
            Some("0b5a2c1e-7d44-4b8e-9d0a-1f2e3d4c5b6a")
        );
        assert_eq!(labels.get(label::PART).map(String::as_str), Some("agent"));
        assert_eq!(labels.get(label::HOLDER_ID).map(String::as_str), Some("n"));
    }

    #[test]
    fn the_holder_is_the_platforms_32_mib_read_only_without_capabilities_as_nobody() {
        let spec = spec();
        let body = holder_body(&spec, "ah-run-9000-acme", "agent-hosting.local/holder:1");
        assert_eq!(body.image.as_deref(), Some("agent-hosting.local/holder:1"));
        assert_eq!(body.user.as_deref(), Some("65534"));
        let env = body.env.unwrap_or_default();
        assert!(
            env.iter().all(|var| !var.contains("sk-test")),
            "no secret of the agent's reaches the holder"
        );
        let token = spec.holder.token.as_str();
        assert!(env.contains(&format!("HOLDER_TOKEN={token}")), "its token");
        assert!(env.contains(&"HOLDER_CHECK_SECONDS=5".to_owned()));
        assert!(env.contains(&"HOLDER_CHECK_MISSES=3".to_owned()));
        let labels = body.labels.unwrap_or_default();
        assert_eq!(
            labels.get(label::HOLDER_TOKEN).map(String::as_str),
            Some(token)
        );
        assert_eq!(labels.get(label::PART).map(String::as_str), Some("holder"));
        assert_eq!(
            labels.get(label::NAMESPACE).map(String::as_str),
            Some("acme")
        );
        let host = body.host_config.unwrap_or_default();
        assert_eq!(host.memory, Some(32 * 1024 * 1024));
        assert_eq!(host.memory_swap, host.memory);
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
        assert_eq!(host.cap_add, None);
        assert_eq!(
            host.security_opt,
            Some(vec!["no-new-privileges".to_owned()])
        );
        assert_eq!(host.network_mode.as_deref(), Some("ah-run-9000-acme"));
        assert_eq!(host.port_bindings, None);
    }

    #[test]
    fn the_images_command_entrypoint_user_and_directory_are_its_own() {
        let body = container_body(&spec(), "n", Path::new(SOCKET));
        assert_eq!(
            body.image.as_deref(),
            Some("agent-hosting.local/example-agent:abc")
        );
        assert_eq!(body.cmd, None);
        assert_eq!(body.entrypoint, None);
        assert_eq!(body.user, None);
        assert_eq!(body.working_dir, None);
    }
}
