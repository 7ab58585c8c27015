//! Sessions (contract section 12, "Sessions", "Transports"): claims, starts warm and cold,
//! outcomes, stops, and a replica's one session in its life.

use serde_json::json;
use shared::session::{SessionRequest, Transport};

use super::{Harness, Running, WAIT, agent, handed_to, new_id, replicas_holding};
use crate::replica::ReplicaId;

/// With an idle ready replica a session starts warm: `started`, `coldStart: false`,
/// `botStartSeconds` measured, and the agent's lines from then on in the session's stream.
pub async fn a_warm_start_is_cold_start_false_and_reports_started<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("warm");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let session = running
        .request_session(&agent, &deployment, json!({"durationSeconds": 30}))
        .await;
    let started = running.started(&session).await;
    assert_eq!(started.cold_start, Some(false), "{started:?}");
    assert!(
        started.bot_start_seconds.is_some_and(|s| s >= 0.0),
        "{started:?}"
    );
    assert_eq!(
        (started.namespace.as_str(), started.agent.as_str()),
        (agent.namespace.as_str(), "warm")
    );
    // What the agent writes from the hand-over on is the session's log stream.
    running
        .reports
        .wait_for_session_line(WAIT, &session, "session started")
        .await;
    running.finish().await;
}

/// With no reserve (`minReplicas` 0) a session starts a replica for itself: `coldStart: true`.
pub async fn a_cold_start_is_cold_start_true<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("cold");
    let deployment = running
        .deploy(&agent, &harness.example_image(), (0, 2), json!({}))
        .await;
    assert!(running.replicas(&deployment).await.is_empty());
    let session = running
        .request_session(&agent, &deployment, json!({"durationSeconds": 30}))
        .await;
    let started = running.started(&session).await;
    assert_eq!(started.cold_start, Some(true), "{started:?}");
    assert!(
        started.bot_start_seconds.is_some_and(|s| s > 0.0),
        "{started:?}"
    );
    running.finish().await;
}

/// `/bot`'s 2xx ends the session `completed`; its replica is stopped and replaced, never
/// handed another session.
pub async fn a_two_xx_answer_ends_it_completed_and_its_replica_is_replaced_never_reused<
    H: Harness,
>(
    harness: &H,
) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("complete");
    let deployment = running.ready_deployment(harness, &agent, (1, 1)).await;
    let first = running.until_replicas(&deployment, 1).await;
    let session = running
        .started_session(&agent, &deployment, json!({"durationSeconds": 1}))
        .await;
    assert_eq!(replicas_holding(harness, &first, &session).await, first);
    let ended = running.ended(&session).await;
    assert_eq!(ended.completion_status, Some("completed"), "{ended:?}");
    running
        .until("the session's replica replaced", |views| {
            views.len() == 1 && views[0].id != first[0]
        })
        .await;
    let next = running
        .started_session(&agent, &deployment, json!({"durationSeconds": 30}))
        .await;
    let now = running.until_replicas(&deployment, 1).await;
    assert_ne!(now, first, "the replica of an ended session took another");
    assert_eq!(handed_to(harness, &now[0]).await, [next]);
    running.finish().await;
}

/// Another status from `/bot` ends the session `agentError`.
pub async fn a_non_2xx_answer_ends_it_agent_error<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("refusing");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let body = json!({"durationSeconds": 0.1, "status": 500});
    let session = running.request_session(&agent, &deployment, body).await;
    let ended = running.ended(&session).await;
    assert_eq!(ended.completion_status, Some("agentError"), "{ended:?}");
    running.finish().await;
}

/// A replica exiting mid-session ends it `agentError`, with the platform's line saying why in
/// the session's stream.
pub async fn a_crash_mid_session_ends_it_agent_error<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("crashing");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let body = json!({"durationSeconds": 0.1, "exitCode": 3});
    let session = running.started_session(&agent, &deployment, body).await;
    let ended = running.ended(&session).await;
    assert_eq!(ended.completion_status, Some("agentError"), "{ended:?}");
    let line = running
        .reports
        .wait_for_session_line(WAIT, &session, "[agent-hosting] replica exited")
        .await;
    assert!(line.contains("code 3"), "{line}");
    running.finish().await;
}

/// `Session Stop Requested` ends the session `terminated` and removes its replica.
pub async fn a_stop_ends_it_terminated_and_removes_the_replica<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("stopped");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let reserve = running.until_replicas(&deployment, 1).await;
    let session = running
        .started_session(&agent, &deployment, json!({"durationSeconds": 300}))
        .await;
    running.stop_session(&agent, &session).await;
    let ended = running.ended(&session).await;
    assert_eq!(ended.completion_status, Some("terminated"), "{ended:?}");
    running
        .until("the stopped session's replica gone", |views| {
            views.iter().all(|view| view.id != reserve[0])
        })
        .await;
    let reports = running.reports.session_reports(&session);
    assert_eq!(
        reports.len(),
        2,
        "started then ended, once each: {reports:#?}"
    );
    running.finish().await;
}

/// Concurrent `Session Requested`s never share a replica: each replica is handed one session.
pub async fn two_sessions_never_share_a_replica<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("contended");
    let deployment = running.ready_deployment(harness, &agent, (2, 2)).await;
    let ids = running.until_replicas(&deployment, 2).await;
    let sessions: Vec<String> = (0..4).map(|_| new_id()).collect();
    let body = json!({"durationSeconds": 30});
    futures_util::future::join_all(
        sessions
            .iter()
            .map(|session| running.request_session_as(&agent, &deployment, session, body.clone())),
    )
    .await;
    let mut started = Vec::new();
    for _ in 0..2 {
        let report = running
            .reports
            .wait_for_session(WAIT, "a second start", |report| {
                report.state == "started" && !started.contains(&report.session_id)
            })
            .await;
        started.push(report.session_id);
    }
    for id in &ids {
        let held = handed_to(harness, id).await;
        assert_eq!(held.len(), 1, "replica {id} was handed {held:?}");
    }
    running.finish().await;
}

/// A `Session Requested` delivered twice (the same sessionId) claims nothing new.
pub async fn a_duplicate_session_requested_claims_nothing_new<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("repeated");
    let deployment = running.ready_deployment(harness, &agent, (2, 3)).await;
    let body = json!({"durationSeconds": 30});
    let session = running
        .started_session(&agent, &deployment, body.clone())
        .await;
    running
        .request_session_as(&agent, &deployment, &session, body.clone())
        .await;
    // A later session's start orders the check after whatever the repeat could have done.
    running.started_session(&agent, &deployment, body).await;
    let reports = running.reports.session_reports(&session);
    assert_eq!(reports.len(), 1, "one start: {reports:#?}");
    let ids: Vec<ReplicaId> = running
        .replicas(&deployment)
        .await
        .into_iter()
        .map(|v| v.id)
        .collect();
    assert_eq!(replicas_holding(harness, &ids, &session).await.len(), 1);
    let mut handed = 0;
    for id in &ids {
        handed += harness
            .sessions_of(id)
            .await
            .iter()
            .filter(|s| **s == session)
            .count();
    }
    assert_eq!(handed, 1, "the session was handed over {handed} times");
    running.finish().await;
}

/// A Daily room (or the `daily` transport) asked of a stack with no Daily credentials: the
/// session is `failed` with `TRANSPORT_NOT_CONFIGURED`, and no replica is handed it.
pub async fn a_daily_room_without_credentials_is_transport_not_configured<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("daily");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let asks = [
        SessionRequest {
            create_daily_room: true,
            ..SessionRequest::default()
        },
        SessionRequest {
            transport: Some(Transport::Daily),
            ..SessionRequest::default()
        },
    ];
    for request in asks {
        let session = new_id();
        running
            .request(&agent, &deployment, &session, request)
            .await;
        let failed = running
            .reports
            .wait_for_session_state(WAIT, &session, "failed")
            .await;
        assert_eq!(
            failed.completion_status,
            Some("TRANSPORT_NOT_CONFIGURED"),
            "{failed:?}"
        );
        assert!(failed.daily_room.is_none() && failed.daily_token.is_none());
        for view in running.replicas(&deployment).await {
            assert!(harness.sessions_of(&view.id).await.is_empty());
        }
    }
    running.finish().await;
}

/// A stop naming another agent than the session's (another account's, say) stops nothing.
pub async fn a_stop_naming_another_agent_stops_nothing<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let (owner, other) = (agent("owner"), agent("other"));
    let deployment = running.ready_deployment(harness, &owner, (1, 2)).await;
    let body = json!({"durationSeconds": 30});
    let session = running
        .started_session(&owner, &deployment, body.clone())
        .await;
    running.stop_session(&other, &session).await;
    // A later session's start orders the check after whatever the stop could have done.
    running.started_session(&owner, &deployment, body).await;
    let reports = running.reports.session_reports(&session);
    assert_eq!(reports.len(), 1, "only started: {reports:#?}");
    running.finish().await;
}
