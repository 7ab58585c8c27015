//! What the events/ fixtures assume is stored, for the tests that feed them to the functions (on
//! the in-memory store and, through `sam local invoke`, on DynamoDB Local). Feature
//! `test-support` only.

pub mod data_keys;
pub mod faults;
/// What a function logs, as the JSON lines Lambda gets.
pub mod logs;
/// The requests an AWS SDK client sends, recorded.
pub mod requests;
pub mod store_contract;

use crate::agent::{AgentRecord, AgentStore, ConfigChanges, CreateOutcome};
use crate::auth::Principal;
use crate::error::StoreError;
use crate::session::{
    Connection, SessionRecord, SessionRequest, SessionStore, SessionWrite, StartOutcome,
};

/// The account the fixtures' authorizer context names for the dev agents.
pub fn dev_owner() -> Principal {
    Principal {
        account_id: "dev".into(),
        namespace: "dev-local".into(),
    }
}

/// The account the session fixtures' authorizer context names: apart from `dev-local`, whose
/// agents the agent fixtures list and count.
pub fn session_fixtures_owner() -> Principal {
    Principal {
        account_id: "dev-sessions".into(),
        namespace: "dev-sessions-local".into(),
    }
}

/// The agent the session fixtures start sessions of: its deployment is ready.
pub const SESSION_FIXTURE_AGENT: &str = "voice-bot";

/// The session of `voice-bot` the session fixtures read and stop: started, connected.
pub const SESSION_FIXTURE_ID: &str = "019ab7c2-4e10-7a3c-9f21-6d0e5b8c1a2f";

/// The active deployment of `demo-agent` that events/ingest-logs.json's stream and
/// events/deployment-status.json name.
pub const DEMO_DEPLOYMENT_ID: &str = "4b1d6c0e-2f55-4c39-9d0e-8a2b9c7e1f00";

/// The agents of the fixtures, in `dev-local`: `demo-agent` (read, reported on, logged to),
/// `video-bot` (updated) and `old-bot` (deleted), each apart so that the fixtures can run in any
/// order; in the session fixtures' account, `voice-bot`, ready to take sessions.
pub async fn seed_fixture_agents<S: AgentStore + SessionStore>(
    store: &S,
) -> Result<Vec<AgentRecord>, StoreError> {
    let mut seeded = Vec::new();
    let agents = [
        (dev_owner(), "demo-agent"),
        (dev_owner(), "video-bot"),
        (dev_owner(), "old-bot"),
        (session_fixtures_owner(), SESSION_FIXTURE_AGENT),
    ];
    for (owner, name) in agents {
        let body = serde_json::json!({"serviceName": name, "image": "ghcr.io/acme/demo-agent:1.0"});
        let (name, config) = ConfigChanges::from_json(body)
            .and_then(ConfigChanges::into_new_agent)
            .map_err(|error| StoreError::Unexpected(error.to_string().into()))?;
        let mut agent = AgentRecord::new(
            &owner,
            &name,
            config,
            crate::manifest::DeploymentMode::Simulated,
            "2026-11-22T19:00:00.000Z",
        );
        if name == "demo-agent" {
            agent.active.deployment.id = DEMO_DEPLOYMENT_ID.to_owned();
        }
        if name == SESSION_FIXTURE_AGENT {
            agent.active.status.state = crate::agent::DeploymentState::Ready;
        }
        match store.create_agent(&agent, None).await? {
            CreateOutcome::Created if name == SESSION_FIXTURE_AGENT => {
                seed_fixture_session(store, &agent).await?;
                seeded.push(agent);
            }
            CreateOutcome::Created => seeded.push(agent),
            other => {
                return Err(StoreError::Unexpected(
                    format!("seeding {name}: {other:?}").into(),
                ));
            }
        }
    }
    Ok(seeded)
}

/// [`SESSION_FIXTURE_ID`], started on `agent` and reported started with a simulated address.
async fn seed_fixture_session<S: SessionStore>(
    store: &S,
    agent: &AgentRecord,
) -> Result<(), StoreError> {
    // Started now, so that it is within its deadline while the fixtures run against it.
    let at = time::OffsetDateTime::now_utc();
    let deployment = agent.active.deployment.id.as_str();
    let mut session = SessionRecord::new(agent, deployment, SessionRequest::default(), at);
    session.session_id = SESSION_FIXTURE_ID.to_owned();
    let unexpected = |what: String| StoreError::Unexpected(what.into());
    match store.start_session(&session).await? {
        StartOutcome::Started => {}
        other => return Err(unexpected(format!("seeding the session: {other:?}"))),
    }
    let connection = Connection {
        ws_url: Some(format!("ws://simulated.invalid/{SESSION_FIXTURE_ID}")),
        ..Connection::default()
    };
    let started = session.started(connection, at, at);
    match store.write_session(&session, &started).await? {
        SessionWrite::Written => Ok(()),
        other => Err(unexpected(format!("seeding the session: {other:?}"))),
    }
}

/// The event of `events/{name}`, as its source (EventBridge, the authorizer's gateway) hands it
/// to a function.
pub fn fixture_event<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The event of `events/{name}`, as API Gateway hands it to a function.
#[cfg(feature = "http-edge")]
pub fn fixture_request(name: &str) -> lambda_http::Request {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    crate::lambda::request_from_event(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// An in-memory store holding what the fixtures assume ([`seed_fixture_agents`],
/// [`seed_fixture_sets`]).
pub async fn seeded_memory_store() -> crate::store::memory::MemoryStore {
    let store = crate::store::memory::MemoryStore::default();
    seed_fixture_agents(&store)
        .await
        .unwrap_or_else(|e| panic!("seeding the fixtures' agents: {e}"));
    seed_fixture_sets(&store)
        .await
        .unwrap_or_else(|e| panic!("seeding the fixtures' sets: {e}"));
    store
}

/// The namespace the create fixtures' authorizer context names.
pub const CREATE_FIXTURES_NAMESPACE: &str = "tiny-ferret-maroon-123";

/// The secret sets of the fixtures: in `dev-local`, `fixture-keys` (read, a key deleted) and
/// `old-keys` (deleted); in the create fixtures' namespace, the sets
/// events/create-agent-full.json names. Their keys' values are left out (no fixture reads one).
pub async fn seed_fixture_sets<S: crate::secrets::store::SecretStore>(
    store: &S,
) -> Result<(), StoreError> {
    use crate::secrets::SetType;
    use crate::secrets::sets::CREDENTIALS_KEY;
    use crate::secrets::store::{KeyEntry, SecretSetRecord};
    let at = "2026-11-24T10:00:00.000Z";
    let dev = dev_owner().namespace;
    for (namespace, name, set_type, keys) in [
        (
            dev.as_str(),
            "fixture-keys",
            SetType::Secret,
            &["OLD_KEY", "OPENAI_API_KEY"][..],
        ),
        (dev.as_str(), "old-keys", SetType::Secret, &["A"][..]),
        (
            CREATE_FIXTURES_NAMESPACE,
            "voice-bot-secrets",
            SetType::Secret,
            &["OPENAI_API_KEY"][..],
        ),
        (
            CREATE_FIXTURES_NAMESPACE,
            "ghcr-pull",
            SetType::ImagePullSecret,
            &[CREDENTIALS_KEY][..],
        ),
    ] {
        let set = SecretSetRecord {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            set_type,
            host: (set_type == SetType::ImagePullSecret).then(|| "ghcr.io".to_owned()),
            keys: keys
                .iter()
                .map(|key| {
                    let entry = KeyEntry {
                        value_id: format!("fixture-{key}"),
                        bytes: 8,
                        updated_at: at.to_owned(),
                    };
                    (key.to_string(), entry)
                })
                .collect(),
            used_by: Default::default(),
            version: 1,
            created_at: at.to_owned(),
            updated_at: at.to_owned(),
        };
        store.write_set(None, &set).await?;
    }
    Ok(())
}

/// The person the keys fixtures' authorizer context names (`personId`), of the dev account.
pub const FIXTURE_PERSON_ID: &str = "dev-person";
/// The id of the key events/keys-revoke.json revokes, kept by [`seed_fixture_person`].
pub const FIXTURE_KEY_ID: &str = "f1f1f1f1f1f1";

/// What the keys fixtures assume: the dev account, its person [`FIXTURE_PERSON_ID`] and a key
/// of id [`FIXTURE_KEY_ID`] (kept by a made-up hash: no fixture presents the key itself).
pub async fn seed_fixture_person<S: crate::account::AccountStore>(
    store: &S,
) -> Result<(), crate::account::AccountError> {
    use crate::account::{AddedKey, KeyLabel};
    use crate::auth::{KeyHash, KeyKind, KeyRecord, PersonRecord};
    let owner = dev_owner();
    let at = "2026-11-26T14:00:00.000Z";
    crate::account::ensure_account(store, &owner.account_id, Some(&owner.namespace)).await?;
    crate::account::add_person(
        store,
        &PersonRecord {
            person_id: FIXTURE_PERSON_ID.to_owned(),
            account_id: owner.account_id.clone(),
            namespace: owner.namespace.clone(),
            email: "dev@example.com".to_owned(),
            created_at: at.to_owned(),
        },
    )
    .await?;
    let hash = KeyHash::from_hex(FIXTURE_KEY_ID.repeat(6)[..64].to_owned());
    let record = KeyRecord {
        key_id: hash.key_id().to_owned(),
        kind: KeyKind::Private,
        account_id: owner.account_id,
        namespace: owner.namespace,
        created_at: at.to_owned(),
        revoked_at: None,
    };
    let label = KeyLabel {
        name: "fixture".to_owned(),
        hint: "ahk_Fix1".to_owned(),
    };
    match store.add_key(&hash, &record, &label).await? {
        AddedKey::Added => Ok(()),
        other => {
            Err(StoreError::Unexpected(format!("seeding the fixture key: {other:?}").into()).into())
        }
    }
}

/// A session of a ready agent on the in-memory store, as a start left it (for the session
/// lifecycle's unit tests).
#[cfg(test)]
pub async fn started_session() -> (
    std::sync::Arc<crate::store::memory::MemoryStore>,
    SessionRecord,
) {
    let store = std::sync::Arc::new(crate::store::memory::MemoryStore::default());
    let mut agent = crate::agent::record::tests::record();
    agent.active.status.state = crate::agent::DeploymentState::Ready;
    store.create_agent(&agent, None).await.unwrap();
    let at = time::macros::datetime!(2026-11-25 10:00 UTC);
    let request = SessionRequest::default();
    let session =
        crate::session::lifecycle::start(&*store, &*store, &agent.owner, &agent.name, &request, at)
            .await
            .unwrap();
    (store, session)
}
