//! A session of a ready agent on the in-memory store, as a start left it.

use super::start;
use crate::agent::AgentStore;
use crate::agent::DeploymentState;
use crate::agent::record::tests::record;
use crate::session::SessionRecord;
use crate::session::SessionRequest;
use crate::store::memory::MemoryStore;
use std::sync::Arc;

pub async fn started_session() -> (Arc<MemoryStore>, SessionRecord) {
    let store = Arc::new(MemoryStore::default());
    let mut agent = record();
    agent.active.status.state = DeploymentState::Ready;
    store.create_agent(&agent, None).await.unwrap();
    let at = "2026-11-25T10:00:00.000Z";
    let session = start(
        &*store,
        &*store,
        &agent.owner,
        &agent.name,
        &SessionRequest::default(),
        at,
    )
    .await
    .unwrap();
    (store, session)
}
