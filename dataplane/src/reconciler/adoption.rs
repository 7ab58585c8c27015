//! Replicas a restarted data plane finds running (contract section 12, "Restarts"): it keeps no
//! state of its own, so each replica's holder says what it holds. An idle one joins the reserve
//! once ready; one holding a session, or holding how it ended, is adopted with it: its lines go
//! to the session's stream from the hand-over on, `started` is reported (the status function
//! drops a repeat) and its end is awaited and reported once, as if this data plane had handed
//! it over.
//!
//! A replica whose holder does not answer (unreachable, an error, or no address listed yet)
//! stays Adopting: counted in its deployment's reserve and in `maxReplicas` like a starting one
//! (so no second reserve is started beside it), never handed a session, asked again at every
//! listing, and stopped, with nothing reported failed (it is the platform's replica, not the
//! customer's image), once the readiness timeout has passed since it was first listed; the plan
//! then starts its replacement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_holder::{Endpoint, HolderState, client};
use shared::secrets::store::{DataKeyOpener, SecretStore};
use time::OffsetDateTime;

use super::DataPlane;
use super::sessions::Detail;
use super::state::{Phase, Session, SessionPhase};
use crate::engine::Engine;
use crate::events::AgentRef;
use crate::ports::Reports;
use crate::replica::{ReplicaId, ReplicaLabels};

/// How long a holder may take to say what it holds before it is asked again at the next
/// listing (the reconcile pass waits for the answers).
const ASK_BOUND: Duration = Duration::from_secs(2);

/// A replica listed that this data plane did not start, with where its holder answers.
pub struct Adoption {
    pub id: ReplicaId,
    pub holder: Endpoint,
    /// Not running any more: an idle one is stopped, a held session ends with its exit.
    pub exited: bool,
}

/// A replica adopted with the session its holder holds.
struct Held {
    id: ReplicaId,
    holder: Endpoint,
    session_id: String,
    since: OffsetDateTime,
    agent: AgentRef,
    labels: ReplicaLabels,
}

/// What becomes of a replica whose holder holds a session.
enum Adopted {
    /// Its session is this data plane's now: awaited, then reported ended.
    Session(AgentRef),
    /// Its session ended meanwhile (a stop, reported already) or another replica has it: the
    /// replica stops.
    Stop,
}

impl<E, S, K, R> DataPlane<E, S, K, R>
where
    E: Engine,
    S: SecretStore + 'static,
    K: DataKeyOpener + 'static,
    R: Reports,
{
    /// Asks each replica's holder what it holds (all at once, within [`ASK_BOUND`]) and adopts
    /// it so; a held session's end is then awaited in a task of its own.
    pub(super) async fn adopt(self: &Arc<Self>, adoptions: Vec<Adoption>) {
        let asked = adoptions.into_iter().map(|adoption| async move {
            let asked =
                tokio::time::timeout(ASK_BOUND, client::state(&adoption.holder, Duration::ZERO))
                    .await;
            (adoption, asked)
        });
        for (adoption, asked) in futures_util::future::join_all(asked).await {
            let Adoption { id, holder, exited } = adoption;
            match asked {
                Ok(Ok(HolderState::Idle)) => self.adopted_idle(id, exited),
                Ok(Ok(
                    HolderState::Holding { session_id, since }
                    | HolderState::Ended {
                        session_id, since, ..
                    },
                )) => {
                    // Taken into the state now, before any claim of this pass or a session
                    // asked for again; only the wait for its end runs in a task.
                    if let Some((agent, labels)) = self.adopted_held(&id, &session_id) {
                        let this = self.clone();
                        let held = Held {
                            id,
                            holder,
                            session_id,
                            since,
                            agent,
                            labels,
                        };
                        self.spawn(this.hold_adopted(held));
                    }
                }
                // Left Adopting (counted in the reserve, never claimed): asked again at the next
                // listing, stopped if it has not answered within the readiness timeout.
                Ok(Err(error)) => {
                    tracing::warn!(replica = %id, holder = %holder.address, %error, "its holder did not say what it holds: asked again at the next listing");
                }
                Err(_) => {
                    tracing::warn!(replica = %id, holder = %holder.address, "its holder did not answer in time: asked again at the next listing");
                }
            }
        }
    }

    /// An idle replica: it joins the reserve once `/readyz` answers; one that exited is stopped.
    fn adopted_idle(self: &Arc<Self>, id: ReplicaId, exited: bool) {
        let labels = {
            let mut state = self.lock();
            let Some(replica) = state.replicas.get_mut(&id) else {
                return;
            };
            if replica.phase != Phase::Adopting {
                return;
            }
            if exited {
                state.condemn(&id);
                None
            } else {
                replica.phase = Phase::Starting {
                    since: Instant::now(),
                };
                Some(replica.labels.clone())
            }
        };
        match labels {
            Some(labels) => {
                tracing::info!(replica = %id, deployment_id = %labels.deployment_id, "adopted an idle replica");
                self.shipper.follow(&id, &labels);
            }
            None => self.stop_replica(id),
        }
    }

    /// A replica holding `session_id` (or how it ended) becomes Held with it: its agent and
    /// labels; `None` when the session ended meanwhile or another replica has it (the replica
    /// is then stopped).
    fn adopted_held(
        self: &Arc<Self>,
        id: &ReplicaId,
        session_id: &str,
    ) -> Option<(AgentRef, ReplicaLabels)> {
        let adopted = {
            let mut guard = self.lock();
            let state = &mut *guard;
            let replica = state.replicas.get_mut(id)?;
            if replica.phase != Phase::Adopting {
                return None;
            }
            let labels = replica.labels.clone();
            let adopted = match state.sessions.get_mut(session_id) {
                Some(session) if session.phase == SessionPhase::Ended => Adopted::Stop,
                // Asked for again since the restart: this replica has it already.
                Some(session) if session.phase == SessionPhase::Waiting => {
                    session.phase = SessionPhase::Held {
                        replica: id.clone(),
                    };
                    Adopted::Session(session.agent.clone())
                }
                Some(_) => Adopted::Stop,
                None => {
                    let session = Session::adopted(&labels, session_id, id.clone());
                    let agent = session.agent.clone();
                    state.sessions.insert(session_id.to_owned(), session);
                    Adopted::Session(agent)
                }
            };
            match adopted {
                Adopted::Session(agent) => {
                    replica.phase = Phase::Held {
                        session_id: session_id.to_owned(),
                    };
                    state.waiting.retain(|waiting| waiting != session_id);
                    Some((agent, labels))
                }
                Adopted::Stop => {
                    state.condemn(id);
                    None
                }
            }
        };
        if adopted.is_none() {
            tracing::info!(replica = %id, %session_id, "a replica held a session ended or held elsewhere: stopping it");
            self.stop_replica(id.clone());
        }
        adopted
    }

    /// An adopted session, as if this data plane had handed it over: its lines to its stream
    /// from the hand-over, `started` reported, its end awaited and reported once.
    async fn hold_adopted(self: Arc<Self>, held: Held) {
        let Held {
            id,
            holder,
            session_id,
            since,
            agent,
            labels,
        } = held;
        tracing::info!(replica = %id, %session_id, deployment_id = %labels.deployment_id, "adopted a replica holding a session");
        self.shipper.follow(&id, &labels);
        self.shipper.hand_over(&id, &session_id, since);
        self.report_session(&agent, &session_id, "started", Detail::default())
            .await;
        if let Some(outcome) = self.end_of(&session_id, &holder).await {
            self.answered(&agent, &session_id, id, outcome).await;
        }
    }
}
