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
use data_plane::testing::fake::{EXAMPLE_IMAGE, FakeEngine, LATE_UNPULLABLE_IMAGE};
use data_plane::testing::scenarios::{Harness, Inspected};
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

    fn retire(&self, deployment_id: &str) -> impl Future<Output = Result<(), EngineError>> + Send {
        self.0.retire(deployment_id)
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

    fn late_unpullable_image(&self) -> Option<String> {
        Some(LATE_UNPULLABLE_IMAGE.to_owned())
    }

    fn config(&self, stack: &str) -> Config {
        Config {
            stack: stack.to_owned(),
            tick: Duration::from_millis(50),
            readiness_timeout: Duration::from_secs(10),
            backoff_first: Duration::from_millis(50),
            backoff_most: Duration::from_millis(400),
            stable_after: Duration::from_secs(60),
            stop_grace: Duration::from_secs(1),
            log_limit: data_plane::logs::LogLimit::default(),
            holder_checks: agent_holder::Checks {
                every: Duration::from_millis(100),
                misses: 3,
            },
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

    async fn freeze(&self, id: &ReplicaId) {
        self.engine.fake().freeze(id);
    }

    /// The FakeEngine answered a retire of it (it keeps nothing else to look at).
    async fn released(&self, deployment_id: &str) -> Option<bool> {
        let retires = self.engine.fake().retires();
        Some(
            retires
                .iter()
                .any(|asked| asked.deployment_id == deployment_id && !asked.failed),
        )
    }
}

data_plane::every_scenario!(fake());

/// Where a pull can fail after `run` returned (not on Docker, which pulls within `run`).
mod late_pull {
    use super::*;

    data_plane::scenarios_on!(fake(); a_pull_failure_after_run_is_reported_failed_at_once);
}

/// A replica listed before its `run` answered is neither adopted beside it nor stopped as a
/// stray: the reserve settles, sessions start.
mod slow_runs {
    use super::*;

    data_plane::scenarios_on!(slow_runs();
        the_reserve_is_kept_and_refilled_after_a_session,
        a_cold_start_is_cold_start_true,
        a_restart_adopts_wanted_idle_replicas_and_stops_unknown_ones,
    );
}

/// A retire the engine fails is tried again, after the failures' backoff, until it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_retire_is_tried_again_until_the_engine_answers() {
    use data_plane::testing::scenarios::{Running, agent};

    let harness = fake();
    let running = Running::start(&harness, &[]).await;
    let agent = agent("retried");
    let old = running.ready_deployment(&harness, &agent, (1, 2)).await;
    harness.engine.fail_retires(2);
    let new = running.ready_deployment(&harness, &agent, (1, 2)).await;
    running.until_replicas(&old, 0).await;
    let retried = tokio::time::timeout(data_plane::testing::scenarios::WAIT, async {
        while harness.released(&old).await != Some(true) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(retried.is_ok(), "never retired after two failures");
    let asks: Vec<bool> = (harness.engine.retires().into_iter())
        .filter(|asked| asked.deployment_id == old)
        .map(|asked| asked.failed)
        .collect();
    assert_eq!(
        asks,
        [true, true, false],
        "asked again until it answered, then no more"
    );
    assert!(
        harness
            .engine
            .retires()
            .iter()
            .all(|asked| asked.replicas_left == 0)
    );
    assert!(running.engine.retired(&new).is_empty());
    running.finish().await;
}
