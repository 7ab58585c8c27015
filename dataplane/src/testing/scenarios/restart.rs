//! A data plane restarted over its running replicas (contract section 12, "Restarts"): it keeps
//! no state of its own, so what it adopts is what the engine lists and the holders say.

use std::net::SocketAddr;
use std::time::Duration;

use agent_holder::{HolderState, client};
use serde_json::json;
use shared::agent::DeploymentState;

use super::watched::Asked;
use super::{Harness, Running, WAIT, agent, holding, replicas_holding};
use crate::replica::{ReplicaId, ReplicaView};

/// After a restart, an idle replica of a deployment still wanted is counted in the reserve
/// (none is started beside it), and one of an agent the data plane no longer knows is stopped.
pub async fn a_restart_adopts_wanted_idle_replicas_and_stops_unknown_ones<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let (kept, forgotten) = (agent("kept"), agent("forgotten"));
    let image = harness.example_image();
    let wanted = running.deploy(&kept, &image, (1, 2), json!({})).await;
    let unknown = running.deploy(&forgotten, &image, (1, 2), json!({})).await;
    running.ready(&wanted).await;
    running.ready(&unknown).await;
    let adopted = running.until_replicas(&wanted, 1).await;
    let stray = running.until_replicas(&unknown, 1).await;
    let running = running.restart(harness, |agent| agent.name == "kept").await;
    running
        .until("the unknown agent's replica stopped", |views| {
            views.iter().all(|view| view.id != stray[0])
        })
        .await;
    running.ready(&wanted).await;
    assert_eq!(running.until_replicas(&wanted, 1).await, adopted);
    running.finish().await;
}

/// A session held across a restart: the new data plane adopts the replica holding it (reports
/// it `started`, which the status function drops as a repeat), carries its lines to the
/// session's stream, and reports its end once, `completed`; then the replica is removed.
pub async fn a_data_plane_restarted_while_a_replica_holds_a_session_adopts_it_and_the_session_ends_once<
    H: Harness,
>(
    harness: &H,
) {
    let running = Running::start(harness, &[]).await;
    let echo = agent("echo");
    let deployment = running.ready_deployment(harness, &echo, (1, 2)).await;
    let body = json!({"durationSeconds": 3});
    let session = running.started_session(&echo, &deployment, body).await;
    let held = holding(harness, &running, &deployment, &session).await;
    let before = running.reports.clone();
    let running = running.restart(harness, |_| true).await;
    running.started(&session).await;
    let ended = running.ended(&session).await;
    assert_eq!(ended.completion_status, Some("completed"), "{ended:?}");
    running
        .reports
        .wait_for_session_line(WAIT, &session, "session ending")
        .await;
    ends_once(&running, &held, &session).await;
    let ended_before = before.session_reports(&session);
    assert!(
        ended_before.iter().all(|report| report.state != "ended"),
        "the data plane that died reported no end: {ended_before:#?}"
    );
    running.finish().await;
}

/// A session that ended while no data plane ran: the holder still says how it ended, and the
/// restarted data plane reports that end once.
pub async fn a_data_plane_restarted_after_the_session_ended_reports_its_end_once<H: Harness>(
    harness: &H,
) {
    let running = Running::start(harness, &[]).await;
    let echo = agent("echo");
    let deployment = running.ready_deployment(harness, &echo, (1, 2)).await;
    let body = json!({"durationSeconds": 1, "status": 500});
    let session = running.started_session(&echo, &deployment, body).await;
    let held = holding(harness, &running, &deployment, &session).await;
    running.plane.halt();
    let view = running
        .all_replicas()
        .await
        .into_iter()
        .find(|view| view.id == held)
        .expect("the replica runs while no data plane does");
    holder_ended(&view).await;
    let before = running.reports.clone();
    let running = running.restart(harness, |_| true).await;
    let ended = running.ended(&session).await;
    assert_eq!(ended.completion_status, Some("agentError"), "{ended:?}");
    ends_once(&running, &held, &session).await;
    assert!(
        before
            .session_reports(&session)
            .iter()
            .all(|report| report.state != "ended"),
        "the halted data plane reported no end"
    );
    running.finish().await;
}

/// A `Session Requested` delivered again to a restarted data plane (its place in the stream
/// was not saved before it died) finds the session held by the replica it adopted: no second
/// replica is handed it, and the first keeps it to its end, reported once.
pub async fn a_session_requested_again_after_a_restart_claims_nothing_new<H: Harness>(harness: &H) {
    let running = Running::start(harness, &[]).await;
    let echo = agent("echo");
    let deployment = running.ready_deployment(harness, &echo, (1, 2)).await;
    let body = json!({"durationSeconds": 3});
    let session = running
        .started_session(&echo, &deployment, body.clone())
        .await;
    let held = holding(harness, &running, &deployment, &session).await;
    let running = running.restart(harness, |_| true).await;
    running
        .request_session_as(&echo, &deployment, &session, body)
        .await;
    running.started(&session).await;
    let all: Vec<ReplicaId> = running
        .all_replicas()
        .await
        .into_iter()
        .map(|view| view.id)
        .collect();
    let holding_now = replicas_holding(harness, &all, &session).await;
    assert_eq!(
        holding_now,
        vec![held.clone()],
        "only the adopted replica holds {session}"
    );
    // The agent's own record (its log, as the engine keeps it): handed the session once.
    assert_eq!(
        harness.sessions_of(&held).await,
        vec![session.clone()],
        "the adopted replica was handed {session} once"
    );
    let ended = running.ended(&session).await;
    assert_eq!(ended.completion_status, Some("completed"), "{ended:?}");
    running
        .reports
        .wait_for_session_line(WAIT, &session, "session ending")
        .await;
    ends_once(&running, &held, &session).await;
    running.finish().await;
}

/// Waits (up to [`WAIT`]) for the replica's holder to say its session ended.
async fn holder_ended(view: &ReplicaView) {
    let holder = view
        .holder
        .clone()
        .expect("a running replica's holder has an address");
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match client::state(&holder, Duration::from_secs(5)).await {
                Ok(HolderState::Ended { .. }) => return,
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the holder never said the session ended");
}

/// Once the replica that held `session` is removed, the session was reported ended once.
async fn ends_once<H: Harness>(running: &Running<H>, held: &ReplicaId, session: &str) {
    running
        .until("the replica that held the session removed", |views| {
            views.iter().all(|view| view.id != *held)
        })
        .await;
    let reports = running.reports.session_reports(session);
    let ends = reports.iter().filter(|report| report.state == "ended");
    assert_eq!(ends.count(), 1, "{reports:#?}");
}

/// Restarted over replicas whose holders do not answer (one listed without an address, one at
/// an address that refuses): they count in the reserve, so no second reserve is started beside
/// them (never more than `maxReplicas`); once the readiness timeout has passed since they were
/// first listed they are stopped, nothing is reported failed (the holder is the platform's), and
/// the plan replaces them.
pub async fn a_restart_over_unanswering_holders_starts_no_second_reserve_and_replaces_them_after_the_readiness_timeout<
    H: Harness,
>(
    harness: &H,
) {
    let running = Running::start(harness, &[]).await;
    let mute = agent("mute");
    let image = harness.example_image();
    let deployment = running.deploy(&mute, &image, (2, 2), json!({})).await;
    running.ready(&deployment).await;
    let old = running.until_replicas(&deployment, 2).await;
    running.engine.mute_holder(&old[0], None);
    running
        .engine
        .mute_holder(&old[1], Some(refusing_address()));
    let asked_before = running.engine.asked().len();
    let running = running.restart(harness, |_| true).await;
    let timeout = harness.config(&running.stack).readiness_timeout;
    let replaced = tokio::time::timeout(timeout + WAIT, async {
        loop {
            let now = running.replicas(&deployment).await;
            if now.len() == 2 && now.iter().all(|view| !old.contains(&view.id)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let asked = running.engine.asked().split_off(asked_before);
    assert!(
        replaced.is_ok(),
        "the unanswering replicas were never replaced; asked since the restart: {asked:#?}"
    );
    // Each run replaces a replica already asked to stop: never more than `maxReplicas`.
    let (mut runs, mut stops) = (0, 0);
    for one in &asked {
        match one {
            Asked::Run(id) if *id == deployment => runs += 1,
            Asked::Stop(id) if old.contains(id) => stops += 1,
            _ => {}
        }
        assert!(runs <= stops, "a second reserve was started: {asked:#?}");
    }
    assert_eq!(
        stops, 2,
        "both unanswering replicas were stopped: {asked:#?}"
    );
    running.ready(&deployment).await;
    let failed = running.reports.deployments();
    assert!(
        failed
            .iter()
            .all(|report| report.state != DeploymentState::Failed),
        "nothing reported failed for the platform's unanswering holders: {failed:#?}"
    );
    running.finish().await;
}

/// An address nothing listens at: a connection to it is refused.
fn refusing_address() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address")
}
