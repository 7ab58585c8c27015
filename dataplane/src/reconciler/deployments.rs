//! What should run (contract section 12): each agent's deployments as the control plane asked
//! for them, which one is active, which are superseded, and which are gone with their agent.
//! A deployment is known once (`Deployment Requested` is delivered at least once).

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use shared::agent::DeploymentError;
use shared::manifest::Manifest;

use super::failures::Health;
use super::plan::{Bounds, Role};
use super::secrets::Received;
use crate::events::AgentRef;
use crate::replica::{HolderSettings, Limits, NodeType, ReplicaLabels, ReplicaSpec};
use agent_holder::Checks;

/// A deployment the data plane runs.
#[derive(Debug)]
pub struct Deployment {
    pub agent: AgentRef,
    pub service_id: String,
    pub deployment_id: String,
    pub min_replicas: u32,
    pub max_replicas: u32,
    /// What its replicas are started with; the error it was reported `failed` with when it
    /// cannot be run at all (a set that does not open, resources of no profile).
    pub runnable: Result<Runnable, DeploymentError>,
    pub health: Health,
    /// Runs asked of the engine that have not answered yet.
    pub launching: u32,
    /// Its order among the agent's deployments: the newest is active.
    order: u64,
}

/// What a runnable deployment's replicas are started with.
#[derive(Debug, Clone)]
pub struct Runnable {
    pub image: String,
    pub limits: Limits,
    pub node_type: NodeType,
    pub received: Received,
}

impl Runnable {
    pub fn new(manifest: &Manifest, received: Received) -> Result<Self, DeploymentError> {
        let resources = &manifest.spec.resources;
        let limits = Limits::of_resources(&resources.cpu, &resources.memory).ok_or_else(|| {
            DeploymentError {
                code: "UNSUPPORTED_RESOURCES".to_owned(),
                message: format!(
                    "resources cpu {} and memory {} are not a profile's",
                    resources.cpu, resources.memory
                ),
            }
        })?;
        let node_type = &manifest.spec.daily_node_type;
        let node_type = NodeType::of_name(node_type).ok_or_else(|| DeploymentError {
            code: "UNSUPPORTED_NODE_TYPE".to_owned(),
            message: format!("nodeType {node_type} is not one of the catalog's"),
        })?;
        Ok(Runnable {
            image: manifest.spec.image.clone(),
            limits,
            node_type,
            received,
        })
    }
}

impl Deployment {
    pub fn labels(&self, stack: &str) -> ReplicaLabels {
        ReplicaLabels {
            stack: stack.to_owned(),
            namespace: self.agent.namespace.clone(),
            agent: self.agent.name.clone(),
            service_id: self.service_id.clone(),
            deployment_id: self.deployment_id.clone(),
        }
    }

    /// A new replica's spec, its holder's checks `checks` (and a token of its own); `None`
    /// when the deployment cannot be run.
    pub fn spec(&self, stack: &str, checks: Checks) -> Option<ReplicaSpec> {
        let runnable = self.runnable.as_ref().ok()?;
        Some(ReplicaSpec {
            labels: self.labels(stack),
            image: runnable.image.clone(),
            pull: runnable.received.pull.clone(),
            limits: runnable.limits,
            node_type: runnable.node_type,
            env: runnable.received.env.clone(),
            holder: HolderSettings::new(checks),
        })
    }

    pub fn may_start(&self, now: Instant) -> bool {
        self.runnable.is_ok() && self.health.may_start(now)
    }

    pub fn memory_mib(&self) -> u32 {
        self.runnable
            .as_ref()
            .map_or(0, |runnable| runnable.limits.memory_mib)
    }
}

/// Every deployment the data plane knows, by id.
#[derive(Debug, Default)]
pub struct Deployments {
    by_id: HashMap<String, Deployment>,
    /// Deployments of deleted agents: a late delivery of their request starts nothing.
    retired: HashSet<String>,
    next_order: u64,
}

/// What a `Deployment Requested` asks, before its sets are opened.
pub struct Requested<'a> {
    pub agent: &'a AgentRef,
    pub service_id: &'a str,
    pub deployment_id: &'a str,
    pub manifest: &'a Manifest,
}

impl Deployments {
    /// Is this request news (not a deployment known or retired)?
    pub fn is_new(&self, deployment_id: &str) -> bool {
        !self.by_id.contains_key(deployment_id) && !self.retired.contains(deployment_id)
    }

    /// Adds a requested deployment; it becomes its agent's active one.
    pub fn insert(
        &mut self,
        requested: Requested<'_>,
        runnable: Result<Runnable, DeploymentError>,
    ) {
        if !self.is_new(requested.deployment_id) {
            return;
        }
        self.next_order += 1;
        let scaling = requested.manifest.spec.auto_scaling;
        self.by_id.insert(
            requested.deployment_id.to_owned(),
            Deployment {
                agent: requested.agent.clone(),
                service_id: requested.service_id.to_owned(),
                deployment_id: requested.deployment_id.to_owned(),
                min_replicas: scaling.min_replicas,
                max_replicas: scaling.max_replicas,
                runnable,
                health: Health::default(),
                launching: 0,
                order: self.next_order,
            },
        );
    }

    pub fn get(&self, deployment_id: &str) -> Option<&Deployment> {
        self.by_id.get(deployment_id)
    }

    pub fn get_mut(&mut self, deployment_id: &str) -> Option<&mut Deployment> {
        self.by_id.get_mut(deployment_id)
    }

    pub fn ids(&self) -> Vec<String> {
        self.by_id.keys().cloned().collect()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut Deployment)> {
        self.by_id.iter_mut()
    }

    /// Forgets every deployment of the agent, for good; their ids.
    pub fn retire_agent(&mut self, agent: &AgentRef) -> Vec<String> {
        let ids: Vec<String> = self
            .by_id
            .values()
            .filter(|deployment| deployment.agent == *agent)
            .map(|deployment| deployment.deployment_id.clone())
            .collect();
        for id in &ids {
            self.by_id.remove(id);
            self.retired.insert(id.clone());
        }
        ids
    }

    /// Each agent's deployments with what each is to keep, the active one first and then the
    /// newest to the oldest: the order in which [`super::plan::decide_agent`] shares the
    /// agent's `maxReplicas`. The agent's cap is its active deployment's `maxReplicas`.
    pub fn agents(&self, now: Instant) -> Vec<(u32, Vec<(String, Bounds)>)> {
        let mut by_agent: HashMap<&AgentRef, Vec<&Deployment>> = HashMap::new();
        for deployment in self.by_id.values() {
            by_agent
                .entry(&deployment.agent)
                .or_default()
                .push(deployment);
        }
        by_agent
            .into_values()
            .map(|mut deployments| {
                deployments.sort_by_key(|deployment| std::cmp::Reverse(deployment.order));
                let cap = deployments.first().map_or(0, |active| active.max_replicas);
                let bounds = deployments
                    .into_iter()
                    .map(|deployment| {
                        let id = deployment.deployment_id.clone();
                        let bounds = Bounds {
                            min_replicas: deployment.min_replicas,
                            max_replicas: deployment.max_replicas,
                            role: self.role(&id),
                            may_start: deployment.may_start(now),
                            proven: deployment.health.has_been_ready(),
                        };
                        (id, bounds)
                    })
                    .collect();
                (cap, bounds)
            })
            .collect()
    }

    /// The deployments superseded by one that has been ready ([`Role::Draining`]): their idle
    /// replicas stop and none is kept, so each is retired once the last is gone.
    pub fn drained(&self) -> Vec<String> {
        let mut newest: HashMap<&AgentRef, &Deployment> = HashMap::new();
        for deployment in self.by_id.values() {
            let entry = newest.entry(&deployment.agent).or_insert(deployment);
            if deployment.order > entry.order {
                *entry = deployment;
            }
        }
        self.by_id
            .values()
            .filter(|deployment| {
                newest.get(&deployment.agent).is_some_and(|newest| {
                    newest.order != deployment.order && newest.health.has_been_ready()
                })
            })
            .map(|deployment| deployment.deployment_id.clone())
            .collect()
    }

    /// What the deployment is to its agent now; `Gone` when unknown.
    pub fn role(&self, deployment_id: &str) -> Role {
        let Some(deployment) = self.by_id.get(deployment_id) else {
            return Role::Gone;
        };
        let newest = self
            .by_id
            .values()
            .filter(|other| other.agent == deployment.agent)
            .max_by_key(|other| other.order);
        match newest {
            Some(newest) if newest.order == deployment.order => Role::Active,
            Some(newest) if newest.health.has_been_ready() => Role::Draining,
            _ => Role::Serving,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::agent::ConfigChanges;
    use shared::manifest::DeploymentMode;

    fn manifest() -> Manifest {
        let body = serde_json::json!({"serviceName": "echo", "image": "example/agent:1"});
        let (_, config) = ConfigChanges::from_json(body)
            .and_then(ConfigChanges::into_new_agent)
            .unwrap();
        config.manifest(DeploymentMode::Simulated, "echo", "tiny-ferret-1")
    }

    fn request(deployments: &mut Deployments, agent: &AgentRef, id: &str) {
        let manifest = manifest();
        let requested = Requested {
            agent,
            service_id: "service",
            deployment_id: id,
            manifest: &manifest,
        };
        deployments.insert(
            requested,
            Err(DeploymentError {
                code: "X".into(),
                message: String::new(),
            }),
        );
    }

    #[test]
    fn the_newest_deployment_is_active_and_the_previous_drains_once_it_has_been_ready() {
        let agent = AgentRef {
            namespace: "tiny-ferret-1".into(),
            name: "echo".into(),
        };
        let mut deployments = Deployments::default();
        request(&mut deployments, &agent, "one");
        assert_eq!(deployments.role("one"), Role::Active);
        request(&mut deployments, &agent, "two");
        assert_eq!(deployments.role("two"), Role::Active);
        assert_eq!(deployments.role("one"), Role::Serving);
        assert!(deployments.drained().is_empty(), "still serving");
        deployments
            .get_mut("two")
            .unwrap()
            .health
            .ready(Instant::now());
        assert_eq!(deployments.role("one"), Role::Draining);
        assert_eq!(deployments.role("unknown"), Role::Gone);
        assert_eq!(deployments.drained(), ["one"]);
    }

    #[test]
    fn a_replica_runs_on_the_manifests_node_type_and_one_the_catalog_lacks_is_refused() {
        let received = || Received {
            env: Vec::new(),
            pull: None,
        };
        let runnable = Runnable::new(&manifest(), received()).unwrap();
        assert_eq!(runnable.node_type, NodeType::Arm);
        let mut other = manifest();
        other.spec.daily_node_type = "x86".into();
        let refused = Runnable::new(&other, received()).unwrap_err();
        assert_eq!(refused.code, "UNSUPPORTED_NODE_TYPE");
        assert!(refused.message.contains("x86"), "{}", refused.message);
    }

    #[test]
    fn a_deleted_agents_deployment_delivered_again_is_not_taken() {
        let agent = AgentRef {
            namespace: "tiny-ferret-1".into(),
            name: "echo".into(),
        };
        let mut deployments = Deployments::default();
        request(&mut deployments, &agent, "one");
        assert!(!deployments.is_new("one"));
        assert_eq!(deployments.retire_agent(&agent), ["one"]);
        request(&mut deployments, &agent, "one");
        assert!(deployments.get("one").is_none());
        assert_eq!(deployments.role("one"), Role::Gone);
    }
}
