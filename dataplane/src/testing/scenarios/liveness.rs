//! A replica whose agent stops answering (contract section 12, "Sessions"): a frozen process
//! still accepts connections, so a request written to it looks taken. A hand-over is accepted
//! only once the agent shows life (its `/readyz` 200 just before), and a busy agent that stops
//! answering its holder's checks ends its session `agentError`.

use serde_json::json;
use shared::session::completion;

use super::{Harness, Running, WAIT, agent, holding};
use crate::replica::ReplicaStatus;

/// An idle ready replica is paused, then a session is requested: it is never handed the
/// session (a frozen agent took and kept sessions for hours), which starts on another replica
/// and runs to its end; the frozen replica is stopped.
pub async fn a_frozen_idle_replica_is_never_handed_a_session_another_takes_it<H: Harness>(
    harness: &H,
) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("frozen");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let frozen = running.until_replicas(&deployment, 1).await.remove(0);
    harness.freeze(&frozen).await;
    let session = running
        .request_session(&agent, &deployment, json!({"durationSeconds": 1}))
        .await;
    let started = running.started(&session).await;
    assert_eq!(
        started.cold_start,
        Some(true),
        "another replica, started for it: {started:?}"
    );
    let ended = running.ended(&session).await;
    assert_eq!(
        ended.completion_status,
        Some(completion::COMPLETED),
        "{ended:?}"
    );
    assert!(
        harness.sessions_of(&frozen).await.is_empty(),
        "the frozen replica was never handed it"
    );
    running
        .until("the frozen replica stopped", |views| {
            views
                .iter()
                .all(|view| view.id != frozen || view.status != ReplicaStatus::Running)
        })
        .await;
    running.finish().await;
}

/// A replica holding a session is paused: its holder's checks go unanswered and the session
/// ends `agentError`, the platform's line saying why (a frozen replica kept its session until
/// the control plane's deadline).
pub async fn a_replica_that_stops_answering_mid_session_ends_it_agent_error<H: Harness>(
    harness: &H,
) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("hung");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let session = running
        .started_session(&agent, &deployment, json!({"durationSeconds": 600}))
        .await;
    let held = holding(harness, &running, &deployment, &session).await;
    harness.freeze(&held).await;
    let ended = running.ended(&session).await;
    assert_eq!(
        ended.completion_status,
        Some(completion::AGENT_ERROR),
        "ended by its holder's checks, well before its 600 s: {ended:?}"
    );
    running
        .reports
        .wait_for_session_line(
            WAIT,
            &session,
            "[agent-hosting] the agent stopped answering",
        )
        .await;
    running.finish().await;
}
