//! Agents: their configuration and its rules (`config`), what is kept of them and the object the
//! API answers (`record`), the data plane's reports (`status`), the port a store implements
//! (`store`), what each operation does over it (`lifecycle`), and the list answer (`listing`).

pub mod config;
pub mod lifecycle;
pub mod listing;
pub mod record;
pub mod status;
mod store;

pub use config::{AgentConfig, ConfigChanges};
pub use record::{
    Agent, AgentRecord, Deployment, DeploymentError, DeploymentRecord, DeploymentState,
    DeploymentStatus, NoiseVivaStatus, Serving,
};
pub use status::{ReportOutcome, StatusReport};
pub use store::{AgentPage, AgentStore, Change, CreateOutcome, WriteOutcome};
