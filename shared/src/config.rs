//! Configuration, read once at cold start from the environment. A missing variable stops the
//! function at init (fail fast) instead of failing every request.

use std::env;

#[derive(Debug, thiserror::Error)]
#[error("environment variable {0} must be set")]
pub struct MissingVariable(pub &'static str);

/// Names of the DynamoDB tables and, for local runs, the endpoint to reach them at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub agents_table: String,
    pub accounts_table: String,
    /// `DYNAMODB_ENDPOINT`, set for DynamoDB Local; unset on AWS.
    pub dynamodb_endpoint: Option<String>,
}

pub const AGENTS_TABLE: &str = "AGENTS_TABLE";
pub const ACCOUNTS_TABLE: &str = "ACCOUNTS_TABLE";
pub const DYNAMODB_ENDPOINT: &str = "DYNAMODB_ENDPOINT";

pub fn required(name: &'static str) -> Result<String, MissingVariable> {
    env::var(name)
        .ok()
        .filter(|value| !value.is_empty())
        .ok_or(MissingVariable(name))
}

pub fn optional(name: &str) -> Option<String> {
    env::var(name).ok().filter(|value| !value.is_empty())
}

impl Config {
    pub fn from_env() -> Result<Self, MissingVariable> {
        Ok(Config {
            agents_table: required(AGENTS_TABLE)?,
            accounts_table: required(ACCOUNTS_TABLE)?,
            dynamodb_endpoint: optional(DYNAMODB_ENDPOINT),
        })
    }
}
