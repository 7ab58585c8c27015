//! The container engine port: it runs replicas and says what became of them; it decides nothing.
//! The Docker Engine implements it here (`docker`), ECS on Fargate with issue 33, and
//! `testing::fake` for the reconciler's scenarios. Readiness and sessions are not the engine's:
//! they are the container contract's (`/readyz`, `/bot`), spoken to the address it gives.

use std::future::Future;
use std::time::Duration;

use futures_util::stream::BoxStream;
use time::OffsetDateTime;

use crate::replica::{ReplicaId, ReplicaSpec, ReplicaView};

/// The grace between SIGTERM and SIGKILL when a replica is stopped (contract section 12).
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// How long past a stop's grace an engine may take to answer it (the kill and the exit's record
/// on Docker, STOPPED on ECS): a client's own timeout must not cut the answer short.
pub const STOP_ANSWER_MARGIN: Duration = Duration::from_secs(60);

/// The engine could not be asked, or refused what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the container engine is unavailable: {0}")]
    Unavailable(String),
    #[error("no such replica: {0}")]
    NoSuchReplica(ReplicaId),
    #[error("the container engine refused: {0}")]
    Refused(String),
}

/// Why a replica could not be started.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The image could not be pulled: the registry's message, for the customer.
    #[error("pulling the image failed: {message}")]
    PullFailed { message: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Which of a container's outputs a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Stdout,
    Stderr,
}

impl Output {
    pub fn as_str(self) -> &'static str {
        match self {
            Output::Stdout => "stdout",
            Output::Stderr => "stderr",
        }
    }
}

/// One line a replica wrote, with the engine's timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub at: OffsetDateTime,
    pub output: Output,
    /// A part of a longer line the engine split (Docker splits lines over 16 KiB).
    pub partial: bool,
    pub text: String,
}

/// A container engine. Every method is safe to call again (a retry after a timeout).
pub trait Engine: Send + Sync + 'static {
    /// Pulls the image when needed (with the spec's credentials), then creates and starts the
    /// replica with its limits, environment and labels, in its namespace's network.
    fn run(&self, spec: &ReplicaSpec) -> impl Future<Output = Result<ReplicaId, RunError>> + Send;

    /// SIGTERM, SIGKILL after `grace`, then removes the replica; a replica already gone is not
    /// an error.
    fn stop(
        &self,
        replica: &ReplicaId,
        grace: Duration,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// The replicas of `stack`, exited ones too until they are stopped (removed).
    fn list(
        &self,
        stack: &str,
    ) -> impl Future<Output = Result<Vec<ReplicaView>, EngineError>> + Send;

    /// The replica's stdout and stderr lines from `since` (all when `None`), following until it
    /// is removed.
    fn logs(
        &self,
        replica: &ReplicaId,
        since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>>;

    /// Releases what the engine keeps for a deployment outside its replicas (on ECS its secret
    /// values and task definition revisions). The reconciler asks once none of the deployment's
    /// replicas is listed and it is gone for good (superseded and drained, or its agent
    /// deleted); a deployment already retired, or never run, is not an error. A later `run` of
    /// the deployment writes again what it needs.
    ///
    /// By default nothing: Docker keeps a replica's values in its container only, so they go
    /// with `stop`'s removal; an engine wrapping another must forward this.
    fn retire(&self, deployment_id: &str) -> impl Future<Output = Result<(), EngineError>> + Send {
        let _ = deployment_id;
        std::future::ready(Ok(()))
    }
}
