//! Deployments none of whose replicas can become ready (contract section 12, "Readiness and
//! health"): each reported `failed` with a code the customer can act on.

use std::time::Duration;

use serde_json::json;
use shared::agent::status::MAX_ERROR_MESSAGE_BYTES;

use shared::agent::DeploymentState;

use super::{Harness, Running, WAIT, agent};
use crate::reconciler::failures::backoff;
use crate::replica::ReplicaStatus;

fn error_of(report: &shared::agent::StatusReport) -> (&str, &str) {
    let error = report.error.as_ref().expect("a failed report has an error");
    assert!(error.message.len() <= MAX_ERROR_MESSAGE_BYTES, "{error:?}");
    (error.code.as_str(), error.message.as_str())
}

/// A container that exits at every start: `CRASH_LOOP`, with its exit code, the restart count
/// and the last lines it wrote.
pub async fn a_crash_loop_is_reported_failed_with_its_exit_code_and_last_lines<H: Harness>(
    harness: &H,
) {
    let sets: &[(&str, &[(&str, &str)])] = &[("crash", &[("EXAMPLE_EXIT_AT_START", "3")])];
    let running = Running::start(harness, sets).await;
    let agent = agent("crash-loop");
    let options = json!({"secretSet": "crash"});
    let deployment = running
        .deploy(&agent, &harness.example_image(), (1, 2), options)
        .await;
    let failed = running.failed(&deployment).await;
    let (code, message) = error_of(&failed);
    assert_eq!(code, "CRASH_LOOP");
    assert!(message.contains("code 3"), "{message}");
    assert!(message.contains("restarted 2 times"), "{message}");
    assert!(message.contains("starting"), "the last lines: {message}");
    // The figures the agent's `currentRevision.health` shows.
    assert_eq!(failed.last_exit_code, Some(3), "{failed:?}");
    assert!(failed.restart_count >= 2, "{failed:?}");
    assert!(
        failed.replicas_started > failed.restart_count,
        "every restart is a replica started: {failed:?}"
    );
    running.finish().await;
}

/// A container that answers `/readyz` and exits a second later, at every start: a crash loop
/// as one that exits before it is ready (`CRASH_LOOP` with its exit code and restarts, backed
/// off), never reported `ready` again while it loops, and its replicas started reported as they
/// grow, not only when its state changes.
pub async fn a_crash_after_readiness_is_a_crash_loop_backed_off<H: Harness>(harness: &H) {
    let sets: &[(&str, &[(&str, &str)])] = &[("flaky", &[("EXAMPLE_EXIT_AFTER_READY", "3")])];
    let (first, most) = (Duration::from_millis(500), Duration::from_secs(4));
    let running = Running::start_with(harness, sets, |config| {
        (config.backoff_first, config.backoff_most) = (first, most);
    })
    .await;
    let agent = agent("ready-then-crash");
    let options = json!({"secretSet": "flaky"});
    let deployment = running
        .deploy(&agent, &harness.example_image(), (1, 2), options)
        .await;
    let failed = running.failed(&deployment).await;
    let (code, message) = error_of(&failed);
    assert_eq!(code, "CRASH_LOOP");
    assert!(message.contains("code 3"), "{message}");
    assert!(message.contains("after it was ready"), "{message}");
    assert!(message.contains("restarted 2 times"), "{message}");
    assert_eq!(failed.last_exit_code, Some(3), "{failed:?}");
    // It keeps being restarted, backed off: each start is reported with the figures, still
    // failed, never ready.
    let later = running
        .reports
        .wait_for_deployment(WAIT, "a restart after the failed report", |report| {
            report.deployment_id == deployment && report.replicas_started > failed.replicas_started
        })
        .await;
    assert_eq!(later.state, DeploymentState::Failed, "{later:?}");
    assert_eq!(error_of(&later).0, "CRASH_LOOP");
    let reports = running.reports.deployments();
    let first_failed = (reports.iter())
        .position(|report| report.state == DeploymentState::Failed)
        .expect("failed");
    assert!(
        reports[first_failed..]
            .iter()
            .all(|report| report.state == DeploymentState::Failed),
        "a ready moment between crashes is not a recovery: {reports:#?}"
    );
    // Each replica lives a second past its readiness; the next waits the backoff after that.
    let starts = running.engine.runs_of(&deployment);
    for (crashes, pair) in (1..).zip(starts.windows(2)) {
        let least = Duration::from_secs(1) + backoff(crashes, first, most);
        assert!(
            pair[1] - pair[0] >= least,
            "the start after crash {crashes} waited its backoff ({least:?}): {starts:?}"
        );
    }
    running.finish().await;
}

/// A replica killed for memory before it is ready, every time: `OOM_KILLED`, naming the
/// profile's memory.
pub async fn an_oom_kill_at_start_is_reported_failed<H: Harness>(harness: &H) {
    // Never ready on its own, so each replica is still starting when it is killed.
    let sets: &[(&str, &[(&str, &str)])] = &[("slow", &[("EXAMPLE_READY_AFTER_SECONDS", "600")])];
    let running = Running::start(harness, sets).await;
    let agent = agent("greedy");
    let options = json!({"secretSet": "slow"});
    let deployment = running
        .deploy(&agent, &harness.example_image(), (1, 2), options)
        .await;
    let killing = async {
        loop {
            for view in running.replicas(&deployment).await {
                harness.oom_kill(&view.id).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let failed = tokio::select! {
        failed = running.failed(&deployment) => failed,
        () = killing => unreachable!("the killing never ends"),
    };
    let (code, message) = error_of(&failed);
    assert_eq!(code, "OOM_KILLED");
    assert!(message.contains("1024 MiB"), "{message}");
    assert_eq!(failed.last_exit_code, Some(137), "{failed:?}");
    running.finish().await;
}

/// An image no registry has: `IMAGE_PULL_FAILED` at once, with the registry's message.
pub async fn an_unpullable_image_is_reported_failed_at_once<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("unpullable");
    let deployment = running
        .deploy(&agent, &harness.absent_image(), (1, 2), json!({}))
        .await;
    let failed = running.failed(&deployment).await;
    let (code, message) = error_of(&failed);
    assert_eq!(code, "IMAGE_PULL_FAILED");
    assert!(!message.is_empty());
    let failures = running.reports.deployments();
    assert_eq!(
        failures.len(),
        1,
        "reported once, at the first failure: {failures:#?}"
    );
    running.finish().await;
}

/// An image whose pull fails after `run` returned (ECS: a task stopped `TaskFailedToStart`,
/// `CannotPullContainerError`): `IMAGE_PULL_FAILED` at once with the registry's message, as a
/// pull failed within `run` is; never a crash loop of a lost replica.
pub async fn a_pull_failure_after_run_is_reported_failed_at_once<H: Harness>(harness: &H) {
    let image = harness
        .late_unpullable_image()
        .expect("a harness whose engine can fail a pull after run (scenarios_on!, not every)");
    let running = Running::start(harness, &[]).await;
    let agent = agent("late-unpullable");
    let deployment = running.deploy(&agent, &image, (1, 2), json!({})).await;
    let failed = running.failed(&deployment).await;
    let (code, message) = error_of(&failed);
    assert_eq!(code, "IMAGE_PULL_FAILED");
    let repository = image
        .rsplit_once(':')
        .map_or(image.as_str(), |(name, _)| name);
    assert!(
        message.contains(repository),
        "the registry's message: {message}"
    );
    let reports = running.reports.deployments();
    let failures: Vec<_> = (reports.iter())
        .filter(|report| report.state == DeploymentState::Failed)
        .collect();
    assert_eq!(
        failures.len(),
        1,
        "reported failed once, at the first failure: {reports:#?}"
    );
    assert!(
        (reports.iter()).all(|report| report.state != DeploymentState::Ready),
        "{reports:#?}"
    );
    running.finish().await;
}

/// No 200 from `/readyz` within the readiness timeout: `READINESS_TIMEOUT`, and the replicas
/// that timed out are gone.
pub async fn a_readiness_timeout_is_reported_failed<H: Harness>(harness: &H) {
    let sets: &[(&str, &[(&str, &str)])] = &[("slow", &[("EXAMPLE_READY_AFTER_SECONDS", "600")])];
    let running = Running::start_with(harness, sets, |config| {
        config.readiness_timeout = Duration::from_millis(500);
    })
    .await;
    let agent = agent("sleepy");
    let options = json!({"secretSet": "slow"});
    let deployment = running
        .deploy(&agent, &harness.example_image(), (1, 2), options)
        .await;
    let failed = running.failed(&deployment).await;
    let (code, message) = error_of(&failed);
    assert_eq!(code, "READINESS_TIMEOUT");
    assert!(message.contains("/readyz"), "{message}");
    running
        .until("at most the one replica being tried", |views| {
            views
                .iter()
                .filter(|v| v.status == ReplicaStatus::Running)
                .count()
                <= 1
        })
        .await;
    running.finish().await;
}

/// A deployment naming a secret set that does not open: `SECRET_SET_UNAVAILABLE`, naming the
/// set, and no replica runs.
pub async fn a_set_that_does_not_open_is_secret_set_unavailable<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let agent = agent("unsealed");
    let options = json!({"secretSet": "missing-set"});
    let deployment = running
        .deploy(&agent, &harness.example_image(), (1, 2), options)
        .await;
    let failed = running.failed(&deployment).await;
    let (code, message) = error_of(&failed);
    assert_eq!(code, "SECRET_SET_UNAVAILABLE");
    assert!(message.contains("missing-set"), "{message}");
    assert!(running.all_replicas().await.is_empty());
    running.finish().await;
}
