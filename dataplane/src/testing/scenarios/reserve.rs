//! A deployment's replicas and its warm reserve (contract section 12, "A replica", "Warm
//! reserve and scale").

use serde_json::json;

use super::{Harness, Running, agent, replicas_holding};
use crate::replica::{Limits, ReplicaStatus};

/// Create -> replicas with the profile's limits, `PORT=8080` then the env set's keys, and the
/// labels naming stack, namespace, agent, serviceId and deploymentId -> reported `ready`.
pub async fn a_deployment_runs_replicas_with_its_profiles_limits_env_and_labels_and_is_reported_ready<
    H: Harness,
>(
    harness: &H,
) {
    let sets: &[(&str, &[(&str, &str)])] = &[("voice", &[("OPENAI_API_KEY", "sk-scenario")])];
    let running = Running::start(harness, sets).await;
    let agent = agent("limits");
    let options = json!({"agentProfile": "agent-2x", "secretSet": "voice"});
    let deployment = running
        .deploy(&agent, &harness.example_image(), (2, 3), options)
        .await;
    let ready = running.ready(&deployment).await;
    assert!(ready.ready_replicas >= 1, "{ready:?}");
    assert_eq!(ready.active_session_count, 0);
    // Healthy: no restart, no exit code, and the replica that became ready was started.
    assert_eq!((ready.restart_count, ready.last_exit_code), (0, None));
    assert!(ready.replicas_started >= 1, "{ready:?}");
    for id in running.until_replicas(&deployment, 2).await {
        let inspected = harness.inspect(&id).await.expect("a running replica");
        assert_eq!(inspected.limits, Limits::of_resources("1", "2Gi").unwrap());
        let labels = &inspected.labels;
        assert_eq!(
            (
                labels.stack.as_str(),
                labels.namespace.as_str(),
                labels.agent.as_str()
            ),
            (running.stack.as_str(), agent.namespace.as_str(), "limits")
        );
        assert_eq!(labels.service_id, "service-limits");
        assert_eq!(labels.deployment_id, deployment);
        let env: Vec<(&str, &str)> = inspected
            .env
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        assert_eq!(env, [("PORT", "8080"), ("OPENAI_API_KEY", "sk-scenario")]);
    }
    running.finish().await;
}

/// The reserve (`minReplicas` idle ready replicas) is kept, and refilled after a session
/// takes one of them.
pub async fn the_reserve_is_kept_and_refilled_after_a_session<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("reserve");
    let deployment = running.ready_deployment(harness, &agent, (2, 4)).await;
    let before = running.until_replicas(&deployment, 2).await;
    let session = running
        .started_session(&agent, &deployment, json!({"durationSeconds": 30}))
        .await;
    // One holds the session, and two more are idle beside it.
    let during = running.until_replicas(&deployment, 3).await;
    assert!(
        before.iter().all(|id| during.contains(id)),
        "{before:?} {during:?}"
    );
    let held = replicas_holding(harness, &during, &session).await;
    assert_eq!(held.len(), 1, "one replica holds the session: {held:?}");
    running.stop_session(&agent, &session).await;
    running
        .until(
            "back to a reserve of two without the session's replica",
            |views| {
                let live: Vec<_> = views
                    .iter()
                    .filter(|view| view.status == ReplicaStatus::Running)
                    .collect();
                live.len() == 2 && live.iter().all(|view| view.id != held[0])
            },
        )
        .await;
    running.finish().await;
}

/// Never more than `maxReplicas` replicas in all, whatever is asked of the deployment.
pub async fn never_more_than_max_replicas<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("capped");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let mut sessions = Vec::new();
    for _ in 0..4 {
        let body = json!({"durationSeconds": 30});
        sessions.push(running.request_session(&agent, &deployment, body).await);
    }
    for session in &sessions[..2] {
        running.started(session).await;
    }
    // Both replicas are busy and two sessions still wait: the cap holds through many passes.
    for _ in 0..20 {
        let all = running.all_replicas().await;
        assert!(all.len() <= 2, "more than maxReplicas: {all:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    for session in &sessions[2..] {
        assert!(
            running.reports.session_reports(session).is_empty(),
            "a session started beyond the cap: {:?}",
            running.reports.session_reports(session)
        );
    }
    running.finish().await;
}

/// A deployment without a reserve (`minReplicas` 0) still proves its image at deploy time: one
/// replica runs until it is ready, the deployment is reported `ready`, then none runs; a bad
/// image is reported at deploy time, not at a first session.
pub async fn a_deployment_without_a_reserve_is_proven_by_one_replica_then_runs_none<H: Harness>(
    harness: &H,
) {
    let sets: &[(&str, &[(&str, &str)])] = &[("crash", &[("EXAMPLE_EXIT_AT_START", "3")])];
    let running = Running::start(harness, sets).await;
    let zero = agent("scaled-to-zero");
    let deployment = running
        .deploy(&zero, &harness.example_image(), (0, 2), json!({}))
        .await;
    let ready = running.ready(&deployment).await;
    assert_eq!(ready.ready_replicas, 1, "{ready:?}");
    running
        .until("no replica once the image has been proven", |views| {
            views
                .iter()
                .all(|view| view.status != ReplicaStatus::Running)
        })
        .await;
    let crashing = agent("crashing-at-zero");
    let options = json!({"secretSet": "crash"});
    let failing = running
        .deploy(&crashing, &harness.example_image(), (0, 2), options)
        .await;
    let failed = running.failed(&failing).await;
    let code = failed.error.as_ref().map(|error| error.code.as_str());
    assert_eq!(code, Some("CRASH_LOOP"), "{failed:?}");
    running.finish().await;
}
