//! The README's first walkthrough ("an agent's life"), run against the stack (its data plane on
//! the Docker Engine, as make run's) by integration_tests::walkthrough; a module of the
//! dataplane suite.

use integration_tests::stack::Stack;
use serde_json::{Value, json};

/// The account's `demo-agent` with the lines `make run` sends for it, sent the same way.
async fn demo_agent(stack: &Stack, key: &shared::auth::ApiKey, namespace: &str) {
    let created = stack
        .create(
            key,
            &json!({"serviceName": "demo-agent", "image": "agent-hosting.local/example-agent:latest"}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let deployment = created.body["activeDeploymentId"].as_str().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/demo-logs-event.py");
    let output = std::process::Command::new("python3")
        .args([
            script,
            namespace,
            "demo-agent",
            &format!("{deployment}/demo-session"),
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let event: Value = serde_json::from_slice(&output.stdout).unwrap();
    stack.invoke(&stack.ingest_function, &event).await;
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn the_readmes_walkthrough_answers_as_it_says() {
    // Not while the restart test kills the data plane: a restarted one reports the agent again,
    // which moves its ETag between the walkthrough's read and its If-Match.
    let _plane = crate::dataplane_support::shared_data_plane().await;
    let stack = Stack::from_env();
    let (caller, key) = stack.account("walkthrough").await;
    demo_agent(&stack, &key, &caller.namespace).await;
    integration_tests::walkthrough::run(&stack, &key, "README.md", "Walkthrough: an agent's life")
        .await;
}
