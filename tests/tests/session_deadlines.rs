//! The control plane's deadlines (contract section 11), on DynamoDB Local through the real
//! report, sweep and delete code: a started session the data plane never reports ended is
//! ended `expired` at its `maxSessionDuration` plus 5 minutes, not a second before, counted
//! from the later of its `started` report's time and the control plane's clock; one session the
//! store fails on does not stop a sweep or a delete from ending the others.

use integration_tests::{
    TestStore, acme_with_voice, parts, ready_agent, session_report, start_session,
};
use serde_json::json;
use shared::agent::AgentStore;
use shared::auth::{ApiKey, Principal};
use shared::session::lifecycle::{Ended, SessionRetention, sweep};
use shared::session::report::SessionReportOutcome;
use shared::session::{SessionRecord, SessionState, SessionStore, completion};
use shared::testing::faults::FailsOneSession;
use time::{Duration, OffsetDateTime};

const KEPT: SessionRetention = SessionRetention(Duration::days(30));
/// What the contract gives a started session past its `maxSessionDuration`.
const GRACE: Duration = Duration::minutes(5);

async fn started_session(store: &TestStore, key: &ApiKey, agent: &str) -> String {
    let (status, answer) = parts(start_session(store, key, agent, None).await);
    assert_eq!(status, 200, "{answer}");
    answer["sessionId"].as_str().unwrap().to_owned()
}

/// The session `id` of the agent's service (read by id: the agent may be gone).
async fn session(store: &TestStore, owner: &Principal, service: &str, id: &str) -> SessionRecord {
    let read = store.store.get_session(&owner.namespace, service, id);
    read.await.unwrap().expect("the session")
}

/// The session reported `started`, observed at `at` (whole seconds).
async fn report_started(store: &TestStore, owner: &Principal, id: &str, at: OffsetDateTime) {
    let observed = at.format(&time::format_description::well_known::Rfc3339);
    let outcome = session_report(
        store,
        json!({"namespace": owner.namespace, "agent": "voice",
        "sessionId": id, "state": "started", "observedAt": observed.unwrap(),
        "wsUrl": "wss://agent.example/s"}),
    )
    .await;
    assert_eq!(outcome, SessionReportOutcome::Applied);
}

/// The session's `maxSessionDuration`.
fn max_duration(session: &SessionRecord) -> Duration {
    Duration::seconds(i64::from(session.max_duration_seconds))
}

/// Sweeps at `ends_by - 1 s` (nothing ends) and at `ends_by` (the session ends `expired`).
async fn expires_at_exactly(
    store: &TestStore,
    owner: &Principal,
    id: &str,
    ends_by: OffsetDateTime,
) {
    let service = store.service_of(&owner.namespace, "voice").await;
    let early = sweep(&store.store, ends_by - Duration::seconds(1), KEPT).await;
    assert_eq!(
        early.unwrap(),
        Ended::default(),
        "ended before its deadline"
    );
    let kept = session(store, owner, &service, id).await;
    assert_eq!(kept.state, SessionState::Started);

    let due = sweep(&store.store, ends_by, KEPT).await.unwrap();
    assert_eq!(
        due,
        Ended {
            ended: 1,
            ..Ended::default()
        }
    );
    let ended = session(store, owner, &service, id).await;
    assert_eq!(ended.state, SessionState::Ended);
    assert_eq!(
        ended.completion_status.as_deref(),
        Some(completion::EXPIRED)
    );
}

#[tokio::test]
async fn a_started_session_expires_five_minutes_after_its_maximum_duration_from_a_report_ahead_of_the_clock()
 {
    let (store, owner, key, _) = acme_with_voice().await;
    let id = started_session(&store, &key, "voice").await;
    // Ahead of the control plane's clock, within the reports' window (5 minutes ahead).
    let observed = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap() + Duration::minutes(4);
    report_started(&store, &owner, &id, observed).await;

    let service = store.service_of(&owner.namespace, "voice").await;
    let started = session(&store, &owner, &service, &id).await;
    expires_at_exactly(
        &store,
        &owner,
        &id,
        observed + max_duration(&started) + GRACE,
    )
    .await;
}

#[tokio::test]
async fn a_started_session_reported_behind_the_clock_expires_counted_from_the_clock() {
    let (store, owner, key, _) = acme_with_voice().await;
    let id = started_session(&store, &key, "voice").await;
    let clock = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    report_started(&store, &owner, &id, clock - Duration::minutes(10)).await;
    let reported = OffsetDateTime::now_utc();

    let service = store.service_of(&owner.namespace, "voice").await;
    let started = session(&store, &owner, &service, &id).await;
    let duration = max_duration(&started);
    let deadline = started.deadline.expect("a started session's deadline");
    assert!(
        (clock + duration + GRACE).unix_timestamp() <= deadline
            && deadline <= (reported + duration + GRACE).unix_timestamp(),
        "the deadline {deadline} counts from the clock at the report"
    );
    // Counted from the report's own time, it would have ended 10 minutes earlier.
    let early = sweep(
        &store.store,
        clock + duration + GRACE - Duration::seconds(1),
        KEPT,
    )
    .await;
    assert_eq!(
        early.unwrap(),
        Ended::default(),
        "ended before its deadline"
    );
    let ends_by = OffsetDateTime::from_unix_timestamp(deadline).unwrap();
    expires_at_exactly(&store, &owner, &id, ends_by).await;
}

/// More sessions than are ended at once (10), so that some come after the one that fails.
const SESSIONS: usize = 25;

/// `agent` (room for [`SESSIONS`]) with [`SESSIONS`] sessions started, none reported.
async fn busy_agent(
    store: &TestStore,
    owner: &Principal,
    key: &ApiKey,
    agent: &str,
) -> Vec<String> {
    let body = json!({"image": "ghcr.io/acme/a:1", "autoScaling": {"maxAgents": SESSIONS}});
    ready_agent(store, owner, key, agent, body).await;
    let mut ids = Vec::new();
    for _ in 0..SESSIONS {
        ids.push(started_session(store, key, agent).await);
    }
    ids
}

/// The sessions of `ids` in each state, and the agent's count of active sessions.
async fn states(
    store: &TestStore,
    owner: &Principal,
    agent: &str,
    service: &str,
    ids: &[String],
) -> (Vec<(String, SessionState, Option<String>)>, u32) {
    let mut states = Vec::new();
    for id in ids {
        let read = session(store, owner, service, id).await;
        states.push((read.session_id, read.state, read.completion_status));
    }
    let counted = store
        .store
        .get_agent(&owner.namespace, agent)
        .await
        .unwrap();
    (states, counted.map_or(0, |agent| agent.active_sessions))
}

#[tokio::test]
async fn one_session_the_store_fails_on_does_not_stop_a_sweep_from_ending_the_others() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let ids = busy_agent(&store, &owner, &key, "voice").await;
    let service = store.service_of(&owner.namespace, "voice").await;
    let faulty = FailsOneSession::new(store.store.clone());
    let past_start =
        OffsetDateTime::now_utc() + shared::session::START_TIMEOUT + Duration::minutes(1);

    let swept = sweep(&faulty, past_start, KEPT).await;
    let error = swept.expect_err("the sweep fails, so that it is retried and alarmed on");
    assert_eq!(
        error.outcome,
        Ended {
            ended: SESSIONS - 1,
            passed: 0,
            failed: 1
        },
        "{error}"
    );
    let failing = faulty.failing().expect("a session the store failed on");
    let (read, active) = states(&store, &owner, "voice", &service, &ids).await;
    for (id, state, completion) in read {
        match id == failing {
            true => assert_eq!(state, SessionState::Starting, "left to the next sweep"),
            false => assert_eq!(
                (state, completion.as_deref()),
                (SessionState::Failed, Some(completion::START_TIMEOUT)),
                "{id}"
            ),
        }
    }
    assert_eq!(active, 1, "each ended session freed its place");
    // The next sweep ends it.
    let next = sweep(&store.store, past_start, KEPT).await.unwrap();
    assert_eq!(
        next,
        Ended {
            ended: 1,
            ..Ended::default()
        }
    );
}

#[tokio::test]
async fn one_session_the_store_fails_on_does_not_stop_a_delete_from_ending_the_others() {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let ids = busy_agent(&store, &owner, &key, "voice").await;
    let service = store.service_of(&owner.namespace, "voice").await;
    let faulty = FailsOneSession::new(store.store.clone());

    let request = integration_tests::agent_request("DELETE", &key, "voice", None);
    let deleted = delete_agent::handle(&store.store, &faulty, &store.store, KEPT, request).await;
    let (status, body) = parts(deleted);
    assert_eq!(status, 200, "the agent is deleted: {body}");
    let failing = faulty.failing().expect("a session the store failed on");
    let (read, _) = states(&store, &owner, "voice", &service, &ids).await;
    for (id, state, completion) in read {
        match id == failing {
            true => assert_eq!(state, SessionState::Starting, "left to the sweep"),
            false => assert_eq!(
                (state, completion.as_deref()),
                (SessionState::Ended, Some(completion::AGENT_DELETED)),
                "{id}"
            ),
        }
    }
}
