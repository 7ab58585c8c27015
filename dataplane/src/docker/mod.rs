//! The Docker Engine as the [`Engine`] (locally; Debian's `docker.io`, API 1.41 and later):
//! a replica is two containers, its holder's on its namespace's bridge network and the
//! deployment's image in the holder's network namespace (docs/design/data-plane.md). A
//! replica's id is its agent's container's. The concerns, each its own file: the containers
//! asked for ([`create`]), the image pulled ([`image`]), the networks ([`network`]), the listing
//! and exit reasons ([`list`]), the lines ([`logs`]), and the daemon's failures ([`error`]).
//! A replica runs the host's architecture whatever its spec's `node_type` says (contract
//! section 12: locally the host's); an image without that architecture fails its pull or start.

mod create;
mod error;
mod image;
mod list;
mod logs;
mod network;
mod readers;

use std::time::Duration;

use bollard::Docker;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    CreateContainerOptions, RemoveContainerOptions, StopContainerOptions,
};
use futures_util::stream::BoxStream;
use time::OffsetDateTime;

pub use create::container_name;
pub use network::{ENABLE_ICC, network_name};

use crate::engine::{Engine, EngineError, LogLine, RunError};
use crate::replica::{ReplicaId, ReplicaSpec, ReplicaView, label};
use error::Failure;

/// How long past a stop's grace the daemon may take to answer (the kill, the exit's record).
const STOP_ANSWER_MARGIN: Duration = Duration::from_secs(60);

/// The holder's stop grace: it exits at once on SIGTERM.
const HOLDER_GRACE: Duration = Duration::from_secs(1);

/// The Docker Engine on this host's socket.
pub struct DockerEngine {
    docker: Docker,
    networks: network::Networks,
    /// The holder's image (`scripts/local.sh holder-image`), already in the engine.
    holder_image: String,
    readers: readers::Readers,
}

impl DockerEngine {
    /// Connects to the local daemon (`DOCKER_HOST` if it names a unix socket, else
    /// `/var/run/docker.sock`) and agrees on an API version it speaks; every replica's holder
    /// runs `holder_image`.
    pub async fn connect(holder_image: impl Into<String>) -> Result<Self, EngineError> {
        let docker = Docker::connect_with_unix_defaults()
            .map_err(|err| error::failure(err).into_engine_error())?
            .negotiate_version()
            .await
            .map_err(|err| EngineError::Unavailable(err.to_string()))?;
        tracing::info!(api_version = %docker.client_version(), "connected to the Docker Engine");
        Ok(DockerEngine {
            docker,
            networks: network::Networks::default(),
            holder_image: holder_image.into(),
            readers: readers::Readers::default(),
        })
    }

    /// Removes the namespaces' networks of `stack` that no container uses any more (a stack's
    /// shutdown, a test's end).
    pub async fn prune_networks(&self, stack: &str) -> Result<(), EngineError> {
        self.networks.prune(&self.docker, stack).await
    }

    /// Creates and starts the holder's container, then the agent's in its network namespace;
    /// what does not start is removed, the holder with it.
    async fn create_and_start(
        &self,
        spec: &ReplicaSpec,
        network: &str,
    ) -> Result<ReplicaId, EngineError> {
        let name = create::container_name(spec, &create::random_suffix());
        let holder_body = create::holder_body(spec, network, &self.holder_image);
        let holder = self
            .create_started(&create::holder_name(&name), holder_body)
            .await?;
        let agent_body = create::container_body(spec, &holder.0);
        let replica = match self.create_started(&name, agent_body).await {
            Ok(replica) => replica,
            Err(err) => {
                if let Err(removing) = self.remove(&holder).await {
                    tracing::warn!(holder = %holder, error = %removing, "the holder of a replica that did not start is left");
                }
                return Err(err);
            }
        };
        tracing::info!(
            replica = %replica,
            %holder,
            container = %name,
            deployment_id = %spec.labels.deployment_id,
            image = %spec.image,
            "replica started"
        );
        Ok(replica)
    }

    /// One container created and started; one that does not start is removed.
    async fn create_started(
        &self,
        name: &str,
        body: ContainerCreateBody,
    ) -> Result<ReplicaId, EngineError> {
        let options = CreateContainerOptions {
            name: Some(name.to_owned()),
            ..Default::default()
        };
        let created = self
            .docker
            .create_container(Some(options), body)
            .await
            .map_err(|err| error::failure(err).into_engine_error())?;
        let id = ReplicaId(created.id);
        if let Err(err) = self.docker.start_container(&id.0, None).await {
            let err = error::failure(err).into_engine_error();
            tracing::warn!(container = %name, error = %err, "the container did not start");
            if let Err(removing) = self.remove(&id).await {
                tracing::warn!(container = %name, error = %removing, "the container that did not start is left");
            }
            return Err(err);
        }
        Ok(id)
    }

    /// The holder's container of the replica's agent; `None` when the replica is gone or is a
    /// holder alone (its agent never started, or went).
    async fn holder_of(&self, replica: &ReplicaId) -> Result<Option<ReplicaId>, EngineError> {
        match self.docker.inspect_container(&replica.0, None).await {
            Ok(inspected) => Ok(inspected
                .config
                .and_then(|config| config.labels)
                .and_then(|labels| labels.get(label::HOLDER_ID).cloned())
                .map(ReplicaId)),
            Err(err) => match error::failure(err) {
                Failure::NotFound(_) => Ok(None),
                Failure::Other(err) => Err(err),
            },
        }
    }

    /// SIGTERM, SIGKILL after `grace`, then removed once its open readers have read its last
    /// lines; one already gone is fine.
    async fn stop_container(&self, id: &ReplicaId, grace: Duration) -> Result<(), EngineError> {
        let options = StopContainerOptions {
            t: Some(i32::try_from(grace.as_secs()).unwrap_or(i32::MAX)),
            ..Default::default()
        };
        // The daemon answers once the container is gone, up to `grace` later: the client's
        // own timeout (2 minutes) must not cut that short.
        let docker = self.docker.clone().with_timeout(grace + STOP_ANSWER_MARGIN);
        match docker.stop_container(&id.0, Some(options)).await {
            Ok(()) => {}
            Err(err) => match error::failure(err) {
                Failure::NotFound(_) => return Ok(()),
                // Not running any more (304 is success to bollard; a race may still refuse):
                // removed below either way.
                Failure::Other(EngineError::Refused(message)) => {
                    tracing::debug!(container = %id, %message, "stop refused; removing");
                }
                Failure::Other(err) => return Err(err),
            },
        }
        if !self.readers.drained(&id.0, readers::DRAIN_BOUND).await {
            tracing::warn!(container = %id, "its lines were not all read before its removal");
        }
        self.remove(id).await
    }

    /// Removes a container, whatever its state; one already gone is fine.
    async fn remove(&self, replica: &ReplicaId) -> Result<(), EngineError> {
        let options = RemoveContainerOptions {
            force: true,
            ..Default::default()
        };
        match self
            .docker
            .remove_container(&replica.0, Some(options))
            .await
        {
            Ok(()) => Ok(()),
            Err(err) => match error::failure(err) {
                Failure::NotFound(_) => Ok(()),
                Failure::Other(err) => Err(err),
            },
        }
    }
}

impl Engine for DockerEngine {
    async fn run(&self, spec: &ReplicaSpec) -> Result<ReplicaId, RunError> {
        image::ensure(&self.docker, &spec.image, spec.pull.as_ref()).await?;
        let network = self
            .networks
            .ensure(&self.docker, &spec.labels.stack, &spec.labels.namespace)
            .await?;
        Ok(self.create_and_start(spec, &network).await?)
    }

    /// The agent first, with the grace; then its holder (which exits at once), even when the
    /// agent's stop failed (another stop of it may be under way): a holder is never left alone.
    async fn stop(&self, replica: &ReplicaId, grace: Duration) -> Result<(), EngineError> {
        let holder = self.holder_of(replica).await?;
        let agent = self.stop_container(replica, grace).await;
        let holder_stopped = match &holder {
            Some(holder) => self.stop_container(holder, HOLDER_GRACE).await,
            None => Ok(()),
        };
        agent.and(holder_stopped)?;
        tracing::info!(replica = %replica, holder = ?holder, "replica stopped and removed");
        Ok(())
    }

    async fn list(&self, stack: &str) -> Result<Vec<ReplicaView>, EngineError> {
        list::replicas(&self.docker, stack).await
    }

    fn logs(
        &self,
        replica: &ReplicaId,
        since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        let reading = self.readers.open(&replica.0);
        logs::follow(&self.docker, replica, since, reading)
    }
}
