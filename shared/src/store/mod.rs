//! Adapters of the ports the domain defines beside its types (`agent::AgentStore`,
//! `auth::KeyStore`, `logs::LogStore`, `secrets::SecretStore`, `secrets::DataKeys`): [`dynamodb`],
//! the real one, where all item mapping lives; [`kms`], the data keys of secret values;
//! `eventbridge`, the agents bus (`stream_events::EventBus`, feature `eventbridge`: only the
//! stream publisher links the EventBridge client);
//! [`cursor_secret`], the key cursors are signed with;
//! and [`memory`], an in-memory fake for fast handler tests (feature `test-support`), never the
//! only test of storage. `store` depends on the domain, never the other way round.

pub mod cursor_secret;
pub mod dynamodb;
#[cfg(feature = "eventbridge")]
pub mod eventbridge;
pub mod kms;
#[cfg(any(test, feature = "test-support"))]
pub mod memory;
pub mod tables;
