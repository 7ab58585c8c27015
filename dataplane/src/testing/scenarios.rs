//! The data plane's promises (contract section 12) as scenarios any engine runs: each is an
//! async function over a [`Harness`], so the same bodies run on the FakeEngine (milliseconds,
//! tests/scenarios_on_fake.rs) and on Docker. Each panics with what broke. The agents are
//! driven only by the knobs the example agent and the fake agent share (env
//! `EXAMPLE_READY_AFTER_SECONDS`, `EXAMPLE_EXIT_AT_START`, `EXAMPLE_EXIT_AFTER_READY`; `/bot`
//! body `durationSeconds`, `status`, `exitCode`, `logLines`), set through secret sets as a
//! customer would.

mod failures;
mod liveness;
mod logs;
mod reserve;
mod restart;
mod retire;
mod rollout;
mod sessions;
mod steps;
mod watched;

pub use failures::{
    a_crash_after_readiness_is_a_crash_loop_backed_off,
    a_crash_loop_is_reported_failed_with_its_exit_code_and_last_lines,
    a_pull_failure_after_run_is_reported_failed_at_once, a_readiness_timeout_is_reported_failed,
    a_set_that_does_not_open_is_secret_set_unavailable, an_oom_kill_at_start_is_reported_failed,
    an_unpullable_image_is_reported_failed_at_once,
};
pub use liveness::{
    a_frozen_idle_replica_is_never_handed_a_session_another_takes_it,
    a_replica_that_stops_answering_mid_session_ends_it_agent_error,
};
pub use logs::a_log_flood_past_the_limit_is_stored_once_or_counted_in_a_marker;
pub use reserve::{
    a_deployment_runs_replicas_with_its_profiles_limits_env_and_labels_and_is_reported_ready,
    a_deployment_without_a_reserve_is_proven_by_one_replica_then_runs_none,
    never_more_than_max_replicas, the_reserve_is_kept_and_refilled_after_a_session,
};
pub use restart::{
    a_data_plane_restarted_after_the_session_ended_reports_its_end_once,
    a_data_plane_restarted_while_a_replica_holds_a_session_adopts_it_and_the_session_ends_once,
    a_restart_adopts_wanted_idle_replicas_and_stops_unknown_ones,
    a_restart_over_unanswering_holders_starts_no_second_reserve_and_replaces_them_after_the_readiness_timeout,
    a_session_requested_again_after_a_restart_claims_nothing_new,
};
pub use retire::{
    a_deleted_agents_deployments_are_retired_once_their_replicas_are_gone,
    a_superseded_deployment_is_retired_once_its_last_replica_is_gone_not_before,
};
pub use rollout::{
    a_rollout_moves_the_reserve_and_lets_busy_replicas_finish, an_agent_deleted_leaves_no_replica,
    never_more_than_max_replicas_across_a_rollout,
};
pub use sessions::{
    a_cold_start_is_cold_start_true, a_crash_mid_session_ends_it_agent_error,
    a_daily_room_without_credentials_is_transport_not_configured,
    a_duplicate_session_requested_claims_nothing_new, a_non_2xx_answer_ends_it_agent_error,
    a_stop_ends_it_terminated_and_removes_the_replica, a_stop_naming_another_agent_stops_nothing,
    a_two_xx_answer_ends_it_completed_and_its_replica_is_replaced_never_reused,
    a_warm_start_is_cold_start_false_and_reports_started, two_sessions_never_share_a_replica,
};

/// Every scenario, each a `#[tokio::test]` on the harness `$harness` gives (an expression,
/// `.await` included if it needs one): the one list every engine's suite runs, so that no engine
/// misses a scenario added later.
#[macro_export]
macro_rules! every_scenario {
    ($harness:expr) => {
        $crate::scenarios_on!($harness;
            a_deployment_runs_replicas_with_its_profiles_limits_env_and_labels_and_is_reported_ready,
            the_reserve_is_kept_and_refilled_after_a_session,
            never_more_than_max_replicas,
            a_warm_start_is_cold_start_false_and_reports_started,
            a_cold_start_is_cold_start_true,
            a_two_xx_answer_ends_it_completed_and_its_replica_is_replaced_never_reused,
            a_non_2xx_answer_ends_it_agent_error,
            a_crash_mid_session_ends_it_agent_error,
            a_stop_ends_it_terminated_and_removes_the_replica,
            a_stop_naming_another_agent_stops_nothing,
            a_rollout_moves_the_reserve_and_lets_busy_replicas_finish,
            never_more_than_max_replicas_across_a_rollout,
            an_agent_deleted_leaves_no_replica,
            a_deployment_without_a_reserve_is_proven_by_one_replica_then_runs_none,
            a_crash_loop_is_reported_failed_with_its_exit_code_and_last_lines,
            a_crash_after_readiness_is_a_crash_loop_backed_off,
            a_log_flood_past_the_limit_is_stored_once_or_counted_in_a_marker,
            an_oom_kill_at_start_is_reported_failed,
            an_unpullable_image_is_reported_failed_at_once,
            a_readiness_timeout_is_reported_failed,
            two_sessions_never_share_a_replica,
            a_frozen_idle_replica_is_never_handed_a_session_another_takes_it,
            a_replica_that_stops_answering_mid_session_ends_it_agent_error,
            a_duplicate_session_requested_claims_nothing_new,
            a_daily_room_without_credentials_is_transport_not_configured,
            a_set_that_does_not_open_is_secret_set_unavailable,
            a_restart_adopts_wanted_idle_replicas_and_stops_unknown_ones,
            a_data_plane_restarted_while_a_replica_holds_a_session_adopts_it_and_the_session_ends_once,
            a_data_plane_restarted_after_the_session_ended_reports_its_end_once,
            a_session_requested_again_after_a_restart_claims_nothing_new,
            a_restart_over_unanswering_holders_starts_no_second_reserve_and_replaces_them_after_the_readiness_timeout,
            a_superseded_deployment_is_retired_once_its_last_replica_is_gone_not_before,
            a_deleted_agents_deployments_are_retired_once_their_replicas_are_gone,
        );
    };
}

/// The named scenarios, each a `#[tokio::test]` on the harness `$harness` gives (a subset, for
/// a harness that checks one concern, or a scenario only some engines can produce: use
/// [`every_scenario!`] for an engine's suite). Only where it can be produced:
/// `a_pull_failure_after_run_is_reported_failed_at_once` (fake, ECS: Docker pulls within
/// `run`, so its pull failures are `an_unpullable_image_is_reported_failed_at_once`).
#[macro_export]
macro_rules! scenarios_on {
    ($harness:expr; $($scenario:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $scenario() {
            $crate::testing::scenarios::$scenario(&$harness).await;
        }
    )*};
}

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use shared::agent::{ConfigChanges, DeploymentState, StatusReport};
use shared::manifest::{DeploymentMode, Manifest};
use shared::secrets::body::SetChange;
use shared::session::SessionRequest;
use shared::store::memory::MemoryStore;
use shared::testing::data_keys::FakeKms;
use tokio::task::JoinHandle;

use super::reports::RecordingReports;
use crate::engine::Engine;
use crate::events::{AgentRef, ControlEvent};
use crate::reconciler::{Config, DataPlane};
use crate::replica::{Limits, ReplicaId, ReplicaLabels, ReplicaStatus, ReplicaView};
pub use watched::{Asked, Retired, Watched};

/// What a replica was started with, as its engine holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    pub labels: ReplicaLabels,
    pub limits: Limits,
    /// In the order given.
    pub env: Vec<(String, String)>,
}

/// An engine to run the scenarios on, and what a scenario may ask of it beyond the port.
pub trait Harness: Send + Sync {
    type E: Engine;
    fn engine(&self) -> Arc<Self::E>;
    /// An image of the example agent (or the fake's stand-in for it).
    fn example_image(&self) -> String;
    /// An image no registry has.
    fn absent_image(&self) -> String;
    /// An image whose pull fails only after `run` returned (on ECS a task that stops
    /// `TaskFailedToStart` with `CannotPullContainerError`); `None` on an engine that pulls
    /// within `run` (Docker), where that failure is `run`'s own ([`Harness::absent_image`]).
    fn late_unpullable_image(&self) -> Option<String> {
        None
    }
    /// The data plane's timings on this engine, for `stack`.
    fn config(&self, stack: &str) -> Config;
    /// What the replica was started with; `None` once it is gone.
    fn inspect(&self, id: &ReplicaId) -> impl Future<Output = Option<Inspected>> + Send;
    /// The `X-Daily-Session-Id` of every `POST /bot` the replica received.
    fn sessions_of(&self, id: &ReplicaId) -> impl Future<Output = Vec<String>> + Send;
    /// Kills the replica as the kernel does when it runs out of memory.
    fn oom_kill(&self, id: &ReplicaId) -> impl Future<Output = ()> + Send;
    /// Pauses the replica's agent (`docker pause`: its processes frozen, its socket still
    /// accepting): it answers nothing, and stays listed running.
    fn freeze(&self, id: &ReplicaId) -> impl Future<Output = ()> + Send;
    /// Whether what the engine keeps for the deployment outside its replicas is released (on
    /// ECS its secrets deleted and its task definition revisions INACTIVE). `None` on an engine
    /// that keeps nothing (Docker): the scenarios then see only that it was asked
    /// ([`Watched`]).
    fn released(&self, deployment_id: &str) -> impl Future<Output = Option<bool>> + Send {
        let _ = deployment_id;
        std::future::ready(None)
    }
}

/// The bound of every wait for something the data plane does on its own.
pub const WAIT: Duration = Duration::from_secs(20);
const NAMESPACE: &str = "tiny-ferret-1";
const REGION: &str = "us-west-2";

type Plane<H> = DataPlane<Watched<<H as Harness>::E>, MemoryStore, FakeKms, RecordingReports>;

/// A data plane running on the harness's engine, its own stack, store and reports.
pub struct Running<H: Harness> {
    pub plane: Arc<Plane<H>>,
    pub reports: Arc<RecordingReports>,
    pub engine: Arc<Watched<H::E>>,
    pub stack: String,
    loop_task: JoinHandle<()>,
    /// The `Deployment Requested` events taken, to deliver again after a restart.
    deployed: std::sync::Mutex<Vec<ControlEvent>>,
}

/// An agent of the scenario's namespace.
pub fn agent(name: &str) -> AgentRef {
    AgentRef {
        namespace: NAMESPACE.to_owned(),
        name: name.to_owned(),
    }
}

pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The replicas among `ids` that were handed `session`, once one was: an engine may record a
/// request a moment after the data plane wrote it. Empty after [`WAIT`].
pub async fn replicas_holding<H: Harness>(
    harness: &H,
    ids: &[ReplicaId],
    session: &str,
) -> Vec<ReplicaId> {
    let look = async {
        loop {
            let mut found = Vec::new();
            for id in ids {
                if harness.sessions_of(id).await.iter().any(|s| s == session) {
                    found.push(id.clone());
                }
            }
            if !found.is_empty() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT, look).await.unwrap_or_default()
}

/// The replica of `deployment` holding `session`: the one of its running replicas (a reserve
/// started beside it among them) that was handed it.
pub async fn holding<H: Harness>(
    harness: &H,
    running: &Running<H>,
    deployment: &str,
    session: &str,
) -> ReplicaId {
    let ids: Vec<ReplicaId> = running
        .replicas(deployment)
        .await
        .into_iter()
        .map(|view| view.id)
        .collect();
    let mut holding = replicas_holding(harness, &ids, session).await;
    assert_eq!(holding.len(), 1, "one replica holds {session}: {holding:?}");
    holding.remove(0)
}

/// The sessions the replica was handed, once it was handed one; empty after [`WAIT`].
pub async fn handed_to<H: Harness>(harness: &H, id: &ReplicaId) -> Vec<String> {
    let look = async {
        loop {
            let sessions = harness.sessions_of(id).await;
            if !sessions.is_empty() {
                return sessions;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT, look).await.unwrap_or_default()
}

impl<H: Harness> Running<H> {
    /// Starts a data plane (its loop included) for a stack of its own; its secret sets are
    /// written first, so that a deployment naming them opens them.
    pub async fn start(harness: &H, sets: &[(&str, &[(&str, &str)])]) -> Self {
        Self::start_with(harness, sets, |_| {}).await
    }

    /// As [`Running::start`], with the harness's timings changed by `tweak`.
    pub async fn start_with(
        harness: &H,
        sets: &[(&str, &[(&str, &str)])],
        tweak: impl FnOnce(&mut Config),
    ) -> Self {
        let stack = format!("scenario-{}", &new_id()[..8]);
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        for (name, pairs) in sets {
            let secrets: Vec<Value> = pairs
                .iter()
                .map(|(key, value)| json!({"secretKey": key, "secretValue": value}))
                .collect();
            let change = SetChange::from_json(name, REGION, json!({ "secrets": secrets }))
                .expect("a valid set");
            shared::secrets::sets::put(&store, &kms, NAMESPACE, name, REGION, change)
                .await
                .expect("the set is written");
        }
        let reports = Arc::new(RecordingReports::default());
        let engine = Arc::new(Watched::new(harness.engine(), &stack));
        let mut config = harness.config(&stack);
        tweak(&mut config);
        let plane = DataPlane::new(config, engine.clone(), store, kms, reports.clone());
        let loop_task = tokio::spawn(plane.clone().run());
        Running {
            plane,
            reports,
            engine,
            stack,
            loop_task,
            deployed: std::sync::Mutex::default(),
        }
    }

    /// Asks for a deployment of `image` with `min`..=`max` replicas, the profile's resources and
    /// an env set when named; its id.
    pub async fn deploy(
        &self,
        agent: &AgentRef,
        image: &str,
        scaling: (u32, u32),
        options: Value,
    ) -> String {
        let deployment_id = new_id();
        let mut body = json!({"serviceName": agent.name, "image": "example/agent:1"});
        if let (Some(body), Some(options)) = (body.as_object_mut(), options.as_object()) {
            body.extend(options.clone());
        }
        let (_, config) = ConfigChanges::from_json(body)
            .and_then(ConfigChanges::into_new_agent)
            .expect("a valid agent");
        let mut manifest: Manifest =
            config.manifest(DeploymentMode::Simulated, &agent.name, &agent.namespace);
        manifest.spec.image = image.to_owned();
        manifest.spec.auto_scaling.min_replicas = scaling.0;
        manifest.spec.auto_scaling.max_replicas = scaling.1;
        let event = ControlEvent::DeploymentRequested {
            agent: agent.clone(),
            service_id: format!("service-{}", agent.name),
            deployment_id: deployment_id.clone(),
            manifest: Box::new(manifest),
        };
        self.deployed
            .lock()
            .expect("not poisoned")
            .push(event.clone());
        self.plane.take(event).await;
        deployment_id
    }

    /// The data plane dies (its loop and every task of it stop, its replicas stay) and another
    /// takes its stack over, taking again the deployment events `keep` accepts before its loop
    /// starts.
    pub async fn restart(self, harness: &H, keep: impl Fn(&AgentRef) -> bool) -> Self {
        self.loop_task.abort();
        self.plane.halt();
        let events = std::mem::take(&mut *self.deployed.lock().expect("not poisoned"));
        let reports = Arc::new(RecordingReports::default());
        let mut config = harness.config(&self.stack);
        config.stack.clone_from(&self.stack);
        let plane = DataPlane::new(
            config,
            self.engine.clone(),
            MemoryStore::default(),
            FakeKms::default(),
            reports.clone(),
        );
        let mut kept = Vec::new();
        for event in events {
            if let ControlEvent::DeploymentRequested { agent, .. } = &event
                && keep(agent)
            {
                plane.take(event.clone()).await;
                kept.push(event);
            }
        }
        plane.settle().await;
        let loop_task = tokio::spawn(plane.clone().run());
        Running {
            plane,
            reports,
            engine: self.engine.clone(),
            stack: self.stack.clone(),
            loop_task,
            deployed: std::sync::Mutex::new(kept),
        }
    }

    /// Asks for a session of the deployment with the `/bot` body given; its id.
    pub async fn request_session(
        &self,
        agent: &AgentRef,
        deployment_id: &str,
        body: Value,
    ) -> String {
        let session_id = new_id();
        self.request_session_as(agent, deployment_id, &session_id, body)
            .await;
        session_id
    }

    pub async fn request_session_as(
        &self,
        agent: &AgentRef,
        deployment_id: &str,
        session_id: &str,
        body: Value,
    ) {
        let request = SessionRequest {
            body: Some(body.to_string()),
            ..SessionRequest::default()
        };
        self.request(agent, deployment_id, session_id, request)
            .await;
    }

    pub async fn request(
        &self,
        agent: &AgentRef,
        deployment_id: &str,
        session_id: &str,
        request: SessionRequest,
    ) {
        self.plane
            .take(ControlEvent::SessionRequested {
                agent: agent.clone(),
                deployment_id: deployment_id.to_owned(),
                session_id: session_id.to_owned(),
                request,
            })
            .await;
    }

    pub async fn stop_session(&self, agent: &AgentRef, session_id: &str) {
        let event = ControlEvent::SessionStopRequested {
            agent: agent.clone(),
            session_id: session_id.to_owned(),
        };
        self.plane.take(event).await;
    }

    /// The deployment's replicas the engine runs (not exited), by id.
    pub async fn replicas(&self, deployment_id: &str) -> Vec<ReplicaView> {
        let mut views: Vec<ReplicaView> = self
            .engine
            .list(&self.stack)
            .await
            .expect("the engine lists")
            .into_iter()
            .filter(|view| view.labels.deployment_id == deployment_id)
            .filter(|view| view.status == ReplicaStatus::Running)
            .collect();
        views.sort_by(|a, b| a.id.cmp(&b.id));
        views
    }

    /// Every replica of the stack, in any state.
    pub async fn all_replicas(&self) -> Vec<ReplicaView> {
        self.engine
            .list(&self.stack)
            .await
            .expect("the engine lists")
    }

    /// Waits (up to [`WAIT`]) until the deployment runs `n` replicas; their ids.
    pub async fn until_replicas(&self, deployment_id: &str, n: usize) -> Vec<ReplicaId> {
        let mut last = Vec::new();
        let reached = tokio::time::timeout(WAIT, async {
            loop {
                last = self.replicas(deployment_id).await;
                if last.len() == n {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            reached.is_ok(),
            "{deployment_id} never ran {n} replicas; it runs {last:#?}"
        );
        last.into_iter().map(|view| view.id).collect()
    }

    /// Waits (up to [`WAIT`]) for `condition` on the stack's replicas.
    pub async fn until(&self, what: &str, condition: impl Fn(&[ReplicaView]) -> bool) {
        let mut last = Vec::new();
        let reached = tokio::time::timeout(WAIT, async {
            loop {
                last = self.all_replicas().await;
                if condition(&last) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(reached.is_ok(), "never {what}; replicas: {last:#?}");
    }

    /// The deployment's first `ready` report.
    pub async fn ready(&self, deployment_id: &str) -> StatusReport {
        self.reports
            .wait_for_deployment(WAIT, &format!("ready of {deployment_id}"), |report| {
                report.deployment_id == deployment_id && report.state == DeploymentState::Ready
            })
            .await
    }

    /// The deployment's first `failed` report.
    pub async fn failed(&self, deployment_id: &str) -> StatusReport {
        self.reports
            .wait_for_deployment(WAIT, &format!("failed of {deployment_id}"), |report| {
                report.deployment_id == deployment_id && report.state == DeploymentState::Failed
            })
            .await
    }

    /// Stops every replica of the stack and the loop.
    pub async fn finish(self) {
        self.loop_task.abort();
        self.plane.shutdown().await;
        // A run that was in flight stops as it answers.
        self.until(
            "no replica left after the shutdown",
            <[ReplicaView]>::is_empty,
        )
        .await;
    }
}

impl<H: Harness> Drop for Running<H> {
    fn drop(&mut self) {
        self.loop_task.abort();
    }
}
