//! The Docker Engine as the [`Engine`] (locally; Debian's `docker.io`, API 1.41 and later):
//! a replica is one container of the deployment's image on its namespace's bridge network
//! (docs/design/data-plane.md, without the holder for now). The concerns, each its own file:
//! the container asked for ([`create`]), the image pulled ([`image`]), the networks
//! ([`network`]), the listing and exit reasons ([`list`]), the lines ([`logs`]), and the
//! daemon's failures ([`error`]).

mod create;
mod error;
mod image;
mod list;
mod logs;
mod network;

use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::{
    CreateContainerOptions, RemoveContainerOptions, StopContainerOptions,
};
use futures_util::stream::BoxStream;
use time::OffsetDateTime;

pub use create::container_name;
pub use network::{ENABLE_ICC, network_name};

use crate::engine::{Engine, EngineError, LogLine, RunError};
use crate::replica::{ReplicaId, ReplicaSpec, ReplicaView};
use error::Failure;

/// How long past a stop's grace the daemon may take to answer (the kill, the exit's record).
const STOP_ANSWER_MARGIN: Duration = Duration::from_secs(60);

/// The Docker Engine on this host's socket.
pub struct DockerEngine {
    docker: Docker,
    networks: network::Networks,
}

impl DockerEngine {
    /// Connects to the local daemon (`DOCKER_HOST` if it names a unix socket, else
    /// `/var/run/docker.sock`) and agrees on an API version it speaks.
    pub async fn connect() -> Result<Self, EngineError> {
        let docker = Docker::connect_with_unix_defaults()
            .map_err(|err| error::failure(err).into_engine_error())?
            .negotiate_version()
            .await
            .map_err(|err| EngineError::Unavailable(err.to_string()))?;
        tracing::info!(api_version = %docker.client_version(), "connected to the Docker Engine");
        Ok(DockerEngine {
            docker,
            networks: network::Networks::default(),
        })
    }

    /// Removes the namespaces' networks of `stack` that no container uses any more (a stack's
    /// shutdown, a test's end).
    pub async fn prune_networks(&self, stack: &str) -> Result<(), EngineError> {
        self.networks.prune(&self.docker, stack).await
    }

    /// Creates and starts the container; one that does not start is removed.
    async fn create_and_start(
        &self,
        spec: &ReplicaSpec,
        network: &str,
    ) -> Result<ReplicaId, EngineError> {
        let name = create::container_name(spec, &create::random_suffix());
        let options = CreateContainerOptions {
            name: Some(name.clone()),
            ..Default::default()
        };
        let created = self
            .docker
            .create_container(Some(options), create::container_body(spec, network))
            .await
            .map_err(|err| error::failure(err).into_engine_error())?;
        let replica = ReplicaId(created.id);
        if let Err(err) = self.docker.start_container(&replica.0, None).await {
            let err = error::failure(err).into_engine_error();
            tracing::warn!(replica = %replica, container = %name, error = %err, "the container did not start");
            if let Err(removing) = self.remove(&replica).await {
                tracing::warn!(replica = %replica, error = %removing, "the container that did not start is left");
            }
            return Err(err);
        }
        tracing::info!(
            replica = %replica,
            container = %name,
            deployment_id = %spec.labels.deployment_id,
            image = %spec.image,
            "replica started"
        );
        Ok(replica)
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

    async fn stop(&self, replica: &ReplicaId, grace: Duration) -> Result<(), EngineError> {
        let options = StopContainerOptions {
            t: Some(i32::try_from(grace.as_secs()).unwrap_or(i32::MAX)),
            ..Default::default()
        };
        // The daemon answers once the replica is gone, up to `grace` later: the client's
        // own timeout (2 minutes) must not cut that short.
        let docker = self.docker.clone().with_timeout(grace + STOP_ANSWER_MARGIN);
        match docker.stop_container(&replica.0, Some(options)).await {
            Ok(()) => {}
            Err(err) => match error::failure(err) {
                Failure::NotFound(_) => return Ok(()),
                // Not running any more (304 is success to bollard; a race may still refuse):
                // removed below either way.
                Failure::Other(EngineError::Refused(message)) => {
                    tracing::debug!(replica = %replica, %message, "stop refused; removing");
                }
                Failure::Other(err) => return Err(err),
            },
        }
        self.remove(replica).await?;
        tracing::info!(replica = %replica, "replica stopped and removed");
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
        logs::follow(&self.docker, replica, since)
    }
}
