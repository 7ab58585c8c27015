//! The README's first walkthrough ("an agent's life"), run against the stack (its data plane on
//! the Docker Engine, as make run's) by integration_tests::walkthrough; a module of the
//! dataplane suite.

use integration_tests::stack::Stack;
use serde_json::json;

/// The account's `demo-agent` as `make run` makes it (one warm replica of the example agent),
/// once its replica has written its three lines (starting, its environment, ready): a reader of
/// the README meets it so.
async fn demo_agent(stack: &Stack, key: &shared::auth::ApiKey) {
    let body = json!({"serviceName": "demo-agent", "image": "agent-hosting.local/example-agent:latest",
                      "autoScaling": {"minAgents": 1, "maxAgents": 2}});
    crate::dataplane_support::ready_agent(stack, key, &body).await;
    crate::dataplane_support::until(stack, key, "/agents/demo-agent/logs", |page| {
        page["total"]["value"] == 3
    })
    .await;
}

#[tokio::test]
#[ignore = "end to end: scripts/e2e.sh runs it against a stack on the Docker Engine"]
async fn the_readmes_walkthrough_answers_as_it_says() {
    // Not while the restart test kills the data plane: a restarted one reports the agent again,
    // which moves its ETag between the walkthrough's read and its If-Match.
    let _plane = crate::dataplane_support::shared_data_plane().await;
    let stack = Stack::from_env();
    let (_, key) = stack.account("walkthrough").await;
    demo_agent(&stack, &key).await;
    integration_tests::walkthrough::run(&stack, &key, "README.md", "Walkthrough: an agent's life")
        .await;
}
