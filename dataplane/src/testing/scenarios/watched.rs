//! The harness's engine as the scenarios' data plane sees it, with each `retire` it is asked
//! recorded beside the deployment's replicas the engine listed at that moment: on every engine
//! (Docker's retire releases nothing) a scenario sees whether, and when, the reconciler asked.
//! It also makes chosen replicas' holders unanswering on every engine (their address listed as
//! none, or as one that refuses), and records the order of runs and stops asked, and when each
//! run was asked.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::stream::BoxStream;
use time::OffsetDateTime;

use agent_holder::Endpoint;

use crate::engine::{Engine, EngineError, LogLine, RunError};
use crate::replica::{ReplicaId, ReplicaSpec, ReplicaView};

/// A `retire` asked of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retired {
    pub deployment_id: String,
    /// The deployment's replicas the engine listed when asked (exited ones too): none, if the
    /// reconciler asked at the right moment.
    pub listed: usize,
    pub answered: Result<(), String>,
}

/// A run or a stop asked of the engine, in the order asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// A run of the deployment.
    Run(String),
    Stop(ReplicaId),
}

/// The harness's engine, every call passed on.
pub struct Watched<E> {
    inner: Arc<E>,
    stack: String,
    retired: Mutex<Vec<Retired>>,
    /// Replicas whose holder is listed at the address given instead (`None`: no address).
    muted: Mutex<HashMap<ReplicaId, Option<SocketAddr>>>,
    asked: Mutex<Vec<Asked>>,
    /// Each run's deployment and when it was asked.
    runs: Mutex<Vec<(String, Instant)>>,
}

impl<E: Engine> Watched<E> {
    pub fn new(inner: Arc<E>, stack: &str) -> Self {
        Watched {
            inner,
            stack: stack.to_owned(),
            retired: Mutex::default(),
            muted: Mutex::default(),
            asked: Mutex::default(),
            runs: Mutex::default(),
        }
    }

    /// From now on the replica's holder is listed at `holder` (one that refuses, or none).
    pub fn mute_holder(&self, id: &ReplicaId, holder: Option<SocketAddr>) {
        (self.muted.lock().unwrap_or_else(PoisonError::into_inner)).insert(id.clone(), holder);
    }

    /// Every run and stop asked so far, in order.
    pub fn asked(&self) -> Vec<Asked> {
        (self.asked.lock().unwrap_or_else(PoisonError::into_inner)).clone()
    }

    /// When each run of the deployment was asked, in order.
    pub fn runs_of(&self, deployment_id: &str) -> Vec<Instant> {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        (runs.iter())
            .filter(|(id, _)| id == deployment_id)
            .map(|(_, at)| *at)
            .collect()
    }

    fn ask(&self, asked: Asked) {
        (self.asked.lock().unwrap_or_else(PoisonError::into_inner)).push(asked);
    }

    /// Every `retire` of the deployment asked so far.
    pub fn retired(&self, deployment_id: &str) -> Vec<Retired> {
        let retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
        (retired.iter())
            .filter(|retired| retired.deployment_id == deployment_id)
            .cloned()
            .collect()
    }
}

impl<E: Engine> Engine for Watched<E> {
    fn run(&self, spec: &ReplicaSpec) -> impl Future<Output = Result<ReplicaId, RunError>> + Send {
        self.ask(Asked::Run(spec.labels.deployment_id.clone()));
        let run = (spec.labels.deployment_id.clone(), Instant::now());
        (self.runs.lock().unwrap_or_else(PoisonError::into_inner)).push(run);
        self.inner.run(spec)
    }

    fn stop(
        &self,
        replica: &ReplicaId,
        grace: Duration,
    ) -> impl Future<Output = Result<(), EngineError>> + Send {
        self.ask(Asked::Stop(replica.clone()));
        self.inner.stop(replica, grace)
    }

    async fn list(&self, stack: &str) -> Result<Vec<ReplicaView>, EngineError> {
        let mut views = self.inner.list(stack).await?;
        let muted = (self.muted.lock().unwrap_or_else(PoisonError::into_inner)).clone();
        for view in &mut views {
            if let Some(holder) = muted.get(&view.id) {
                // The holder's own token, at the address given: only the address is wrong.
                view.holder =
                    (holder.zip(view.holder.take())).map(|(address, endpoint)| Endpoint {
                        address,
                        ..endpoint
                    });
            }
        }
        Ok(views)
    }

    fn logs(
        &self,
        replica: &ReplicaId,
        since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        self.inner.logs(replica, since)
    }

    async fn retire(&self, deployment_id: &str) -> Result<(), EngineError> {
        let listed = match self.inner.list(&self.stack).await {
            Ok(views) => (views.iter())
                .filter(|view| view.labels.deployment_id == deployment_id)
                .count(),
            // Not known: counted as listed, so that the scenario sees it.
            Err(_) => usize::MAX,
        };
        let answered = self.inner.retire(deployment_id).await;
        let retired = Retired {
            deployment_id: deployment_id.to_owned(),
            listed,
            answered: answered.as_ref().map(|_| ()).map_err(ToString::to_string),
        };
        (self.retired.lock().unwrap_or_else(PoisonError::into_inner)).push(retired);
        answered
    }
}
