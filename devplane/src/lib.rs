//! The development data plane (contract sections 7 and 11, locally): the stream publisher's own
//! code (shared::stream_events) run on DynamoDB Local's stream of the agents table (`stream`),
//! template.yaml's rules deciding where each event goes (`rules`), and a simulated cluster
//! that answers each requested deployment (`cluster`) and session (`sessions`) with what a
//! cluster would send (`outbox`): reports delivered by the bus's rules to the status functions
//! through Lambda's Invoke API, a few at a time, and a session's log lines to the ingest
//! function, keeping its place in the stream between runs (`checkpoint`); the template's
//! schedules run as EventBridge runs them (`functions`); and what each deployment would receive
//! of its secret sets, opened as a data plane opens them, logged by key name (`secrets`).
//! Which data plane answers the published events: the one on the Docker Engine, or the
//! simulation (`plane`); the stream's records read and published as the publisher does (`published`).
//! Beside it, the local gateway in front of cargo lambda watch (`gateway`, the dev-gateway binary).

pub mod checkpoint;
pub mod cluster;
pub mod functions;
pub mod gateway;
pub mod outbox;
pub mod plane;
pub mod published;
pub mod rules;
pub mod secrets;
pub mod sessions;
pub mod stream;
