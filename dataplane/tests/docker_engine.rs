//! The Docker engine's own promises on a real daemon (contract section 12; the reconciler's
//! scenarios are tested once, above any engine): labels listed back, limits and isolation as
//! the daemon inspects them, a replica's two containers (its holder's, the agent's in the
//! holder's network namespace), exit reasons classified, stop and its idempotence, lines with
//! the engine's timestamps, a network per namespace. Needs a Docker Engine (`scripts/local.sh
//! docker-engine`) and the example agent's and holder's images, which the tests build if absent.

#[path = "docker_engine/support.rs"]
mod support;

use std::time::Duration;

use agent_holder::contract::BotRequest;
use agent_holder::{HOLDER_PORT, HolderState, Outcome, client};
use data_plane::docker::{ENABLE_ICC, network_name};
use data_plane::engine::{Engine, EngineError, LogLine, Output, RunError, STOP_GRACE};
use data_plane::replica::{ExitReason, PullAuth, ReplicaId, ReplicaStatus, label};
use futures_util::StreamExt;
use support::{Stack, docker, engine, exec, http, listed_until, ready};
use time::OffsetDateTime;
use tokio::time::timeout;

#[tokio::test]
async fn a_replica_runs_with_its_labels_limits_and_environment_and_no_privilege() {
    let (engine, docker, stack) = (engine().await, docker().await, Stack::new());
    let secret = uuid::Uuid::new_v4().to_string();
    let spec = stack.spec("acme", &[("OPENAI_API_KEY", &secret)]);
    let id = engine.run(&spec).await.expect("run");

    let views = listed_until(&engine, &stack, |views| {
        views.iter().any(|view| view.address.is_some())
    })
    .await;
    assert_eq!(views.len(), 1);
    assert_eq!((&views[0].id, &views[0].labels), (&id, &spec.labels));
    assert_eq!(views[0].status, ReplicaStatus::Running);
    ready(views[0].address.expect("an address")).await;

    let inspected = docker
        .inspect_container(&id.0, None)
        .await
        .expect("inspect");
    let host = inspected.host_config.unwrap_or_default();
    assert_eq!(host.memory, Some(256 * 1024 * 1024));
    let swap_limited = docker.info().await.expect("info").swap_limit == Some(true);
    if swap_limited {
        assert_eq!(host.memory_swap, host.memory, "no swap beyond the memory");
    }
    assert_eq!(host.nano_cpus, Some(500_000_000));
    assert_eq!(host.pids_limit, Some(4096));
    assert_eq!(
        host.security_opt,
        Some(vec!["no-new-privileges".to_owned()])
    );
    assert_eq!(host.privileged, Some(false));
    assert!(host.cap_add.unwrap_or_default().is_empty());
    assert!(host.binds.unwrap_or_default().is_empty());
    assert!(host.port_bindings.unwrap_or_default().is_empty());
    let holder = holder_of(&docker, &id).await;
    assert_eq!(
        host.network_mode,
        Some(format!("container:{holder}")),
        "the agent is in its holder's network namespace"
    );
    assert!(inspected.mounts.unwrap_or_default().is_empty());

    let env = inspected
        .config
        .and_then(|config| config.env)
        .unwrap_or_default();
    assert!(env.iter().any(|var| var == "PORT=8080"), "PORT=8080 is set");
    let expected = format!("OPENAI_API_KEY={secret}");
    // Compared, never printed.
    assert!(env.contains(&expected), "the secret set's key is set");
}

#[tokio::test]
async fn an_image_that_cannot_be_pulled_fails_with_the_daemons_message_and_leaves_nothing() {
    let (engine, stack) = (engine().await, Stack::new());
    let mut spec = stack.spec("acme", &[]);
    spec.image = "agent-hosting.local/absent-agent:nope".to_owned();
    match engine.run(&spec).await {
        Err(RunError::PullFailed { message }) => assert!(!message.is_empty()),
        other => panic!("expected a pull failure, got {other:?}"),
    }
    assert!(engine.list(&stack.name).await.expect("list").is_empty());
}

#[tokio::test]
async fn an_image_with_pull_credentials_is_pulled_even_when_present() {
    let (engine, stack) = (engine().await, Stack::new());
    let mut spec = stack.spec("acme", &[]);
    spec.pull = Some(PullAuth {
        registry: "agent-hosting.local".to_owned(),
        username: "acme".to_owned(),
        password: uuid::Uuid::new_v4().to_string(),
    });
    // The example image is on the host, but no registry is reachable here: asked, it fails.
    assert!(matches!(
        engine.run(&spec).await,
        Err(RunError::PullFailed { .. })
    ));
}

#[tokio::test]
async fn a_replica_that_exits_is_listed_exited_with_its_code() {
    let (engine, stack) = (engine().await, Stack::new());
    let spec = stack.spec("acme", &[("EXAMPLE_EXIT_AT_START", "3")]);
    let id = engine.run(&spec).await.expect("run");
    let views = listed_until(&engine, &stack, |views| {
        views
            .iter()
            .any(|view| matches!(view.status, ReplicaStatus::Exited(_)))
    })
    .await;
    assert_eq!(views[0].id, id);
    assert_eq!(
        views[0].status,
        ReplicaStatus::Exited(ExitReason::Exited { code: 3 })
    );
}

#[tokio::test]
async fn a_replica_killed_for_memory_is_listed_oom_killed() {
    let (engine, stack) = (engine().await, Stack::new());
    let mut spec = stack.spec("acme", &[]);
    spec.limits.memory_mib = 64;
    engine.run(&spec).await.expect("run");
    let views = listed_until(&engine, &stack, |views| {
        views.iter().any(|view| view.address.is_some())
    })
    .await;
    let address = views[0].address.expect("an address");
    ready(address).await;
    // The agent allocates 256 MiB under its 64 MiB: the kernel kills it before it answers.
    let answer = http(
        address,
        "POST",
        "/bot",
        r#"{"durationSeconds": 0, "allocateMiB": 256}"#,
    )
    .await;
    assert_eq!(answer, None, "no answer from a replica killed for memory");
    let views = listed_until(&engine, &stack, |views| {
        views
            .iter()
            .any(|view| matches!(view.status, ReplicaStatus::Exited(_)))
    })
    .await;
    assert_eq!(
        views[0].status,
        ReplicaStatus::Exited(ExitReason::OomKilled)
    );
}

/// The holder's container of the replica's agent, by its label.
async fn holder_of(docker: &bollard::Docker, id: &ReplicaId) -> String {
    let inspected = docker
        .inspect_container(&id.0, None)
        .await
        .expect("inspect");
    let labels = inspected.config.and_then(|config| config.labels);
    labels
        .and_then(|labels| labels.get(label::HOLDER_ID).cloned())
        .expect("the agent names its holder")
}

#[tokio::test]
async fn a_replicas_holder_runs_as_the_platforms_and_hands_a_session_to_its_agent() {
    let (engine, docker, stack) = (engine().await, docker().await, Stack::new());
    let spec = stack.spec("acme", &[("OPENAI_API_KEY", "sk-not-for-the-holder")]);
    let id = engine.run(&spec).await.expect("run");
    let views = listed_until(&engine, &stack, |views| {
        views.iter().any(|view| view.holder.is_some())
    })
    .await;
    assert_eq!(views.len(), 1, "two containers, one replica: {views:?}");
    let (address, holder) = (
        views[0].address.expect("an address"),
        views[0].holder.clone().expect("a holder"),
    );
    assert_eq!((address.ip(), address.port()), (holder.address.ip(), 8080));
    assert_eq!(holder.address.port(), HOLDER_PORT);
    assert_eq!(holder.token, spec.holder.token, "its token, read back");
    ready(address).await;

    let holder_id = holder_of(&docker, &id).await;
    let inspected = docker
        .inspect_container(&holder_id, None)
        .await
        .expect("inspect the holder");
    let config = inspected.config.unwrap_or_default();
    assert_eq!(config.user.as_deref(), Some("65534"));
    assert_eq!(config.image.as_deref(), Some(support::holder_image()));
    let env = config.env.unwrap_or_default();
    assert!(
        env.iter().all(|var| !var.starts_with("OPENAI_API_KEY")),
        "no secret reaches the holder"
    );
    let labels = config.labels.unwrap_or_default();
    assert_eq!(labels.get(label::PART).map(String::as_str), Some("holder"));
    assert_eq!(
        labels.get(label::DEPLOYMENT_ID),
        Some(&spec.labels.deployment_id)
    );
    let host = inspected.host_config.unwrap_or_default();
    assert_eq!(host.memory, Some(32 * 1024 * 1024));
    assert_eq!(host.readonly_rootfs, Some(true));
    assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
    assert_eq!(
        host.security_opt,
        Some(vec!["no-new-privileges".to_owned()])
    );
    assert_eq!(host.network_mode, Some(network_name(&stack.name, "acme")));

    let request = BotRequest {
        session_id: "test-session".into(),
        body: serde_json::json!({"durationSeconds": 0}),
        transport: None,
        room: None,
    };
    client::hand_over(&holder, &request).await.expect("taken");
    let ended = timeout(Duration::from_secs(30), async {
        loop {
            let state = client::state(&holder, Duration::from_secs(5))
                .await
                .expect("state");
            if let HolderState::Ended { outcome, .. } = state {
                return outcome;
            }
        }
    })
    .await
    .expect("the session ended");
    assert_eq!(ended, Outcome::Completed);

    engine.stop(&id, STOP_GRACE).await.expect("stop");
    assert!(
        docker.inspect_container(&holder_id, None).await.is_err(),
        "the holder removed with its replica"
    );
}

#[tokio::test]
async fn a_stopped_replica_is_removed_and_stopping_it_again_is_fine() {
    let (engine, docker, stack) = (engine().await, docker().await, Stack::new());
    let id = engine.run(&stack.spec("acme", &[])).await.expect("run");
    let holder = holder_of(&docker, &id).await;
    engine.stop(&id, STOP_GRACE).await.expect("stop");
    assert!(engine.list(&stack.name).await.expect("list").is_empty());
    assert!(
        docker.inspect_container(&id.0, None).await.is_err(),
        "removed"
    );
    assert!(
        docker.inspect_container(&holder, None).await.is_err(),
        "its holder removed"
    );
    engine.stop(&id, STOP_GRACE).await.expect("a second stop");
    let never = ReplicaId("0123456789ab".to_owned());
    engine
        .stop(&never, STOP_GRACE)
        .await
        .expect("a stop of no replica");
}

#[tokio::test]
async fn a_holder_whose_agent_is_gone_is_listed_exited_with_nothing_to_adopt_and_stop_removes_it() {
    let (engine, docker, stack) = (engine().await, docker().await, Stack::new());
    let id = engine.run(&stack.spec("acme", &[])).await.expect("run");
    let holder = holder_of(&docker, &id).await;
    let force = bollard::query_parameters::RemoveContainerOptions {
        force: true,
        ..Default::default()
    };
    docker
        .remove_container(&id.0, Some(force))
        .await
        .expect("the agent's container removed behind the engine's back");
    let views = engine.list(&stack.name).await.expect("list");
    assert_eq!(views.len(), 1, "the holder alone: {views:?}");
    let lone = &views[0];
    assert_eq!(lone.id.0, holder);
    assert_eq!(lone.status, ReplicaStatus::Exited(ExitReason::Lost));
    assert_eq!(
        (lone.address, lone.holder.clone()),
        (None, None),
        "no session to ask a lone holder about: a restarted data plane stops it, never adopts it"
    );
    engine.stop(&lone.id, STOP_GRACE).await.expect("stop");
    assert!(engine.list(&stack.name).await.expect("list").is_empty());
}

#[tokio::test]
async fn its_lines_carry_the_engines_timestamps_and_end_when_it_stops() {
    let (engine, stack) = (engine().await, Stack::new());
    let before = OffsetDateTime::now_utc() - Duration::from_secs(1);
    let id = engine.run(&stack.spec("acme", &[])).await.expect("run");

    let mut lines = engine.logs(&id, None);
    let mut seen: Vec<LogLine> = Vec::new();
    let until_ready = async {
        while let Some(line) = lines.next().await {
            let line = line.expect("a line");
            let is_ready = line.text.ends_with("- ready");
            seen.push(line);
            if is_ready {
                return;
            }
        }
    };
    timeout(Duration::from_secs(60), until_ready)
        .await
        .expect("the agent's 'ready' line within 60 s");
    let after = OffsetDateTime::now_utc() + Duration::from_secs(1);
    assert!(seen.iter().any(|line| line.text.ends_with("- starting")));
    for line in &seen {
        assert!(before <= line.at && line.at <= after, "the engine's time");
        assert_eq!((line.output, line.partial), (Output::Stderr, false));
        assert!(line.text.contains(" | INFO     | "), "{}", line.text);
    }

    // Each line is given once: a second follow is refused, never a second copy of the lines.
    let mut again = engine.logs(&id, None);
    let second = timeout(Duration::from_secs(10), again.next())
        .await
        .expect("an answer within 10 s");
    assert!(
        matches!(second, Some(Err(EngineError::Refused(_)))),
        "{second:?}"
    );

    engine.stop(&id, STOP_GRACE).await.expect("stop");
    let ended = timeout(Duration::from_secs(30), async {
        while let Some(Ok(_)) = lines.next().await {}
    })
    .await;
    assert!(ended.is_ok(), "the stream ends once the replica is stopped");
}

#[tokio::test]
async fn lines_asked_for_before_a_stop_are_all_read_even_when_first_read_after_it() {
    let (engine, stack) = (engine().await, Stack::new());
    let id = engine.run(&stack.spec("acme", &[])).await.expect("run");
    let views = listed_until(&engine, &stack, |views| {
        views.iter().any(|view| view.address.is_some())
    })
    .await;
    ready(views[0].address.expect("an address")).await;

    // An adopted replica whose session already ended: followed, then stopped at once.
    let lines = engine.logs(&id, None);
    let read_late = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        timeout(Duration::from_secs(30), lines.collect::<Vec<_>>())
            .await
            .expect("the stream ends within 30 s")
    };
    let (stopped, read) = tokio::join!(engine.stop(&id, STOP_GRACE), read_late);
    stopped.expect("stop");
    let texts: Vec<String> = read
        .into_iter()
        .map(|line| line.expect("a line, not a replica already removed").text)
        .collect();
    assert!(
        texts.iter().any(|text| text.ends_with("- ready")),
        "the lines written before the stop: {texts:?}"
    );
    assert!(
        engine.list(&stack.name).await.expect("list").is_empty(),
        "removed after"
    );
}

#[tokio::test]
async fn a_line_over_16_kib_arrives_in_parts_marked_partial() {
    let (engine, stack) = (engine().await, Stack::new());
    let id = engine.run(&stack.spec("acme", &[])).await.expect("run");
    let views = listed_until(&engine, &stack, |views| {
        views.iter().any(|view| view.address.is_some())
    })
    .await;
    let address = views[0].address.expect("an address");
    ready(address).await;
    // The agent logs the body's keys on one line: a key of 20,000 bytes makes it a long one.
    let key = "k".repeat(20_000);
    let body = format!(r#"{{"durationSeconds": 0, "{key}": 1}}"#);
    let answer = http(address, "POST", "/bot", &body).await;
    assert_eq!(answer.map(|(status, _)| status), Some(200));

    let mut lines = engine.logs(&id, None);
    let mut seen: Vec<LogLine> = Vec::new();
    let until_ending = async {
        while let Some(line) = lines.next().await {
            let line = line.expect("a line");
            let ending = line.text.ends_with("- session ending");
            seen.push(line);
            if ending {
                return;
            }
        }
    };
    timeout(Duration::from_secs(30), until_ending)
        .await
        .expect("the session's lines within 30 s");
    let first_part = seen
        .iter()
        .position(|line| line.partial)
        .expect("a part of a line");
    let rest = seen[first_part..]
        .iter()
        .position(|line| !line.partial)
        .expect("the line's last part");
    let whole: String = seen[first_part..=first_part + rest]
        .iter()
        .map(|line| line.text.as_str())
        .collect();
    assert!(rest >= 1, "split in two parts at least");
    assert!(whole.contains("session started") && whole.contains(&key));
}

#[tokio::test]
async fn the_lines_of_no_replica_are_no_such_replica() {
    let engine = engine().await;
    let missing = ReplicaId("0123456789ab".to_owned());
    let first = timeout(Duration::from_secs(10), engine.logs(&missing, None).next())
        .await
        .expect("an answer within 10 s");
    assert!(
        matches!(first, Some(Err(EngineError::NoSuchReplica(ref id))) if *id == missing),
        "{first:?}"
    );
}

#[tokio::test]
async fn each_namespace_has_its_network_and_no_replica_reaches_another() {
    let (engine, docker, stack) = (engine().await, docker().await, Stack::new());
    // Two of one namespace at once: its network is made once.
    let (first, second) = (stack.spec("alpha", &[]), stack.spec("alpha", &[]));
    let (a1, a2) = tokio::join!(engine.run(&first), engine.run(&second));
    let (a1, a2) = (a1.expect("run a1"), a2.expect("run a2"));
    let b = engine.run(&stack.spec("beta", &[])).await.expect("run b");
    let views = listed_until(&engine, &stack, |views| {
        views.len() == 3 && views.iter().all(|view| view.address.is_some())
    })
    .await;
    let address = |id: &ReplicaId| {
        let view = views.iter().find(|view| view.id == *id).expect("listed");
        view.address.expect("an address")
    };
    for id in [&a1, &a2, &b] {
        ready(address(id)).await; // the host reaches each
    }

    for namespace in ["alpha", "beta"] {
        let name = network_name(&stack.name, namespace);
        let network = docker.inspect_network(&name, None).await.expect("inspect");
        let options = network.options.unwrap_or_default();
        assert_eq!(options.get(ENABLE_ICC).map(String::as_str), Some("false"));
    }
    let alphas = docker_networks_named(&network_name(&stack.name, "alpha")).await;
    assert_eq!(alphas, 1, "one network for the namespace");

    for (target, why) in [(&b, "another namespace's"), (&a2, "its own namespace's")] {
        let ip = address(target).ip().to_string();
        let probe = format!(
            "import socket\ns = socket.socket()\ns.settimeout(3)\ntry:\n    \
             s.connect(('{ip}', 8080))\n    print('connected')\nexcept OSError:\n    print('unreachable')"
        );
        let said = exec(&docker, &a1.0, &["python3", "-c", &probe]).await;
        assert_eq!(
            said.trim(),
            "unreachable",
            "{why} replica from alpha's first"
        );
    }
}

#[tokio::test]
async fn a_namespaces_network_is_removed_by_a_prune_once_no_replica_uses_it() {
    let (engine, stack) = (engine().await, Stack::new());
    let gone = engine.run(&stack.spec("alpha", &[])).await.expect("run");
    engine.run(&stack.spec("beta", &[])).await.expect("run");
    engine.stop(&gone, STOP_GRACE).await.expect("stop");
    engine.prune_networks(&stack.name).await.expect("prune");
    let alpha = docker_networks_named(&network_name(&stack.name, "alpha")).await;
    let beta = docker_networks_named(&network_name(&stack.name, "beta")).await;
    assert_eq!(
        (alpha, beta),
        (0, 1),
        "the unused one removed, the used one kept"
    );
}

async fn docker_networks_named(name: &str) -> usize {
    let filters = std::collections::HashMap::from([("name".to_owned(), vec![name.to_owned()])]);
    let listed = docker()
        .await
        .list_networks(Some(bollard::query_parameters::ListNetworksOptions {
            filters: Some(filters),
        }))
        .await
        .expect("list networks");
    // The name filter matches by prefix: count the exact name.
    listed
        .iter()
        .filter(|network| network.name.as_deref() == Some(name))
        .count()
}
