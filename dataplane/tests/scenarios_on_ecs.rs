//! The data plane's scenarios (src/testing/scenarios.rs) on the ECS engine against moto: every
//! run, stop and listing is the ECS engine's (RegisterTaskDefinition, RunTask, StopTask,
//! ListTasks, DescribeTasks on moto's server), so the decisions run unchanged above it. moto
//! runs no container, so each task's agent is the FakeEngine's in-process agent (and holder):
//! its address, its exit and its lines stand in for the task's. What the scenarios inspect of a
//! replica's spec is the fake agent's copy; ecs_engine.rs checks what ECS was given.

mod ecs_moto;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_ecs::types::TaskDefinitionStatus;
use data_plane::ecs::secrets::{self, Part};
use data_plane::ecs::{EcsClients, EcsEngine, definition};
use data_plane::engine::{Engine, EngineError, LogLine, RunError};
use data_plane::reconciler::Config;
use data_plane::replica::{ExitReason, ReplicaId, ReplicaSpec, ReplicaStatus, ReplicaView};
use data_plane::testing::fake::{EXAMPLE_IMAGE, FakeEngine, LATE_UNPULLABLE_IMAGE};
use data_plane::testing::scenarios::{Harness, Inspected};
use ecs_moto::Moto;
use futures_util::stream::{self, BoxStream, StreamExt};
use time::OffsetDateTime;

/// ECS tasks on moto, each with a fake agent standing in for its containers.
struct EcsWithAgents {
    ecs: EcsEngine,
    /// moto's, to stop a task as ECS does when its pull fails.
    clients: EcsClients,
    cluster: String,
    agents: FakeEngine,
    /// Task ARN -> its fake agent.
    agent_of: Mutex<HashMap<ReplicaId, ReplicaId>>,
}

impl EcsWithAgents {
    fn agent(&self, task: &ReplicaId) -> Option<ReplicaId> {
        self.agent_of.lock().unwrap().get(task).cloned()
    }
}

impl EcsWithAgents {
    /// The task run, then stopped by "ECS" (moto's StopTask) with the reason AWS gives a pull
    /// that failed after RunTask answered: the listing's classification is the engine's own.
    async fn fail_pull_after_run(&self, spec: &ReplicaSpec) -> Result<ReplicaId, RunError> {
        let task = self.ecs.run(spec).await?;
        let repository = spec.image.rsplit_once(':').map_or("", |(name, _)| name);
        let reason = format!(
            "CannotPullContainerError: pull access denied for {repository}, repository does \
             not exist or may require authorization"
        );
        self.clients
            .ecs
            .stop_task()
            .cluster(&self.cluster)
            .task(&task.0)
            .reason(reason)
            .send()
            .await
            .map_err(|err| EngineError::Unavailable(format!("{err:?}")))?;
        Ok(task)
    }
}

impl Engine for EcsWithAgents {
    async fn run(&self, spec: &ReplicaSpec) -> Result<ReplicaId, RunError> {
        if spec.image == LATE_UNPULLABLE_IMAGE {
            return self.fail_pull_after_run(spec).await;
        }
        // The fake decides what the image does (an absent one fails its pull), then ECS runs it.
        let agent = self.agents.run(spec).await?;
        let task = self.ecs.run(spec).await?;
        self.agent_of.lock().unwrap().insert(task.clone(), agent);
        Ok(task)
    }

    async fn stop(&self, replica: &ReplicaId, grace: Duration) -> Result<(), EngineError> {
        self.ecs.stop(replica, grace).await?;
        if let Some(agent) = self.agent(replica) {
            self.agents.stop(&agent, grace).await?;
        }
        Ok(())
    }

    async fn list(&self, stack: &str) -> Result<Vec<ReplicaView>, EngineError> {
        let agents: HashMap<ReplicaId, ReplicaView> = self
            .agents
            .list(stack)
            .await?
            .into_iter()
            .map(|view| (view.id.clone(), view))
            .collect();
        let tasks = self.ecs.list(stack).await?;
        Ok(tasks
            .into_iter()
            .map(|mut view| {
                let agent = self.agent(&view.id).and_then(|agent| agents.get(&agent));
                if let Some(agent) = agent {
                    view.address = agent.address;
                    view.holder = agent.holder.clone();
                    if let ReplicaStatus::Exited(_) = agent.status {
                        view.status = agent.status.clone();
                    }
                }
                view
            })
            .collect())
    }

    fn logs(
        &self,
        replica: &ReplicaId,
        since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        match self.agent(replica) {
            Some(agent) => self.agents.logs(&agent, since),
            None => stream::iter([Err(EngineError::NoSuchReplica(replica.clone()))]).boxed(),
        }
    }

    async fn retire(&self, deployment_id: &str) -> Result<(), EngineError> {
        self.ecs.retire(deployment_id).await
    }
}

struct OnEcs {
    engine: Arc<EcsWithAgents>,
    moto: Moto,
}

fn ecs() -> OnEcs {
    let moto = Moto::start();
    OnEcs {
        engine: Arc::new(EcsWithAgents {
            ecs: moto.engine(),
            clients: moto.clients(),
            cluster: moto.config().cluster,
            agents: FakeEngine::new(),
            agent_of: Mutex::new(HashMap::new()),
        }),
        moto,
    }
}

impl Harness for OnEcs {
    type E = EcsWithAgents;

    fn engine(&self) -> Arc<EcsWithAgents> {
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
            tick: Duration::from_millis(100),
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
        let agent = self.engine.agent(id)?;
        let (_, spec) = self
            .engine
            .agents
            .specs()
            .into_iter()
            .find(|(running, _)| *running == agent)?;
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
        let Some(agent) = self.engine.agent(id) else {
            return Vec::new();
        };
        self.engine
            .agents
            .bot_requests(&agent)
            .into_iter()
            .filter_map(|(headers, _)| {
                let value = headers.get("x-daily-session-id")?;
                value.to_str().ok().map(str::to_owned)
            })
            .collect()
    }

    async fn oom_kill(&self, id: &ReplicaId) {
        if let Some(agent) = self.engine.agent(id) {
            self.engine.agents.kill(&agent, ExitReason::OomKilled);
        }
    }

    async fn freeze(&self, id: &ReplicaId) {
        if let Some(agent) = self.engine.agent(id) {
            self.engine.agents.freeze(&agent);
        }
    }

    /// Its env secret gone from moto's Secrets Manager, and its task definition revisions all
    /// INACTIVE.
    async fn released(&self, deployment_id: &str) -> Option<bool> {
        let clients = &self.engine.clients;
        let name = secrets::name(&self.moto.config(), deployment_id, Part::Env);
        let described = clients
            .secrets
            .describe_secret()
            .secret_id(name)
            .send()
            .await;
        let secret_gone = described.is_err_and(|err| {
            err.as_service_error()
                .is_some_and(|err| err.is_resource_not_found_exception())
        });
        let family = definition::family(deployment_id);
        let mut revisions = [0, 0];
        for (status, count) in [TaskDefinitionStatus::Active, TaskDefinitionStatus::Inactive]
            .into_iter()
            .zip(&mut revisions)
        {
            let listed = clients
                .ecs
                .list_task_definitions()
                .family_prefix(&family)
                .status(status)
                .send()
                .await
                .expect("moto lists task definitions");
            *count = listed.task_definition_arns().len();
        }
        Some(secret_gone && revisions[0] == 0 && revisions[1] > 0)
    }
}

data_plane::every_scenario!(ecs());

/// Where a pull can fail after `run` returned (not on Docker, which pulls within `run`).
mod late_pull {
    use super::*;

    data_plane::scenarios_on!(ecs(); a_pull_failure_after_run_is_reported_failed_at_once);
}
