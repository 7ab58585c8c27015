//! Sessions (contract section 12, "Sessions" and "Transports"): a `Session Requested` claims an
//! idle ready replica of its deployment (a warm start) or waits for one (a cold start); the
//! replica's holder is handed the session and holds its `POST /bot`, the session is reported
//! `started` once the agent accepted, and ended by the answer (the holder's long poll says it),
//! the replica's exit or a stop asked for. A replica takes one session in its life: whatever
//! ends the session stops the replica, and the plan starts another.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_holder::client::HolderError;
use agent_holder::contract::{BotOutcome, BotRequest};
use agent_holder::{Endpoint, HolderState, MAX_WAIT, Outcome, client};
use serde_json::{Value, json};
use shared::secrets::store::{DataKeyOpener, SecretStore};
use shared::session::{START_TIMEOUT, SessionRequest, Transport, completion};
use time::OffsetDateTime;

use super::DataPlane;
use super::state::{Session, SessionPhase};
use crate::engine::Engine;
use crate::events::AgentRef;
use crate::ports::{Reports, SessionStatus};
use crate::replica::{ExitReason, ReplicaId, ReplicaLabels, ReplicaStatus};

/// The completion status of a session that needs a transport this stack has no credentials for.
pub const TRANSPORT_NOT_CONFIGURED: &str = "TRANSPORT_NOT_CONFIGURED";

/// Listings a session's end waits through for its replica's exit, a tick apart.
const EXIT_LOOKS: u32 = 3;

/// What a session's report says beside its state.
#[derive(Debug, Default)]
pub(super) struct Detail {
    completion: Option<&'static str>,
    bot_start_seconds: Option<f64>,
    cold_start: Option<bool>,
}

impl Detail {
    fn ended(completion: &'static str) -> Self {
        Detail {
            completion: Some(completion),
            ..Detail::default()
        }
    }
}

/// The start's `body` as the object the agent is handed (`{}` when none).
fn body_of(request: &SessionRequest) -> Value {
    request
        .body
        .as_deref()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

impl<E, S, K, R> DataPlane<E, S, K, R>
where
    E: Engine,
    S: SecretStore + 'static,
    K: DataKeyOpener + 'static,
    R: Reports,
{
    pub(super) async fn session_requested(
        self: &Arc<Self>,
        agent: AgentRef,
        deployment_id: String,
        session_id: String,
        request: SessionRequest,
    ) {
        let needs_daily = request.create_daily_room || request.transport == Some(Transport::Daily);
        let session = Session {
            agent: agent.clone(),
            deployment_id,
            request: BotRequest {
                session_id: session_id.clone(),
                body: body_of(&request),
                transport: request
                    .transport
                    .map(|transport| transport.name().to_owned()),
                room: None,
            },
            requested_at: Instant::now(),
            phase: if needs_daily {
                SessionPhase::Ended
            } else {
                SessionPhase::Waiting
            },
        };
        let claimed = {
            let mut state = self.lock();
            if state.sessions.contains_key(&session_id) {
                tracing::info!(%session_id, "a session asked for again: nothing new is claimed");
                return;
            }
            state.sessions.insert(session_id.clone(), session);
            if !needs_daily {
                state.waiting.push(session_id.clone());
            }
            state.claim(&session_id)
        };
        if needs_daily {
            // No Daily credentials exist in this build: never a made-up room.
            tracing::warn!(%session_id, "a Daily room asked for, and no Daily credentials");
            let detail = Detail::ended(TRANSPORT_NOT_CONFIGURED);
            self.report_session(&agent, &session_id, "failed", detail)
                .await;
            return;
        }
        match claimed {
            Some((replica, address)) => self.hand_over(session_id, replica, address, false),
            None => {
                tracing::info!(%session_id, "no idle ready replica: the session waits (cold start)");
                // Its replica is started now, not at the next tick (0-250 ms of a cold start).
                self.apply_plans();
            }
        }
    }

    /// Gives each waiting session an idle ready replica of its deployment, oldest first; ends
    /// those that waited past the control plane's start bound.
    pub(super) async fn claim_waiting(self: &Arc<Self>) {
        let start_bound = START_TIMEOUT.unsigned_abs();
        let (claims, expired): (Vec<_>, _) = {
            let mut state = self.lock();
            let expired = state.expire_waiting(Instant::now(), start_bound);
            let waiting = state.waiting.clone();
            let claims = waiting
                .into_iter()
                .filter_map(|session_id| {
                    let (replica, address) = state.claim(&session_id)?;
                    Some((session_id, replica, address))
                })
                .collect();
            (claims, expired)
        };
        for (session_id, replica, address) in claims {
            self.hand_over(session_id, replica, address, true);
        }
        for (session_id, agent) in expired {
            tracing::warn!(%session_id, "no replica became ready within the start bound");
            let detail = Detail::ended(completion::START_TIMEOUT);
            self.report_session(&agent, &session_id, "failed", detail)
                .await;
        }
    }

    pub(super) async fn session_stop_requested(
        self: &Arc<Self>,
        agent: &AgentRef,
        session_id: &str,
    ) {
        let ended = {
            let mut state = self.lock();
            match state.sessions.get(session_id) {
                None => {
                    // Never asked of this data plane: ended, so a late request claims nothing.
                    let ended = Session::ended(agent.clone());
                    state.sessions.insert(session_id.to_owned(), ended);
                    Some(None)
                }
                // Nothing one agent's event names reaches another's session.
                Some(session) if session.agent != *agent => {
                    tracing::warn!(%session_id, "a stop named another agent than the session's");
                    None
                }
                Some(_) => state.end_session(session_id),
            }
        };
        let Some(replica) = ended else {
            return;
        };
        tracing::info!(%session_id, replica = ?replica, "session stop requested");
        self.report_session(
            agent,
            session_id,
            "ended",
            Detail::ended(completion::TERMINATED),
        )
        .await;
        if let Some(replica) = replica {
            self.stop_replica(replica);
        }
    }

    /// The replica holding the session exited (the loop saw it).
    pub(super) async fn session_exited(
        self: &Arc<Self>,
        session_id: &str,
        labels: &ReplicaLabels,
        reason: &ExitReason,
    ) {
        let Some(agent) = self.end(session_id) else {
            return;
        };
        self.shipper.platform_line(
            labels,
            Some(session_id),
            &format!("replica exited: {reason}"),
        );
        tracing::info!(%session_id, %reason, "the replica holding a session exited");
        self.report_session(
            &agent,
            session_id,
            "ended",
            Detail::ended(completion::AGENT_ERROR),
        )
        .await;
    }

    /// Ends the session if nobody has: its agent, to report it.
    fn end(&self, session_id: &str) -> Option<AgentRef> {
        let mut state = self.lock();
        state.end_session(session_id)?;
        state
            .sessions
            .get(session_id)
            .map(|session| session.agent.clone())
    }

    fn hand_over(
        self: &Arc<Self>,
        session_id: String,
        replica: ReplicaId,
        holder: Endpoint,
        cold: bool,
    ) {
        let this = self.clone();
        self.spawn(async move { this.hold(session_id, replica, holder, cold).await });
    }

    /// Hands the session to the replica's holder, reports it started, and waits for its end.
    /// A replica whose agent shows no life is stopped and the session waits for another.
    async fn hold(
        self: Arc<Self>,
        session_id: String,
        replica: ReplicaId,
        holder: Endpoint,
        cold: bool,
    ) {
        let taken = {
            let state = self.lock();
            state.sessions.get(&session_id).map(|session| {
                (
                    session.agent.clone(),
                    session.request.clone(),
                    session.requested_at,
                )
            })
        };
        let Some((agent, request, requested_at)) = taken else {
            return;
        };
        // From this instant the replica's lines are the session's, decided before the agent
        // can write one (a batch shipped before the hand-over answered would carry it under
        // the deployment's stream); a replica that does not take it is stopped, never reused,
        // and one whose agent showed no life has the session withdrawn from its lines.
        let at = OffsetDateTime::now_utc();
        self.shipper.hand_over(&replica, &session_id, at);
        let handed = client::hand_over(&holder, &request).await;
        if let Err(HolderError::NotAlive { reason }) = &handed {
            tracing::warn!(%session_id, %replica, %reason, "the replica's agent shows no life: the session waits for another");
            self.shipper.withdraw(&replica, &session_id);
            if self.lock().release(&session_id, &replica) {
                self.stop_replica(replica);
                // Its replacement is started now, not at the next tick.
                self.apply_plans();
            }
            return;
        }
        if let Err(error) = handed {
            tracing::warn!(%session_id, %replica, %error, "the replica did not take the session");
            if self.end(&session_id).is_some() {
                let detail = Detail::ended(completion::AGENT_ERROR);
                self.report_session(&agent, &session_id, "failed", detail)
                    .await;
            }
            self.stop_replica(replica);
            return;
        }
        let stopped = self
            .lock()
            .sessions
            .get(&session_id)
            .is_none_or(|session| session.phase == SessionPhase::Ended);
        if stopped {
            return;
        }
        let detail = Detail {
            completion: None,
            bot_start_seconds: Some(requested_at.elapsed().as_secs_f64()),
            cold_start: Some(cold),
        };
        tracing::info!(%session_id, %replica, cold, "session started");
        self.report_session(&agent, &session_id, "started", detail)
            .await;
        if let Some(outcome) = self.end_of(&session_id, &holder).await {
            self.answered(&agent, &session_id, replica, outcome).await;
        }
    }

    /// Waits for the holder to say how the session ended (its long poll, asked again until
    /// then); `None` once the session ended otherwise (a stop, the replica's exit).
    pub(super) async fn end_of(&self, session_id: &str, holder: &Endpoint) -> Option<BotOutcome> {
        loop {
            let held = self
                .lock()
                .sessions
                .get(session_id)
                .is_some_and(|session| matches!(session.phase, SessionPhase::Held { .. }));
            if !held {
                return None;
            }
            match client::state(holder, MAX_WAIT).await {
                Ok(HolderState::Ended {
                    session_id: ended,
                    outcome,
                    reason,
                    ..
                }) => {
                    if ended != session_id {
                        let reason = format!("the replica held session {ended} instead");
                        return Some(BotOutcome::AgentError { reason });
                    }
                    return Some(match outcome {
                        Outcome::Completed => BotOutcome::Completed,
                        Outcome::AgentError => BotOutcome::AgentError {
                            reason: reason.unwrap_or_default(),
                        },
                    });
                }
                Ok(_) => {}
                Err(error) => {
                    // Its exit, if that is why, is seen by the loop; else asked again.
                    tracing::debug!(%session_id, holder = %holder.address, %error, "asking the holder failed");
                    tokio::time::sleep(self.config.tick.max(Duration::from_millis(100))).await;
                }
            }
        }
    }

    /// `POST /bot` was answered, or its connection closed.
    pub(super) async fn answered(
        self: &Arc<Self>,
        agent: &AgentRef,
        session_id: &str,
        replica: ReplicaId,
        outcome: BotOutcome,
    ) {
        let completion = match &outcome {
            BotOutcome::Completed => completion::COMPLETED,
            BotOutcome::AgentError { .. } => completion::AGENT_ERROR,
        };
        // Why an agent error happened is the platform's line in the session's log: the
        // replica's exit when that closed the connection, else the holder's reason (a status,
        // checks unanswered).
        let why = match &outcome {
            BotOutcome::AgentError { reason } => match self.exit_of(&replica).await {
                Some(exit) => Some(format!("replica exited: {exit}")),
                None => Some(reason.clone()).filter(|reason| !reason.is_empty()),
            },
            BotOutcome::Completed => None,
        };
        let labels = self.lock().replicas.get(&replica).map(|r| r.labels.clone());
        if self.end(session_id).is_none() {
            return;
        }
        if let (Some(why), Some(labels)) = (&why, &labels) {
            self.shipper.platform_line(labels, Some(session_id), why);
        }
        tracing::info!(%session_id, %replica, ?outcome, "session ended");
        self.report_session(agent, session_id, "ended", Detail::ended(completion))
            .await;
        self.stop_replica(replica);
    }

    /// Why the replica exited, if a listing shows it has (a few ticks at most).
    async fn exit_of(&self, replica: &ReplicaId) -> Option<ExitReason> {
        for _ in 0..EXIT_LOOKS {
            if let Ok(views) = self.engine.list(&self.config.stack).await {
                match views.into_iter().find(|view| view.id == *replica) {
                    Some(view) => {
                        if let ReplicaStatus::Exited(reason) = view.status {
                            return Some(reason);
                        }
                    }
                    None => return None,
                }
            }
            tokio::time::sleep(self.config.tick).await;
        }
        None
    }

    pub(super) async fn report_session(
        &self,
        agent: &AgentRef,
        session_id: &str,
        state: &'static str,
        detail: Detail,
    ) {
        self.reports
            .session(SessionStatus {
                namespace: agent.namespace.clone(),
                agent: agent.name.clone(),
                session_id: session_id.to_owned(),
                state,
                ws_url: None,
                daily_room: None,
                daily_token: None,
                completion_status: detail.completion,
                bot_start_seconds: detail.bot_start_seconds,
                cold_start: detail.cold_start,
                observed_at: OffsetDateTime::now_utc(),
            })
            .await;
    }
}
