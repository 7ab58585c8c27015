//! Agents: their configuration and its rules (`config`), what is kept of them (`record`), the
//! object the API answers (`view`) with its revisions (`revision`), the data plane's reports
//! (`status`), the port a store implements (`store`) and the secret sets a configuration names
//! (`set_use`), what each operation does over the port (`lifecycle`), and the list answer
//! (`listing`).

pub mod config;
pub mod lifecycle;
pub mod listing;
pub mod record;
pub mod revision;
mod set_use;
pub mod status;
mod store;
pub mod view;

pub use config::{AgentConfig, ConfigChanges};
pub use record::{
    AgentRecord, Deployment, DeploymentError, DeploymentRecord, DeploymentState, DeploymentStatus,
    Serving,
};
pub use set_use::{NamedSet, SetMember, SetUse};
pub use status::{ReportOutcome, StatusReport};
pub use store::{
    AgentPage, AgentRef, AgentStore, Change, CreateOutcome, DeploymentPage, WriteOutcome,
};
pub use view::{Agent, AgentDetail, AgentRead, NoiseVivaStatus};
