//! The data plane's scenarios (src/testing/scenarios.rs) on the FakeEngine: every replica an
//! in-process agent obeying the knobs the example agent has, with short timings. Some run
//! again on a FakeEngine whose `run` answers only a while after its replica is listed, as
//! Docker's does (it creates and starts the container, then answers).

use std::sync::Arc;
use std::time::Duration;

use std::future::Future;

use data_plane::engine::{Engine, EngineError, LogLine, RunError};
use data_plane::reconciler::Config;
use data_plane::replica::{ExitReason, ReplicaId, ReplicaSpec, ReplicaView};
use data_plane::testing::fake::{EXAMPLE_IMAGE, FakeEngine};
use data_plane::testing::scenarios::{self, Harness, Inspected};
use futures_util::stream::BoxStream;
use time::OffsetDateTime;

/// How long after its replica is listed a slow `run` answers.
const SLOW_RUN: Duration = Duration::from_millis(400);

/// An engine whose replicas are the FakeEngine's.
trait OnFake: Engine {
    fn fake(&self) -> &FakeEngine;
}

impl OnFake for FakeEngine {
    fn fake(&self) -> &FakeEngine {
        self
    }
}

/// The FakeEngine, its `run` answering [`SLOW_RUN`] after the replica is listed.
struct SlowRuns(FakeEngine);

impl OnFake for SlowRuns {
    fn fake(&self) -> &FakeEngine {
        &self.0
    }
}

impl Engine for SlowRuns {
    async fn run(&self, spec: &ReplicaSpec) -> Result<ReplicaId, RunError> {
        let id = self.0.run(spec).await?;
        tokio::time::sleep(SLOW_RUN).await;
        Ok(id)
    }

    fn stop(
        &self,
        replica: &ReplicaId,
        grace: Duration,
    ) -> impl Future<Output = Result<(), EngineError>> + Send {
        self.0.stop(replica, grace)
    }

    fn list(
        &self,
        stack: &str,
    ) -> impl Future<Output = Result<Vec<ReplicaView>, EngineError>> + Send {
        self.0.list(stack)
    }

    fn logs(
        &self,
        replica: &ReplicaId,
        since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        self.0.logs(replica, since)
    }
}

struct Fake<E> {
    engine: Arc<E>,
}

fn fake() -> Fake<FakeEngine> {
    Fake {
        engine: Arc::new(FakeEngine::new()),
    }
}

fn slow_runs() -> Fake<SlowRuns> {
    Fake {
        engine: Arc::new(SlowRuns(FakeEngine::new())),
    }
}

impl<E: OnFake> Harness for Fake<E> {
    type E = E;

    fn engine(&self) -> Arc<E> {
        self.engine.clone()
    }

    fn example_image(&self) -> String {
        EXAMPLE_IMAGE.to_owned()
    }

    fn absent_image(&self) -> String {
        "agent-hosting.local/no-such-agent:1".to_owned()
    }

    fn config(&self, stack: &str) -> Config {
        Config {
            stack: stack.to_owned(),
            tick: Duration::from_millis(50),
            readiness_timeout: Duration::from_secs(10),
            backoff_first: Duration::from_millis(50),
            backoff_most: Duration::from_millis(400),
            stop_grace: Duration::from_secs(1),
        }
    }

    async fn inspect(&self, id: &ReplicaId) -> Option<Inspected> {
        let (_, spec) = self
            .engine
            .fake()
            .specs()
            .into_iter()
            .find(|(running, _)| running == id)?;
        Some(Inspected {
            labels: spec.labels,
            limits: spec.limits,
            env: spec
                .env
                .into_iter()
                .map(|var| (var.name, var.value))
                .collect(),
        })
    }

    async fn sessions_of(&self, id: &ReplicaId) -> Vec<String> {
        self.engine
            .fake()
            .bot_requests(id)
            .into_iter()
            .filter_map(|(headers, _)| {
                let value = headers.get("x-daily-session-id")?;
                value.to_str().ok().map(str::to_owned)
            })
            .collect()
    }

    async fn oom_kill(&self, id: &ReplicaId) {
        self.engine.fake().kill(id, ExitReason::OomKilled);
    }
}

macro_rules! on {
    ($harness:ident: $($scenario:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $scenario() {
            scenarios::$scenario(&$harness()).await;
        }
    )*};
}

on!(fake:
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
    an_oom_kill_at_start_is_reported_failed,
    an_unpullable_image_is_reported_failed_at_once,
    a_readiness_timeout_is_reported_failed,
    two_sessions_never_share_a_replica,
    a_duplicate_session_requested_claims_nothing_new,
    a_daily_room_without_credentials_is_transport_not_configured,
    a_set_that_does_not_open_is_secret_set_unavailable,
    a_restart_adopts_wanted_idle_replicas_and_stops_unknown_ones,
    a_data_plane_restarted_while_a_replica_holds_a_session_adopts_it_and_the_session_ends_once,
    a_data_plane_restarted_after_the_session_ended_reports_its_end_once,
);

/// A replica listed before its `run` answered is neither adopted beside it nor stopped as a
/// stray: the reserve settles, sessions start.
mod slow_runs {
    use super::*;

    on!(slow_runs:
        the_reserve_is_kept_and_refilled_after_a_session,
        a_cold_start_is_cold_start_true,
        a_restart_adopts_wanted_idle_replicas_and_stops_unknown_ones,
    );
}
