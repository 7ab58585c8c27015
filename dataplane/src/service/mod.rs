//! The data plane as a service on AWS (issue 33; docs/operations.md, "The data plane on AWS"):
//! one long-running Fargate task runs the same [`crate::reconciler::DataPlane`] as `make run`
//! does, on the [`crate::ecs::EcsEngine`]. What it needs apart from the engine, each its own
//! file:
//! - [`settings`]: what the stack gives it, read once from the environment;
//! - [`inbox`]: the control plane's events and ECS's Task State Change events, from SQS;
//! - [`reports`]: `Deployment Status` and `Session Status` onto the bus, a replica's lines into
//!   section 5's log streams (whose subscription delivers them to ingest-logs).

pub mod bus;
pub mod inbox;
pub mod log_sink;
pub mod reports;
pub mod settings;
