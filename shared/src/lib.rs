//! Everything the functions share: the domain (agents, manifests, API keys), its validation,
//! the one error type and its mapping to HTTP, and the DynamoDB adapter behind small traits.
//!
//! Layout (hexagonal): `agent`, `manifest`, `validation`, `auth`, `idempotency`, `secrets` and `logs` are the
//! domain and know nothing of DynamoDB or Lambda; each port (store trait) lives beside the types
//! it takes (`agent::AgentStore`, `auth::KeyStore`, `logs::LogStore`), with `error::StoreError`;
//! `store` only implements them (DynamoDB, and an in-memory fake for tests); `http` is the only
//! place that turns results into responses.

pub mod account;
pub mod agent;
pub mod auth;
pub mod aws;
pub mod catalog;
pub mod config;
pub mod cursor;
pub mod error;
#[cfg(feature = "gateway")]
pub mod gateway;
#[cfg(feature = "http-edge")]
pub mod http;
pub mod idempotency;
#[cfg(feature = "http-edge")]
pub mod lambda;
pub mod logs;
pub mod manifest;
pub mod namespace;
pub mod paging;
pub mod people;
pub mod races;
pub mod secrets;
pub mod session;
pub mod store;
pub mod stream_events;
pub mod strict_json;
pub mod telemetry;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod timestamp;
pub mod validation;

pub use error::{ApiError, StoreError};
