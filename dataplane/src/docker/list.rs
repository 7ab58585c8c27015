//! A stack's replicas as the Docker Engine lists them: labels read back, the address on the
//! namespace's network, and what became of an exited one (an OOM kill, else its exit code).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use bollard::Docker;
use bollard::models::{ContainerSummary, ContainerSummaryStateEnum};
use bollard::query_parameters::ListContainersOptions;

use super::error;
use super::network::network_name;
use crate::engine::EngineError;
use crate::replica::{
    AGENT_PORT, ExitReason, ReplicaId, ReplicaLabels, ReplicaStatus, ReplicaView, label,
};

/// The replicas of `stack`, exited ones too. One removed while it is being read is left out.
pub async fn replicas(docker: &Docker, stack: &str) -> Result<Vec<ReplicaView>, EngineError> {
    let filters = HashMap::from([(
        "label".to_owned(),
        vec![format!("{}={stack}", label::STACK)],
    )]);
    let containers = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(filters),
            ..Default::default()
        }))
        .await
        .map_err(|err| error::failure(err).into_engine_error())?;
    let mut views = Vec::with_capacity(containers.len());
    for container in containers {
        let Some((id, labels)) = identity(&container) else {
            continue;
        };
        let status = match running(&container) {
            true => ReplicaStatus::Running,
            false => match exit_reason(docker, &id).await {
                Ok(reason) => ReplicaStatus::Exited(reason),
                Err(EngineError::NoSuchReplica(_)) => continue,
                Err(err) => return Err(err),
            },
        };
        let address = address(&container, &labels);
        views.push(ReplicaView {
            id,
            labels,
            address,
            status,
        });
    }
    Ok(views)
}

/// Its id and labels; `None` for a container without all of them (not a replica of ours).
fn identity(container: &ContainerSummary) -> Option<(ReplicaId, ReplicaLabels)> {
    let id = ReplicaId(container.id.clone()?);
    let pairs = container.labels.as_ref()?;
    let labels = ReplicaLabels::from_pairs(|name| pairs.get(name).map(String::as_str))?;
    Some((id, labels))
}

/// Created, running, paused, restarting or being removed: not (yet) an exit.
fn running(container: &ContainerSummary) -> bool {
    !matches!(
        container.state,
        Some(ContainerSummaryStateEnum::EXITED | ContainerSummaryStateEnum::DEAD)
    )
}

/// The address of its container contract on its namespace's network (any network it is on, if
/// not that one).
fn address(container: &ContainerSummary, labels: &ReplicaLabels) -> Option<SocketAddr> {
    let networks = container.network_settings.as_ref()?.networks.as_ref()?;
    let ours = network_name(&labels.stack, &labels.namespace);
    let ip =
        |name: &str| -> Option<IpAddr> { networks.get(name)?.ip_address.as_deref()?.parse().ok() };
    ip(&ours)
        .or_else(|| networks.keys().find_map(|name| ip(name)))
        .map(|ip| SocketAddr::new(ip, AGENT_PORT))
}

/// Why it exited: the list does not say whether the kernel killed it for memory; inspect does.
async fn exit_reason(docker: &Docker, id: &ReplicaId) -> Result<ExitReason, EngineError> {
    let inspected = docker
        .inspect_container(&id.0, None)
        .await
        .map_err(|err| error::failure(err).about(id))?;
    let state = inspected.state.unwrap_or_default();
    if state.oom_killed == Some(true) {
        return Ok(ExitReason::OomKilled);
    }
    Ok(ExitReason::Exited {
        code: state.exit_code.unwrap_or(-1),
    })
}
