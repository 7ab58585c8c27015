//! A deployment gone for good is retired from the engine (docs/data-plane.md, "The engine
//! port"): on ECS its secret values deleted and its task definition revisions deregistered,
//! once none of its replicas is listed, never while one still runs.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Harness, Running, WAIT, agent};
use crate::events::ControlEvent;

const SETS: &[(&str, &[(&str, &str)])] = &[("voice", &[("OPENAI_API_KEY", "sk-retired")])];

/// A superseded deployment is retired once its last replica (busy until its session ends) is
/// gone, and not before: the engine still keeps its values while that replica runs.
pub async fn a_superseded_deployment_is_retired_once_its_last_replica_is_gone_not_before<
    H: Harness,
>(
    harness: &H,
) {
    let running = Running::start(harness, SETS).await;
    let agent = agent("superseded");
    let old = running.deploy_with_set(harness, &agent).await;
    let body = json!({"durationSeconds": 300});
    let session = running.started_session(&agent, &old, body).await;
    let new = running.deploy_with_set(harness, &agent).await;
    // The old idle replica stops; the busy one keeps its session.
    running
        .until(
            "only the old deployment's busy replica left of it",
            |views| {
                views
                    .iter()
                    .filter(|view| view.labels.deployment_id == old)
                    .count()
                    == 1
            },
        )
        .await;
    running.plane.settle().await;
    assert_ne!(
        harness.released(&old).await,
        Some(true),
        "released while its busy replica runs"
    );
    running.stop_session(&agent, &session).await;
    running.ended(&session).await;
    running.until_retired(harness, &old).await;
    assert!(
        running.engine.retired(&new).is_empty(),
        "the active one is kept"
    );
    assert_ne!(
        harness.released(&new).await,
        Some(true),
        "the active one is kept"
    );
    running.finish().await;
}

/// `Agent Deleted`: every deployment of the agent is retired once its replicas, busy ones
/// included, are stopped.
pub async fn a_deleted_agents_deployments_are_retired_once_their_replicas_are_gone<H: Harness>(
    harness: &H,
) {
    let running = Running::start(harness, SETS).await;
    let agent = agent("deleted-retired");
    let old = running.deploy_with_set(harness, &agent).await;
    let new = running.deploy_with_set(harness, &agent).await;
    let body = json!({"durationSeconds": 300});
    running.started_session(&agent, &new, body).await;
    let event = ControlEvent::AgentDeleted {
        agent: agent.clone(),
    };
    running.plane.take(event).await;
    running.until("no replica left", <[_]>::is_empty).await;
    for deployment in [&old, &new] {
        running.until_retired(harness, deployment).await;
    }
    running.finish().await;
}

impl<H: Harness> Running<H> {
    /// A ready deployment of the example image with the `voice` set (so that an engine keeps
    /// secret values for it), `1..=3` replicas.
    async fn deploy_with_set(&self, harness: &H, agent: &crate::events::AgentRef) -> String {
        let options: Value = json!({"secretSet": "voice"});
        let deployment = self
            .deploy(agent, &harness.example_image(), (1, 3), options)
            .await;
        self.ready(&deployment).await;
        deployment
    }

    /// Waits (up to [`WAIT`]) until the engine was asked to retire the deployment and answered,
    /// then checks it was never asked while a replica of it was listed, and that the engine
    /// released what it keeps (where it keeps something).
    async fn until_retired(&self, harness: &H, deployment_id: &str) {
        let asked = tokio::time::timeout(WAIT, async {
            loop {
                let retired = self.engine.retired(deployment_id);
                if retired.iter().any(|retired| retired.answered.is_ok()) {
                    return retired;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        let retired = asked.unwrap_or_else(|_| panic!("{deployment_id} was never retired"));
        assert!(
            retired.iter().all(|retired| retired.listed == 0),
            "retired while a replica of it was listed: {retired:?}"
        );
        let released = tokio::time::timeout(WAIT, async {
            while harness.released(deployment_id).await == Some(false) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            released.is_ok(),
            "{deployment_id}'s retire released nothing"
        );
    }
}
