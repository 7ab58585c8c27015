//! The Docker Engine as the [`Engine`] (locally; Debian's `docker.io`, API 1.41 and later):
//! a replica is two containers, its holder's on its namespace's bridge network and the
//! deployment's image in the holder's network namespace (docs/data-plane.md, "A replica"). A
//! replica's id is its agent's container's. The concerns, each its own file: the containers
//! asked for ([`create`]), the image pulled ([`image`]), the networks ([`network`]), the listing
//! and exit reasons ([`list`]), the lines ([`forward`]: the Engine sends them to the data
//! plane's socket), and the daemon's failures ([`error`]).
//! A replica runs the host's architecture whatever its spec's `node_type` says (contract
//! section 12: locally the host's); an image without that architecture fails its pull or start.

mod create;
mod error;
mod forward;
mod image;
mod list;
mod network;

use std::path::PathBuf;
use std::time::Duration;

use bollard::Docker;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    CreateContainerOptions, RemoveContainerOptions, StopContainerOptions,
};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use time::OffsetDateTime;

pub use create::container_name;
pub use network::{BRIDGE_NAME, BRIDGE_PREFIX, ENABLE_ICC, network_name};

use crate::engine::{Engine, EngineError, LogLine, RunError, STOP_ANSWER_MARGIN};
use crate::replica::{ReplicaId, ReplicaSpec, ReplicaView, label};
use error::Failure;

/// The holder's stop grace: it exits at once on SIGTERM.
const HOLDER_GRACE: Duration = Duration::from_secs(1);

/// How long the lines of a container found gone are waited for (its logger's last ones).
const GONE_LINES_WAIT: Duration = Duration::from_secs(2);

/// The Docker Engine on this host's socket.
pub struct DockerEngine {
    docker: Docker,
    networks: network::Networks,
    /// The holder's image (`scripts/local.sh holder-image`), already in the engine.
    holder_image: String,
    /// Where the agents' containers send their lines.
    forward: forward::Forward,
}

/// The socket a stack's data plane receives its replicas' lines on: the same across its
/// restarts, so that the Engine's drivers reconnect to the next one.
pub fn log_socket(stack: &str) -> PathBuf {
    std::env::temp_dir().join(format!("agent-hosting-{stack}.sock"))
}

impl DockerEngine {
    /// Connects to the local daemon (`DOCKER_HOST` if it names a unix socket, else
    /// `/var/run/docker.sock`) and agrees on an API version it speaks; every replica's holder
    /// runs `holder_image`, and every agent's lines come to `log_socket` ([`log_socket`]).
    pub async fn connect(
        holder_image: impl Into<String>,
        log_socket: impl Into<PathBuf>,
    ) -> Result<Self, EngineError> {
        let docker = Docker::connect_with_unix_defaults()
            .map_err(|err| error::failure(err).into_engine_error())?
            .negotiate_version()
            .await
            .map_err(|err| EngineError::Unavailable(err.to_string()))?;
        tracing::info!(api_version = %docker.client_version(), "connected to the Docker Engine");
        let forward = forward::Forward::listen(log_socket)
            .map_err(|err| EngineError::Unavailable(format!("the lines' socket: {err}")))?;
        Ok(DockerEngine {
            docker,
            networks: network::Networks::default(),
            holder_image: holder_image.into(),
            forward,
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
        let agent_body = create::container_body(spec, &holder.0, self.forward.socket());
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

    /// SIGTERM, SIGKILL after `grace`, then removed (its lines are sent as they are written,
    /// so none goes with it); one already gone is fine.
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
        self.remove(id).await?;
        self.forward.lines().close(&id.0);
        Ok(())
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

    /// Its lines from its start, as the Engine's driver sent them, until its container stops.
    /// Each line is given once: a second follow of a replica is refused, and `since` has
    /// nothing to skip.
    fn logs(
        &self,
        replica: &ReplicaId,
        _since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        let docker = self.docker.clone();
        let id = replica.clone();
        let lines = self.forward.lines();
        // Taken now: what the container writes from here on is this stream's, even when it is
        // first read after the container is gone.
        let taken = lines.take(&id.0);
        stream::once(async move {
            let Some(mut receiver) = taken else {
                let followed = format!("the lines of {id} are followed already");
                return error_stream(EngineError::Refused(followed));
            };
            match docker.inspect_container(&id.0, None).await {
                Ok(_) => receiver_stream(receiver),
                Err(err) => {
                    // Gone: its lines, if it wrote any, still end the stream; else no such
                    // replica.
                    lines.close(&id.0);
                    match tokio::time::timeout(GONE_LINES_WAIT, receiver.recv()).await {
                        Ok(Some(first)) => stream::once(async { Ok(first) })
                            .chain(receiver_stream(receiver))
                            .boxed(),
                        _ => error_stream(error::failure(err).about(&id)),
                    }
                }
            }
        })
        .flatten()
        .boxed()
    }
}

/// A receiver's lines as a stream, ending when its senders are gone.
fn receiver_stream(
    mut lines: tokio::sync::mpsc::Receiver<LogLine>,
) -> BoxStream<'static, Result<LogLine, EngineError>> {
    stream::poll_fn(move |context| lines.poll_recv(context).map(|line| line.map(Ok))).boxed()
}

fn error_stream(error: EngineError) -> BoxStream<'static, Result<LogLine, EngineError>> {
    stream::once(async move { Err(error) }).boxed()
}
