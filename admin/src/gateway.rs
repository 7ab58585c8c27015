//! An account's gateway key and usage plan: `shared::gateway`, the one implementation the
//! operator command shares with the gateway-keys function (which makes a self-signed-up
//! account's key).

pub use shared::gateway::*;
