//! The development data plane (contract section 7, locally): template.yaml's pipes run on
//! DynamoDB Local's stream of the agents table (`pipes`, `stream`), and a simulated cluster that
//! answers each requested deployment with the reports a cluster would send (`cluster`), delivered
//! by the bus's rule to the status function through Lambda's Invoke API, a few at a time, keeping
//! its place in the stream between runs (`checkpoint`); and what each deployment would receive
//! of its secret sets, opened as a data plane opens them, logged by key name (`secrets`).

pub mod checkpoint;
pub mod cluster;
pub mod pipes;
pub mod secrets;
pub mod stream;
