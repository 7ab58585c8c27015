//! Rollout and delete (contract section 12, "Rollout and delete").

use std::sync::Arc;

use serde_json::json;

use super::{Harness, Running, agent, handed_to};
use crate::engine::Engine;
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

/// Never more than `maxReplicas` replicas of an agent in all, across a rollout: the old
/// deployment's busy replica counts, so the new deployment's reserve shrinks by it until its
/// session ends.
pub async fn never_more_than_max_replicas_across_a_rollout<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("rolling-capped");
    let old = running.ready_deployment(harness, &agent, (1, 2)).await;
    let body = json!({"durationSeconds": 300});
    let session = running.started_session(&agent, &old, body).await;
    // The old reserve is refilled beside the busy one: the agent is at its cap.
    running.until_replicas(&old, 2).await;
    let most = AtMost::watch(&running.engine, &running.stack);
    let new = running.ready_deployment(harness, &agent, (2, 2)).await;
    // One is all the new deployment may run beside the old busy replica.
    running.until_replicas(&old, 1).await;
    running.until_replicas(&new, 1).await;
    for _ in 0..20 {
        assert_eq!(running.replicas(&new).await.len(), 1, "beyond the cap");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    running.stop_session(&agent, &session).await;
    running.ended(&session).await;
    running.until_replicas(&old, 0).await;
    running.until_replicas(&new, 2).await;
    let most = most.stop().await;
    assert!(
        most <= 2,
        "the agent ran {most} replicas at once, maxReplicas 2"
    );
    running.finish().await;
}

/// The most replicas of a stack the engine listed running at once, listed until stopped.
struct AtMost {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<usize>,
}

impl AtMost {
    fn watch<E: Engine>(engine: &Arc<E>, stack: &str) -> Self {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let (engine, stack) = (engine.clone(), stack.to_owned());
        let task = tokio::spawn(async move {
            let mut most = 0;
            while stopped.try_recv().is_err() {
                let views = engine.list(&stack).await.expect("the engine lists");
                let live = views
                    .iter()
                    .filter(|view| view.status == ReplicaStatus::Running);
                most = most.max(live.count());
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            most
        });
        AtMost { stop, task }
    }

    async fn stop(self) -> usize {
        let _ = self.stop.send(());
        self.task.await.expect("the watch ends")
    }
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
