//! A stack's replicas as the Docker Engine lists them: each agent's container with its holder's
//! (labels read back, the holder's address on the namespace's network, which the agent shares),
//! and what became of an exited one (an OOM kill, else its exit code). A holder whose agent is
//! gone is listed as a replica of its own, exited and with no holder address: there is nothing
//! to adopt in it (its agent was stopped, or never started), only a container to stop.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};

use agent_holder::{Endpoint, HOLDER_PORT, Token};
use bollard::Docker;
use bollard::models::{ContainerSummary, ContainerSummaryStateEnum};
use bollard::query_parameters::ListContainersOptions;

use super::error;
use super::network::network_name;
use crate::engine::EngineError;
use crate::replica::{
    AGENT_PORT, ExitReason, ReplicaId, ReplicaLabels, ReplicaStatus, ReplicaView, label,
};

/// A holder's container as listed: its address on the namespace's network while it runs, and
/// its token.
struct Holder {
    labels: ReplicaLabels,
    ip: Option<IpAddr>,
    token: Option<Token>,
}

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
    let holders: HashMap<String, Holder> = containers
        .iter()
        .filter(|container| part(container) == Some(label::part::HOLDER))
        .filter_map(|container| {
            let (id, labels) = identity(container)?;
            let ip = running(container)
                .then(|| address(container, &labels))
                .flatten();
            let token = (container.labels.as_ref())
                .and_then(|labels| labels.get(label::HOLDER_TOKEN))
                .map(Token::new);
            Some((id.0, Holder { labels, ip, token }))
        })
        .collect();
    let mut views = Vec::with_capacity(containers.len());
    let mut held = HashSet::new();
    for container in &containers {
        if part(container) == Some(label::part::HOLDER) {
            continue;
        }
        let Some((id, labels)) = identity(container) else {
            continue;
        };
        let holder_id = container
            .labels
            .as_ref()
            .and_then(|labels| labels.get(label::HOLDER_ID));
        let holder = holder_id.and_then(|holder_id| holders.get(holder_id));
        held.extend(holder_id.cloned());
        let ip = holder.and_then(|holder| holder.ip);
        // A holder without a token (started before holders had one) cannot be asked anything.
        let endpoint = holder.and_then(|holder| {
            Some(Endpoint {
                address: SocketAddr::new(holder.ip?, HOLDER_PORT),
                token: holder.token.clone()?,
            })
        });
        let status = match (running(container), ip) {
            (true, Some(_)) => ReplicaStatus::Running,
            // Its holder is gone: the agent is cut off, no session can reach or leave it.
            (true, None) => ReplicaStatus::Exited(ExitReason::Lost),
            (false, _) => match exit_reason(docker, &id).await {
                Ok(reason) => ReplicaStatus::Exited(reason),
                Err(EngineError::NoSuchReplica(_)) => continue,
                Err(err) => return Err(err),
            },
        };
        views.push(ReplicaView {
            id,
            labels,
            address: ip.map(|ip| SocketAddr::new(ip, AGENT_PORT)),
            holder: endpoint,
            status,
        });
    }
    views.extend(
        holders
            .into_iter()
            .filter(|(id, _)| !held.contains(id))
            .map(|(id, holder)| ReplicaView {
                id: ReplicaId(id),
                labels: holder.labels,
                address: None,
                holder: None,
                status: ReplicaStatus::Exited(ExitReason::Lost),
            }),
    );
    Ok(views)
}

/// Which part of a replica the container is (`None`: not one of ours).
fn part(container: &ContainerSummary) -> Option<&str> {
    container
        .labels
        .as_ref()?
        .get(label::PART)
        .map(String::as_str)
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

/// The holder's address on its namespace's network (any network it is on, if not that one).
fn address(container: &ContainerSummary, labels: &ReplicaLabels) -> Option<IpAddr> {
    let networks = container.network_settings.as_ref()?.networks.as_ref()?;
    let ours = network_name(&labels.stack, &labels.namespace);
    let ip =
        |name: &str| -> Option<IpAddr> { networks.get(name)?.ip_address.as_deref()?.parse().ok() };
    ip(&ours).or_else(|| networks.keys().find_map(|name| ip(name)))
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
