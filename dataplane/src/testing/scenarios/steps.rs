//! The steps many scenarios take on the way to what they check: a deployment of the example
//! agent made ready, a session asked for and started, a session's `started` and `ended`.

use serde_json::{Value, json};

use super::{Harness, Running, WAIT};
use crate::events::AgentRef;
use crate::ports::SessionStatus;

impl<H: Harness> Running<H> {
    /// Deploys the example agent, no options, with `min`..=`max` replicas and waits (up to
    /// [`WAIT`]) for its first `ready`; the deployment's id.
    pub async fn ready_deployment(
        &self,
        harness: &H,
        agent: &AgentRef,
        scaling: (u32, u32),
    ) -> String {
        let deployment = self
            .deploy(agent, &harness.example_image(), scaling, json!({}))
            .await;
        self.ready(&deployment).await;
        deployment
    }

    /// Asks for a session of the deployment with the `/bot` body given and waits (up to
    /// [`WAIT`]) for its `started`; its id.
    pub async fn started_session(
        &self,
        agent: &AgentRef,
        deployment_id: &str,
        body: Value,
    ) -> String {
        let session = self.request_session(agent, deployment_id, body).await;
        self.started(&session).await;
        session
    }

    /// The session's `started` report, waiting up to [`WAIT`].
    pub async fn started(&self, session_id: &str) -> SessionStatus {
        self.reports
            .wait_for_session_state(WAIT, session_id, "started")
            .await
    }

    /// The session's `ended` report, waiting up to [`WAIT`].
    pub async fn ended(&self, session_id: &str) -> SessionStatus {
        self.reports
            .wait_for_session_state(WAIT, session_id, "ended")
            .await
    }
}
