//! What the data plane holds in memory: the deployments it knows, the replicas it runs (the
//! engine's labels say whose they are; their phase is ours) and the sessions it was asked for.
//! Changed under one lock, never across an await: a claim is one change, so two sessions never
//! share a replica.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use agent_holder::Endpoint;
use agent_holder::contract::BotRequest;

use super::deployments::Deployments;
use super::plan::Running;
use super::retirement::Retirements;
use crate::events::AgentRef;
use crate::replica::{ReplicaId, ReplicaLabels, ReplicaView};

/// Where a replica is in its one life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Running, `/readyz` not yet 200.
    Starting { since: Instant },
    /// Ready, holding no session.
    Idle,
    /// Claimed by a session (being handed it, or holding it); never idle again.
    Held { session_id: String },
    /// Asked to stop; gone from the map once the engine removed it.
    Stopping,
    /// Listed without being started by this data plane (it restarted): its holder is asked
    /// whether it holds a session, at every listing until it answers. Never claimed, and
    /// stopped only if it never answers within the readiness timeout of being first listed.
    Adopting,
}

#[derive(Debug)]
pub struct Replica {
    pub labels: ReplicaLabels,
    pub address: Option<SocketAddr>,
    /// Where its holder answers, and its token: sessions are handed to it.
    pub holder: Option<Endpoint>,
    pub phase: Phase,
    /// When the data plane first knew it: a listing asked for earlier may not show it yet.
    pub known_since: Instant,
}

impl Replica {
    /// A replica listed after a restart, its holder not asked yet.
    pub fn adopting(view: ReplicaView, now: Instant) -> Self {
        Replica {
            labels: view.labels,
            address: view.address,
            holder: view.holder,
            phase: Phase::Adopting,
            known_since: now,
        }
    }
}

/// Where a session is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionPhase {
    /// Waiting for a ready replica of its deployment (a cold start).
    Waiting,
    /// A replica is claimed for it: being handed over, or holding it.
    Held { replica: ReplicaId },
    /// Reported ended or failed: nothing more happens to it, and a repeat of its request
    /// claims nothing.
    Ended,
}

#[derive(Debug)]
pub struct Session {
    pub agent: AgentRef,
    pub deployment_id: String,
    pub request: BotRequest,
    /// When the data plane took its `Session Requested`: `botStartSeconds` runs from here.
    pub requested_at: Instant,
    pub phase: SessionPhase,
}

impl Session {
    /// A session this data plane was never asked for, stopped: kept so that a late request of
    /// it claims nothing.
    pub fn ended(agent: AgentRef) -> Self {
        Session {
            agent,
            deployment_id: String::new(),
            request: BotRequest {
                session_id: String::new(),
                body: serde_json::Value::Null,
                transport: None,
                room: None,
            },
            requested_at: Instant::now(),
            phase: SessionPhase::Ended,
        }
    }

    /// The session a replica's holder holds, learnt after a restart: its agent and deployment
    /// are the replica's labels; its request is not known again (nothing is handed over).
    pub fn adopted(labels: &ReplicaLabels, session_id: &str, replica: ReplicaId) -> Self {
        let agent = AgentRef {
            namespace: labels.namespace.clone(),
            name: labels.agent.clone(),
        };
        let mut session = Session::ended(agent);
        session.deployment_id.clone_from(&labels.deployment_id);
        session.request.session_id = session_id.to_owned();
        session.phase = SessionPhase::Held { replica };
        session
    }
}

#[derive(Debug, Default)]
pub struct State {
    pub deployments: Deployments,
    pub replicas: BTreeMap<ReplicaId, Replica>,
    pub sessions: HashMap<String, Session>,
    /// Sessions waiting, in the order they were asked for.
    pub waiting: Vec<String>,
    /// Replicas asked to stop: never adopted again, stopped again if still listed.
    pub condemned: HashSet<ReplicaId>,
    /// The deployments the engine's last listing showed a replica of (exited ones too).
    pub listed: HashSet<String>,
    pub retirements: Retirements,
}

impl State {
    /// The deployments to retire now, marked under way: superseded ones that drained and the
    /// deleted agents' ones, none of whose replicas the last listing showed or the data plane
    /// holds, with no run or session of theirs pending.
    pub fn retirable(&mut self, now: Instant) -> Vec<String> {
        let mut candidates = self.deployments.drained();
        candidates.extend(self.retirements.deleted().cloned());
        candidates.retain(|id| !self.listed.contains(id) && self.running(id).is_empty());
        self.retirements.start_due(candidates, now)
    }

    /// What the deployment runs, for the plan.
    pub fn running(&self, deployment_id: &str) -> Running {
        let mut running = Running::default();
        for (id, replica) in &self.replicas {
            if replica.labels.deployment_id != deployment_id {
                continue;
            }
            match replica.phase {
                Phase::Starting { .. } => running.starting.push(id.clone()),
                Phase::Idle => running.idle.push(id.clone()),
                Phase::Held { .. } => running.busy.push(id.clone()),
                Phase::Adopting => running.adopting.push(id.clone()),
                Phase::Stopping => running.stopping += 1,
            }
        }
        running.launching = self
            .deployments
            .get(deployment_id)
            .map_or(0, |deployment| deployment.launching);
        running.waiting = self
            .waiting
            .iter()
            .filter(|id| {
                self.sessions
                    .get(*id)
                    .is_some_and(|session| session.deployment_id == deployment_id)
            })
            .count()
            .try_into()
            .unwrap_or(u32::MAX);
        running
    }

    /// Deployment ids of replicas the data plane runs but does not know the deployment of.
    pub fn unknown_deployments(&self) -> HashSet<String> {
        self.replicas
            .values()
            .map(|replica| &replica.labels.deployment_id)
            .filter(|id| self.deployments.get(id).is_none())
            .cloned()
            .collect()
    }

    /// Claims an idle ready replica of the session's deployment for it: the replica and where
    /// its holder answers.
    pub fn claim(&mut self, session_id: &str) -> Option<(ReplicaId, Endpoint)> {
        let session = self.sessions.get_mut(session_id)?;
        if session.phase != SessionPhase::Waiting {
            return None;
        }
        let (id, replica) = self.replicas.iter_mut().find(|(_, replica)| {
            replica.phase == Phase::Idle
                && replica.holder.is_some()
                && replica.labels.deployment_id == session.deployment_id
        })?;
        let holder = replica.holder.clone()?;
        replica.phase = Phase::Held {
            session_id: session_id.to_owned(),
        };
        session.phase = SessionPhase::Held {
            replica: id.clone(),
        };
        self.waiting.retain(|waiting| waiting != session_id);
        Some((id.clone(), holder))
    }

    /// The session claimed `replica` and its agent showed no life: the replica is condemned
    /// and the session waits for another (it keeps its place among the waiting, first). True
    /// when it was so (the caller then stops the replica).
    pub fn release(&mut self, session_id: &str, replica: &ReplicaId) -> bool {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return false;
        };
        if session.phase
            != (SessionPhase::Held {
                replica: replica.clone(),
            })
        {
            return false;
        }
        session.phase = SessionPhase::Waiting;
        self.waiting.insert(0, session_id.to_owned());
        self.condemn(replica)
    }

    /// Marks the replica stopping; true when it was not already (the caller then stops it).
    pub fn condemn(&mut self, id: &ReplicaId) -> bool {
        let fresh = self.condemned.insert(id.clone());
        if let Some(replica) = self.replicas.get_mut(id) {
            let was = std::mem::replace(&mut replica.phase, Phase::Stopping);
            return was != Phase::Stopping || fresh;
        }
        fresh
    }

    /// Ends the session if it has not ended: its replica, if it had one (now stopping).
    /// `None` when it had ended already (someone else reports it).
    pub fn end_session(&mut self, session_id: &str) -> Option<Option<ReplicaId>> {
        let session = self.sessions.get_mut(session_id)?;
        let was = std::mem::replace(&mut session.phase, SessionPhase::Ended);
        self.waiting.retain(|waiting| waiting != session_id);
        match was {
            SessionPhase::Ended => None,
            SessionPhase::Waiting => Some(None),
            SessionPhase::Held { replica } => {
                self.condemn(&replica);
                Some(Some(replica))
            }
        }
    }

    /// Ends the sessions that have waited longer than `bound` for a replica (the control plane
    /// has failed them by then): a late replica must not run a session nobody waits for.
    pub fn expire_waiting(&mut self, now: Instant, bound: Duration) -> Vec<(String, AgentRef)> {
        let expired: Vec<(String, AgentRef)> = self
            .waiting
            .iter()
            .filter_map(|id| {
                let session = self.sessions.get(id)?;
                let late = now.saturating_duration_since(session.requested_at) > bound;
                late.then(|| (id.clone(), session.agent.clone()))
            })
            .collect();
        for (id, _) in &expired {
            self.end_session(id);
        }
        expired
    }

    /// Ready replicas of the deployment, and those holding sessions.
    pub fn ready_counts(&self, deployment_id: &str) -> (u32, u32) {
        let (mut ready, mut busy) = (0, 0);
        for replica in self.replicas.values() {
            if replica.labels.deployment_id != deployment_id {
                continue;
            }
            match replica.phase {
                Phase::Idle => ready += 1,
                Phase::Held { .. } => {
                    ready += 1;
                    busy += 1;
                }
                Phase::Starting { .. } | Phase::Stopping | Phase::Adopting => {}
            }
        }
        (ready, busy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent() -> AgentRef {
        AgentRef {
            namespace: "tiny-ferret-1".into(),
            name: "echo".into(),
        }
    }

    fn waiting(state: &mut State, id: &str, requested_at: Instant) {
        let mut session = Session::ended(agent());
        session.deployment_id = "d".into();
        session.requested_at = requested_at;
        session.phase = SessionPhase::Waiting;
        state.sessions.insert(id.into(), session);
        state.waiting.push(id.into());
    }

    fn endpoint() -> Endpoint {
        Endpoint {
            address: SocketAddr::from(([127, 0, 0, 1], 18080)),
            token: agent_holder::Token::new("t"),
        }
    }

    fn idle(state: &mut State, id: &str) {
        let labels = ReplicaLabels {
            stack: "s".into(),
            namespace: "tiny-ferret-1".into(),
            agent: "echo".into(),
            service_id: "svc".into(),
            deployment_id: "d".into(),
        };
        let replica = Replica {
            labels,
            address: Some(SocketAddr::from(([127, 0, 0, 1], 8080))),
            holder: Some(endpoint()),
            phase: Phase::Idle,
            known_since: Instant::now(),
        };
        state.replicas.insert(ReplicaId(id.into()), replica);
    }

    #[test]
    fn a_replica_is_claimed_by_one_session_only() {
        let mut state = State::default();
        let now = Instant::now();
        idle(&mut state, "r1");
        waiting(&mut state, "s1", now);
        waiting(&mut state, "s2", now);
        assert_eq!(
            state.claim("s1").map(|(id, _)| id),
            Some(ReplicaId("r1".into()))
        );
        assert_eq!(state.claim("s2"), None);
        assert_eq!(
            state.claim("s1"),
            None,
            "a held session claims nothing more"
        );
        assert_eq!(state.waiting, ["s2"]);
        assert_eq!(state.end_session("s1"), Some(Some(ReplicaId("r1".into()))));
        assert_eq!(
            state.replicas[&ReplicaId("r1".into())].phase,
            Phase::Stopping
        );
        assert_eq!(state.end_session("s1"), None, "ended once");
    }

    #[test]
    fn a_replica_being_adopted_is_never_claimed_and_counts_apart_until_its_holder_answers() {
        let mut state = State::default();
        idle(&mut state, "r1");
        let adopting = ReplicaId("r1".into());
        if let Some(replica) = state.replicas.get_mut(&adopting) {
            replica.phase = Phase::Adopting;
        }
        waiting(&mut state, "s1", Instant::now());
        assert_eq!(state.claim("s1"), None, "it may hold a session already");
        let running = state.running("d");
        assert_eq!(
            running.adopting,
            [adopting],
            "in the reserve, never stopped as surplus meanwhile"
        );
        assert!(running.idle.is_empty() && running.starting.is_empty() && running.busy.is_empty());
        assert_eq!(state.ready_counts("d"), (0, 0));
    }

    #[test]
    fn a_replica_is_claimed_only_once_its_holder_has_an_address() {
        let mut state = State::default();
        idle(&mut state, "r1");
        if let Some(replica) = state.replicas.get_mut(&ReplicaId("r1".into())) {
            replica.holder = None;
        }
        waiting(&mut state, "s1", Instant::now());
        assert_eq!(state.claim("s1"), None);
        if let Some(replica) = state.replicas.get_mut(&ReplicaId("r1".into())) {
            replica.holder = Some(endpoint());
        }
        assert_eq!(
            state.claim("s1"),
            Some((ReplicaId("r1".into()), endpoint())),
            "the session goes to the holder, not the agent's 8080"
        );
    }

    #[test]
    fn a_session_waiting_past_the_start_bound_is_ended_and_claims_nothing() {
        let mut state = State::default();
        let now = Instant::now();
        waiting(&mut state, "old", now);
        waiting(&mut state, "new", now + Duration::from_secs(100));
        let expired =
            state.expire_waiting(now + Duration::from_secs(121), Duration::from_secs(120));
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].0, "old");
        assert_eq!(state.waiting, ["new"]);
        idle(&mut state, "r1");
        assert_eq!(state.claim("old"), None);
    }
}
