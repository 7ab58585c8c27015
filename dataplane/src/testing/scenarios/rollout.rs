//! Rollout and delete (contract section 12, "Rollout and delete").

use serde_json::json;

use super::{Harness, Running, WAIT, agent, handed_to};
use crate::replica::ReplicaStatus;

/// A new deployment starts its reserve; once it is ready the previous deployment's idle
/// replicas stop, and its busy one keeps its session until it ends.
pub async fn a_rollout_moves_the_reserve_and_lets_busy_replicas_finish<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("rolling");
    let image = harness.example_image();
    let old = running.deploy(&agent, &image, (2, 4), json!({})).await;
    running.ready(&old).await;
    running.until_replicas(&old, 2).await;
    let body = json!({"durationSeconds": 3});
    let session = running.request_session(&agent, &old, body).await;
    running
        .reports
        .wait_for_session_state(WAIT, &session, "started")
        .await;
    let new = running.deploy(&agent, &image, (2, 4), json!({})).await;
    running.ready(&new).await;
    // The old deployment's idle replicas stop; the one holding the session does not.
    let busy = running.until_replicas(&old, 1).await;
    assert_eq!(
        handed_to(harness, &busy[0]).await,
        std::slice::from_ref(&session)
    );
    assert!(
        running.reports.session_reports(&session).len() == 1,
        "the session still runs"
    );
    let ended = running
        .reports
        .wait_for_session_state(WAIT, &session, "ended")
        .await;
    assert_eq!(ended.completion_status, Some("completed"), "{ended:?}");
    running.until_replicas(&old, 0).await;
    running.until_replicas(&new, 2).await;
    running.finish().await;
}

/// `Agent Deleted` stops every replica of the agent, busy ones included.
pub async fn an_agent_deleted_leaves_no_replica<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("deleted");
    let deployment = running
        .deploy(&agent, &harness.example_image(), (2, 3), json!({}))
        .await;
    running.ready(&deployment).await;
    let session = running
        .request_session(&agent, &deployment, json!({"durationSeconds": 300}))
        .await;
    running
        .reports
        .wait_for_session_state(WAIT, &session, "started")
        .await;
    let event = crate::events::ControlEvent::AgentDeleted {
        agent: agent.clone(),
    };
    running.plane.take(event).await;
    running
        .until("no replica left", |views| {
            views
                .iter()
                .all(|view| view.status != ReplicaStatus::Running)
                && views.is_empty()
        })
        .await;
    running.finish().await;
}
