//! The data plane (contract section 12): each agent's image runs as replicas on a container
//! engine, each replica takes at most one session, and what it writes reaches the logs.
//!
//! The decisions (how many replicas, which takes a session, when one is replaced, what is
//! reported) are made once, in [`reconciler`], above an [`engine::Engine`] that only runs
//! containers and says what became of them; docs/data-plane.md describes it. Ports
//! beside the domain:
//! - [`engine`]: the container engine ([`docker`] here, ECS on Fargate with issue 33);
//! - [`ports`]: where reports and lines go;
//! - [`replica`]: what a replica is (its spec, labels, limits, what became of it);
//! - [`events`]: the control plane's events as the data plane takes them;
//! - [`agent_holder`] (holder/, a crate of its own): the replica's holder of a session's
//!   `POST /bot`, its server and its client, and the container contract (`/readyz`,
//!   `POST /bot`), the anchor's;
//! - [`logs`]: a replica's lines, carried to the ingest path under the right stream;
//! - [`recovery`]: what should run, read from the agents table when a data plane starts;
//! - [`service`]: the data plane on AWS: its settings, its inbox (SQS) and its reports.

pub mod docker;
pub mod ecs;
pub mod engine;
pub mod events;
pub mod logs;
pub mod ports;
pub mod reconciler;
pub mod recovery;
pub mod replica;
pub mod service;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
