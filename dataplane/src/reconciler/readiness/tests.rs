//! The probe and a cold start on the FakeEngine, the reconcile loop's ticks an hour apart: what
//! happens before the next tick is the probe's or the session request's doing.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::reconciler::Config;
use crate::replica::{ExitReason, ReplicaId};
use crate::testing::fake::{EXAMPLE_IMAGE, FakeEngine};
use crate::testing::scenarios::{Harness, Inspected, Running, agent};

struct Fake(Arc<FakeEngine>);

impl Harness for Fake {
    type E = FakeEngine;

    fn engine(&self) -> Arc<FakeEngine> {
        self.0.clone()
    }

    fn example_image(&self) -> String {
        EXAMPLE_IMAGE.to_owned()
    }

    fn absent_image(&self) -> String {
        "agent-hosting.local/no-such-agent:1".to_owned()
    }

    fn config(&self, stack: &str) -> Config {
        Config {
            tick: Duration::from_secs(3600),
            ..Config::for_stack(stack)
        }
    }

    async fn inspect(&self, _: &ReplicaId) -> Option<Inspected> {
        None
    }

    async fn sessions_of(&self, _: &ReplicaId) -> Vec<String> {
        Vec::new()
    }

    async fn oom_kill(&self, id: &ReplicaId) {
        self.0.kill(id, ExitReason::OomKilled);
    }

    async fn freeze(&self, id: &ReplicaId) {
        self.0.freeze(id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_replicas_first_200_hands_it_the_waiting_session_without_a_tick() {
    let harness = Fake(Arc::new(FakeEngine::new()));
    // Ready a second after it starts: long after the loop's first tick, which runs at once.
    let sets: &[(&str, &[(&str, &str)])] = &[("slow", &[("EXAMPLE_READY_AFTER_SECONDS", "1")])];
    let running = Running::start(&harness, sets).await;
    let agent = agent("cold");
    let options = json!({"secretSet": "slow"});
    let deployment = running.deploy(&agent, EXAMPLE_IMAGE, (0, 1), options).await;
    let session = running
        .request_session(&agent, &deployment, json!({"durationSeconds": 30}))
        .await;
    // One pass: the replica for the waiting session is started; the next tick is an hour away.
    running.plane.reconcile().await;
    let started = running.started(&session).await;
    assert_eq!(started.cold_start, Some(true), "{started:?}");
    running.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_finds_no_idle_replica_has_its_replica_started_without_a_tick() {
    let harness = Fake(Arc::new(FakeEngine::new()));
    let running = Running::start(&harness, &[]).await;
    // The loop's first tick, which runs at once, is past before the deployment is asked for.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let agent = agent("cold");
    let deployment = running
        .deploy(&agent, EXAMPLE_IMAGE, (0, 1), json!({}))
        .await;
    let session = running
        .request_session(&agent, &deployment, json!({"durationSeconds": 30}))
        .await;
    let started = running.started(&session).await;
    assert_eq!(started.cold_start, Some(true), "{started:?}");
    running.finish().await;
}
