//! What the operator command does beyond one call of the store (`agent-hosting-admin`, main.rs).

pub mod accounts;
pub mod error;
pub mod gateway;
pub mod people;
pub mod replay;
