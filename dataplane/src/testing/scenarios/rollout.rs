//! Rollout and delete (contract section 12, "Rollout and delete").

use serde_json::json;

use super::{Harness, Running, agent, handed_to};
use crate::replica::ReplicaStatus;

/// A new deployment starts its reserve; once it is ready the previous deployment's idle
/// replicas stop, and its busy one keeps its session until it ends.
pub async fn a_rollout_moves_the_reserve_and_lets_busy_replicas_finish<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("rolling");
    let old = running.ready_deployment(harness, &agent, (2, 4)).await;
    running.until_replicas(&old, 2).await;
    let body = json!({"durationSeconds": 3});
    let session = running.started_session(&agent, &old, body).await;
    let new = running.ready_deployment(harness, &agent, (2, 4)).await;
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
    let ended = running.ended(&session).await;
    assert_eq!(ended.completion_status, Some("completed"), "{ended:?}");
    running.until_replicas(&old, 0).await;
    running.until_replicas(&new, 2).await;
    running.finish().await;
}

/// `Agent Deleted` stops every replica of the agent, busy ones included.
pub async fn an_agent_deleted_leaves_no_replica<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("deleted");
    let deployment = running.ready_deployment(harness, &agent, (2, 3)).await;
    running
        .started_session(&agent, &deployment, json!({"durationSeconds": 300}))
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
