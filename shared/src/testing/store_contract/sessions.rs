//! The session port's promises: a start counts the session in the same write that records it,
//! only while the agent takes it; an end counts it out once; the agent's own writes never move
//! the count.

use super::agent;
use crate::agent::{AgentRecord, AgentStore, Change, DeploymentState, WriteOutcome};
use crate::session::{
    Connection, SessionRecord, SessionRequest, SessionState, SessionStore, SessionWrite,
    StartOutcome, StartRefusal,
};

const AT: time::OffsetDateTime = time::macros::datetime!(2026-11-25 10:00 UTC);

fn session_of(agent: &AgentRecord, deployment_id: &str) -> SessionRecord {
    SessionRecord::new(
        agent,
        deployment_id,
        SessionRequest {
            body: Some(r#"{"caller":"+15550100"}"#.into()),
            ..SessionRequest::default()
        },
        AT,
    )
}

/// The agent with its active deployment reported ready, as stored.
async fn made_ready<S: AgentStore>(store: &S, agent: &AgentRecord) -> AgentRecord {
    let mut next = agent.next_version();
    next.active.status.state = DeploymentState::Ready;
    let written = store
        .write_agent(
            agent.version,
            &next,
            Change::Status {
                deployment_id: &next.active.deployment.id,
                status: &next.active.status,
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(written, WriteOutcome::Written);
    stored(store, agent).await
}

async fn stored<S: AgentStore>(store: &S, agent: &AgentRecord) -> AgentRecord {
    store
        .get_agent(&agent.owner.namespace, &agent.name)
        .await
        .unwrap()
        .expect("the agent is stored")
}

async fn started<S: SessionStore>(store: &S, session: &SessionRecord) -> StartOutcome {
    store.start_session(session).await.unwrap()
}

/// Starts, the cap, ends, and the agent's writes beside them.
pub async fn sessions<S: AgentStore + SessionStore>(store: &S) {
    let ns = "sessions-ns";
    // maxReplicas 2: two sessions at most.
    let mut new = agent(ns, "voice", "ghcr.io/acme/agent:1.0");
    new.active.config.auto_scaling.max_replicas = 2;
    store.create_agent(&new, None).await.unwrap();
    let deployment = new.active.deployment.id.clone();

    // Not ready: refused, nothing written.
    let early = session_of(&new, &deployment);
    assert_eq!(
        started(store, &early).await,
        StartOutcome::Refused(StartRefusal::NotReady)
    );
    assert_eq!(
        store
            .get_session(ns, &new.service_id, &early.session_id)
            .await
            .unwrap(),
        None
    );

    // Ready: recorded and counted, up to maxReplicas.
    let ready = made_ready(store, &new).await;
    assert_eq!(ready.active_sessions, 0);
    let first = session_of(&ready, &deployment);
    let second = session_of(&ready, &deployment);
    assert_eq!(started(store, &first).await, StartOutcome::Started);
    assert_eq!(started(store, &second).await, StartOutcome::Started);
    let full = session_of(&ready, &deployment);
    assert_eq!(
        started(store, &full).await,
        StartOutcome::Refused(StartRefusal::AtCapacity)
    );
    assert_eq!(
        store
            .get_session(ns, &ready.service_id, &first.session_id)
            .await
            .unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store
            .get_session(ns, &ready.service_id, &full.session_id)
            .await
            .unwrap(),
        None
    );
    let counted = stored(store, &ready).await;
    assert_eq!(counted.active_sessions, 2);
    assert_eq!(counted.view().active_session_count, 2);
    assert_eq!(
        counted.version, ready.version,
        "sessions never move the agent's version"
    );

    // The agent's own write, of a record read before the starts, keeps the count.
    let deployed = ready.deploy(
        ready.config().clone(),
        crate::manifest::DeploymentMode::Simulated,
        "2026-11-25T11:00:00.000Z",
    );
    assert_eq!(
        store
            .write_agent(
                ready.version,
                &deployed,
                Change::NewDeployment {
                    replaced: ready.config()
                },
                None
            )
            .await
            .unwrap(),
        WriteOutcome::Written
    );
    let rolled = stored(store, &ready).await;
    assert_eq!(rolled.active_sessions, 2);
    // During the rollout, sessions run on the deployment still serving, not the new one.
    assert_eq!(
        started(store, &session_of(&rolled, &rolled.active.deployment.id)).await,
        StartOutcome::Refused(StartRefusal::NotReady)
    );

    // Started, with what to connect with: still active, the count unmoved.
    let running = SessionRecord {
        state: SessionState::Started,
        version: first.version + 1,
        connection: Some(Connection {
            ws_url: Some("wss://simulated.invalid/session".into()),
            ..Connection::default()
        }),
        ..first.clone()
    };
    assert_eq!(
        store.write_session(&first, &running).await.unwrap(),
        SessionWrite::Written
    );
    assert_eq!(stored(store, &ready).await.active_sessions, 2);

    // A stop asked for is kept, and still counts.
    let stopping = running.stop_requested("2026-11-25T10:04:00.000Z");
    assert_eq!(
        store.write_session(&running, &stopping).await.unwrap(),
        SessionWrite::Written
    );
    assert_eq!(
        store
            .get_session(ns, &ready.service_id, &first.session_id)
            .await
            .unwrap(),
        Some(stopping.clone())
    );
    assert_eq!(stored(store, &ready).await.active_sessions, 2);

    // An end counts the session out once, and what it connected with is gone from the store
    // while when it expires is kept; a write of a stale read changes nothing.
    let mut ended = stopping.ended(SessionState::Ended, "completed", "2026-11-25T10:05:00.000Z");
    ended.expires_at = Some(1_800_000_000);
    assert_eq!(
        store.write_session(&stopping, &ended).await.unwrap(),
        SessionWrite::Written
    );
    assert_eq!(
        store.write_session(&stopping, &ended).await.unwrap(),
        SessionWrite::Conflict
    );
    assert_eq!(stored(store, &ready).await.active_sessions, 1);
    assert_eq!(
        store
            .get_session(ns, &ready.service_id, &first.session_id)
            .await
            .unwrap(),
        Some(ended.clone())
    );
    // A write that does not end it (an ended session written again) counts nothing.
    let noted = SessionRecord {
        version: ended.version + 1,
        ..ended.clone()
    };
    store.write_session(&ended, &noted).await.unwrap();
    assert_eq!(stored(store, &ready).await.active_sessions, 1);
    // The place is free again.
    let third = session_of(&rolled, &deployment);
    assert_eq!(started(store, &third).await, StartOutcome::Started);
    assert_eq!(stored(store, &ready).await.active_sessions, 2);

    // The agent deleted: its sessions start no more, and ending one still writes it.
    let current = stored(store, &ready).await;
    assert_eq!(
        store.delete_agent(&current).await.unwrap(),
        WriteOutcome::Written
    );
    assert_eq!(
        started(store, &session_of(&current, &deployment)).await,
        StartOutcome::Refused(StartRefusal::NoAgent)
    );
    let remade = agent(ns, "voice", "ghcr.io/acme/agent:1.0");
    store.create_agent(&remade, None).await.unwrap();
    let remade = made_ready(store, &remade).await;
    // The new agent's own session counts, so that an end counted out of it would show.
    let newcomer = session_of(&remade, &remade.active.deployment.id);
    assert_eq!(started(store, &newcomer).await, StartOutcome::Started);
    let failed = second.ended(
        SessionState::Failed,
        "agentDeleted",
        "2026-11-25T12:00:00.000Z",
    );
    assert_eq!(
        store.write_session(&second, &failed).await.unwrap(),
        SessionWrite::Written
    );
    assert_eq!(
        stored(store, &remade).await.active_sessions,
        1,
        "the old service's end never counts out the new agent of the name"
    );
    assert_eq!(
        started(store, &session_of(&remade, &deployment)).await,
        StartOutcome::Refused(StartRefusal::NotReady),
        "another service's deployment"
    );
}
