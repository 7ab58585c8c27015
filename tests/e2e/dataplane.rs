//! The data plane on the Docker Engine, end to end (contract section 12): through a stack whose
//! data plane runs the example agent's image (examples/agent, built by `scripts/local.sh
//! example-image`) as real containers. What each test reads of the engine it reads with the
//! `docker` command, as an operator would: labels, limits, environment, which containers exist.
//! One test kills the stack's data plane mid-session (dataplane_restart.rs); what a replica
//! reaches and may do is dataplane_isolation.rs, what its holder answers and a frozen replica
//! dataplane_liveness.rs, its failures, figures and log flood
//! dataplane_failures.rs; the helpers are in dataplane_support.rs.

mod dataplane_failures;
mod dataplane_isolation;
mod dataplane_liveness;
mod dataplane_restart;
mod dataplane_support;
mod walkthrough;

use integration_tests::stack::Stack;
use reqwest::Method;
use serde_json::{Value, json};

use dataplane_support::{
    example_image, inspect, put_secret, ready_agent, session_to_its_end, shared_data_plane, start,
    until, until_containers, until_replicas, until_session_line,
};

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_deployment_runs_as_containers_with_the_profiles_limits_its_secrets_and_labels() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("replicas").await;
    put_secret(
        &stack,
        &key,
        "voice-env",
        "OPENAI_API_KEY",
        "sk-e2e-replica-value",
    )
    .await;
    let body = json!({"serviceName": "voice", "image": example_image(), "secretSet": "voice-env",
                      "agentProfile": "agent-2x", "autoScaling": {"minAgents": 2, "maxAgents": 3}});
    let agent = ready_agent(&stack, &key, &body).await;
    let deployment = agent["activeDeploymentId"].as_str().unwrap().to_owned();

    let ids = until_replicas(&caller.namespace, "voice", "the reserve of 2", |ids| {
        ids.len() == 2
    })
    .await;
    for id in &ids {
        let container = inspect(id);
        let labels = &container["Config"]["Labels"];
        assert_eq!(labels["agent-hosting.namespace"], caller.namespace.as_str());
        assert_eq!(labels["agent-hosting.agent"], "voice");
        assert_eq!(labels["agent-hosting.deploymentId"], deployment.as_str());
        assert!(
            labels["agent-hosting.serviceId"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        );
        let host = &container["HostConfig"];
        assert_eq!(host["NanoCpus"], 1_000_000_000_i64, "agent-2x: 1 vCPU");
        assert_eq!(host["Memory"], 2048_i64 * 1024 * 1024, "agent-2x: 2 GiB");
        assert_eq!(
            host["Memory"], host["MemorySwap"],
            "no swap beyond the limit"
        );
        assert_eq!(host["Privileged"], false);
        assert_eq!(host["PidsLimit"], 4096, "the replica's PID limit");
        assert!(
            host["SecurityOpt"]
                .to_string()
                .contains("no-new-privileges")
        );
        assert!(host["Binds"].is_null() || host["Binds"] == json!([]));
        let env: Vec<String> = serde_json::from_value(container["Config"]["Env"].clone()).unwrap();
        assert!(env.iter().any(|e| e == "PORT=8080"));
        // Compared, never printed: the value is a secret.
        assert!(
            env.iter()
                .any(|e| e == "OPENAI_API_KEY=sk-e2e-replica-value"),
            "the secret set's key"
        );
    }
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_session_is_handed_to_a_replica_its_lines_are_read_back_and_its_end_replaces_it() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("sessions").await;
    let body = json!({"serviceName": "talk", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 2}});
    ready_agent(&stack, &key, &body).await;
    let before = until_replicas(&caller.namespace, "talk", "one idle replica", |ids| {
        ids.len() == 1
    })
    .await;

    let started = start(
        &stack,
        &key,
        "talk",
        // Long enough to be running when the start answers on a loaded machine.
        json!({"durationSeconds": 6, "greeting": "hello"}),
    )
    .await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        started["status"], "started",
        "a warm replica accepts at once: {started}"
    );
    let path = format!("/agents/talk/sessions/{id}");
    let ended = until(&stack, &key, &path, |s| s["status"] == "ended").await;
    assert_eq!(
        ended["completionStatus"], "completed",
        "/bot answered 200: {ended}"
    );
    assert_eq!(ended["coldStart"], false);

    let logs = until_session_line(&stack, &key, "talk", &id, "session ending").await;
    let lines: Vec<&str> = logs["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["log"].as_str())
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("session started") && l.contains(&id) && l.contains("greeting")),
        "the agent's own line, with the X-Daily-Session-Id it received and the body's keys: {lines:?}"
    );
    let after = until_replicas(&caller.namespace, "talk", "a fresh replica", |ids| {
        ids.len() == 1 && ids[0] != before[0]
    })
    .await;
    assert_ne!(
        after, before,
        "one session per replica: it is replaced, never reused"
    );
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_stop_ends_the_session_terminated_and_removes_its_replica() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("stops").await;
    let body = json!({"serviceName": "stopper", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 1}});
    ready_agent(&stack, &key, &body).await;
    let held = until_replicas(&caller.namespace, "stopper", "one replica", |ids| {
        ids.len() == 1
    })
    .await;
    let started = start(&stack, &key, "stopper", json!({"durationSeconds": 600})).await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    let path = format!("/agents/stopper/sessions/{id}");
    until(&stack, &key, &path, |s| s["status"] == "started").await;
    assert_eq!(
        stack
            .send_as(&key, Method::DELETE, &path, None)
            .await
            .status,
        200
    );
    let ended = until(&stack, &key, &path, |s| s["status"] == "ended").await;
    assert_eq!(ended["completionStatus"], "terminated");
    until_replicas(
        &caller.namespace,
        "stopper",
        "the held replica removed",
        |ids| !ids.contains(&held[0]),
    )
    .await;
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_crash_loop_and_an_unpullable_image_are_reported_with_their_codes() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (_, key) = stack.account("failures").await;
    put_secret(&stack, &key, "crash-env", "EXAMPLE_EXIT_AT_START", "3").await;
    let crash =
        json!({"serviceName": "crasher", "image": example_image(), "secretSet": "crash-env"});
    assert_eq!(
        stack
            .send_as(&key, Method::POST, "/agents", Some(&crash))
            .await
            .status,
        201
    );
    let absent = json!({"serviceName": "absent", "image": "agent-hosting.local/absent:1.0"});
    assert_eq!(
        stack
            .send_as(&key, Method::POST, "/agents", Some(&absent))
            .await
            .status,
        201
    );

    let failed = |agent: &Value| {
        agent["errors"]
            .as_array()
            .is_some_and(|errors| !errors.is_empty())
    };
    let crashed = until(&stack, &key, "/agents/crasher", failed).await;
    assert_eq!(crashed["errors"][0]["code"], "CRASH_LOOP", "{crashed}");
    let message = crashed["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("exited with code 3"),
        "the exit code, the restarts, the last lines: {message}"
    );
    assert!(
        message.contains("starting"),
        "the container's last lines: {message}"
    );
    let unpulled = until(&stack, &key, "/agents/absent", failed).await;
    assert_eq!(
        unpulled["errors"][0]["code"], "IMAGE_PULL_FAILED",
        "{unpulled}"
    );
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn deleting_an_agent_leaves_no_container_of_it() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("deletes").await;
    let body = json!({"serviceName": "gone", "image": example_image(),
                      "autoScaling": {"minAgents": 2, "maxAgents": 2}});
    ready_agent(&stack, &key, &body).await;
    until_replicas(&caller.namespace, "gone", "two replicas", |ids| {
        ids.len() == 2
    })
    .await;
    assert_eq!(
        stack
            .send_as(&key, Method::DELETE, "/agents/gone", None)
            .await
            .status,
        200
    );
    until_replicas(
        &caller.namespace,
        "gone",
        "no replica left",
        <[String]>::is_empty,
    )
    .await;
    // A replica's holder is stopped after its agent.
    until_containers(
        &caller.namespace,
        "gone",
        "stopped containers and holders removed too",
        <[String]>::is_empty,
    )
    .await;
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn the_data_plane_docs_walkthrough_of_a_real_session_answers_as_it_says() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (_, key) = stack.account("real-walkthrough").await;
    let heading = "Walkthrough: a session in a real container";
    integration_tests::walkthrough::run(&stack, &key, "docs/data-plane.md", heading).await;
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_secret_value_reaches_its_replicas_environment_and_no_file_log_line_or_report() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("planted").await;
    let planted = format!("sk-planted-{}", uuid::Uuid::new_v4().simple());
    put_secret(&stack, &key, "planted-env", "PLANTED_API_KEY", &planted).await;
    let body = json!({"serviceName": "planted", "image": example_image(), "secretSet": "planted-env",
                      "autoScaling": {"minAgents": 1, "maxAgents": 1}});
    ready_agent(&stack, &key, &body).await;
    let ids = until_replicas(&caller.namespace, "planted", "its replica", |ids| {
        ids.len() == 1
    })
    .await;
    let env: Vec<String> =
        serde_json::from_value(inspect(&ids[0])["Config"]["Env"].clone()).unwrap();
    assert!(
        env.contains(&format!("PLANTED_API_KEY={planted}")),
        "the value reaches the replica's environment"
    );
    // A session, so that the agent writes lines (its environment's names among them).
    let started = start(&stack, &key, "planted", json!({"durationSeconds": 1})).await;
    let id = started["sessionId"].as_str().unwrap().to_owned();
    let path = format!("/agents/planted/sessions/{id}");
    let ended = until(&stack, &key, &path, |s| s["status"] == "ended").await;
    let logs = until(&stack, &key, "/agents/planted/logs?limit=100", |page| {
        page.to_string().contains("PLANTED_API_KEY")
    })
    .await;
    let (logs, ended) = (logs.to_string(), ended.to_string());
    assert!(!logs.contains(&planted), "the value in the agent's lines");
    assert!(
        !ended.contains(&planted),
        "the value in the session's report"
    );

    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.local");
    let root = std::fs::canonicalize(root).expect("the checkout's .local/");
    let files = integration_tests::stack::local_files(&root);
    let log = std::env::var("STACK_DATA_PLANE_LOG").expect("the stack's data plane log");
    assert!(
        files.iter().any(|file| file == std::path::Path::new(&log)),
        "the data plane's own log is among the files searched"
    );
    for file in &files {
        let content = std::fs::read(file).unwrap_or_default();
        assert!(
            !integration_tests::contains(&content, planted.as_bytes()),
            "the value in the clear in {}",
            file.display()
        );
    }
    println!(
        "a secret value in the replica's environment, in none of {} files under .local/",
        files.len()
    );
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn a_crash_or_an_oom_kill_mid_session_ends_it_agent_error_with_the_reason_in_its_lines() {
    let _plane = shared_data_plane().await;
    let stack = Stack::from_env();
    let (_, key) = stack.account("deaths").await;
    let body = json!({"serviceName": "fragile", "image": example_image(),
                      "autoScaling": {"minAgents": 1, "maxAgents": 2}});
    ready_agent(&stack, &key, &body).await;

    let crash = json!({"durationSeconds": 0.5, "exitCode": 7});
    let (ended, lines) = session_to_its_end(&stack, &key, "fragile", crash).await;
    assert_eq!(ended["completionStatus"], "agentError", "{ended}");
    assert!(
        lines.contains("replica exited: exited with code 7"),
        "{lines}"
    );
    // agent-1x: 1 GiB; the agent allocates past it.
    let greedy = json!({"durationSeconds": 0.5, "allocateMiB": 1500});
    let (ended, lines) = session_to_its_end(&stack, &key, "fragile", greedy).await;
    assert_eq!(ended["completionStatus"], "agentError", "{ended}");
    assert!(
        lines.contains("OOM"),
        "the reason, killed for memory: {lines}"
    );
}
