//! Configuration, read once at cold start from the environment. A missing variable stops the
//! function at init (fail fast) instead of failing every request.

use std::env;

#[derive(Debug, thiserror::Error)]
#[error("environment variable {0} must be set")]
pub struct MissingVariable(pub &'static str);

/// Table names; a function reads only those it uses, the rest stay empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableNames {
    pub agents: String,
    pub accounts: String,
    pub logs: String,
}

impl TableNames {
    /// The name given to the table that `variable` (e.g. `LOGS_TABLE`) names.
    pub fn by_variable(&self, variable: &str) -> Option<&str> {
        match variable {
            AGENTS_TABLE => Some(&self.agents),
            ACCOUNTS_TABLE => Some(&self.accounts),
            LOGS_TABLE => Some(&self.logs),
            _ => None,
        }
    }
}

/// Everything a function is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub tables: TableNames,
    /// `DYNAMODB_ENDPOINT`, set for DynamoDB Local; unset on AWS.
    pub dynamodb_endpoint: Option<String>,
    /// Days a log line is kept (`LOG_RETENTION_DAYS`, default 30).
    pub log_retention_days: u32,
}

pub const AGENTS_TABLE: &str = "AGENTS_TABLE";
pub const ACCOUNTS_TABLE: &str = "ACCOUNTS_TABLE";
pub const LOGS_TABLE: &str = "LOGS_TABLE";
pub const DYNAMODB_ENDPOINT: &str = "DYNAMODB_ENDPOINT";
pub const LOG_RETENTION_DAYS: &str = "LOG_RETENTION_DAYS";
pub const DEFAULT_LOG_RETENTION_DAYS: u32 = 30;
/// The agents bus: the stream publisher sends the control plane's events onto it, the data
/// plane its reports.
pub const EVENT_BUS_NAME: &str = "EVENT_BUS_NAME";
/// EventBridge's endpoint, set for an emulator (moto's server); unset on AWS.
pub const EVENTBRIDGE_ENDPOINT: &str = "EVENTBRIDGE_ENDPOINT";
/// The KMS key secret values' data keys are made under (its ARN or id).
pub const SECRETS_KEY_ID: &str = "SECRETS_KEY_ID";
/// KMS's endpoint, set for an emulator (moto's server); unset on AWS.
pub const KMS_ENDPOINT: &str = "KMS_ENDPOINT";
/// The Secrets Manager secret (its ARN or name) logs and list cursors are signed with.
pub const CURSOR_SECRET_ID: &str = "CURSOR_SECRET_ID";
/// Secrets Manager's endpoint, set for an emulator (moto's server); unset on AWS.
pub const SECRETS_MANAGER_ENDPOINT: &str = "SECRETS_MANAGER_ENDPOINT";
/// Seconds a session start waits for the data plane's report (`SessionStartWaitSeconds`).
pub const SESSION_START_WAIT_SECONDS: &str = "SESSION_START_WAIT_SECONDS";
pub const DEFAULT_SESSION_START_WAIT_SECONDS: u64 = 10;
/// The most a start may wait: the start function's timeout (25 s) stays above it, and API
/// Gateway's 29 s above that.
pub const MAX_SESSION_START_WAIT_SECONDS: u64 = 20;
/// The engine this stack runs agents on, named in every manifest: `ecs-fargate` (template.yaml
/// sets it for every function), `docker` or `simulated` (scripts/stack.sh, locally).
pub const DEPLOYMENT_MODE: &str = "DEPLOYMENT_MODE";
/// The stack's REST API (its `RestApiId` output): the gateway-keys function and the operator
/// command.
pub const REST_API_ID: &str = "REST_API_ID";
/// The REST API's stage (the `ApiStage` output).
pub const API_STAGE: &str = "API_STAGE";
/// The default per-account usage plan (the `AccountsUsagePlanId` output).
pub const ACCOUNTS_USAGE_PLAN_ID: &str = "ACCOUNTS_USAGE_PLAN_ID";
/// API Gateway's endpoint, set for an emulator (moto's server); unset on AWS.
pub const APIGATEWAY_ENDPOINT: &str = "APIGATEWAY_ENDPOINT";
/// The gateway-keys function the post-confirmation trigger invokes, by name; unset locally (no
/// usage plans there), and then no key is asked for.
pub const GATEWAY_KEYS_FUNCTION: &str = "GATEWAY_KEYS_FUNCTION";
/// Lambda's endpoint, set for an emulator; unset on AWS.
pub const LAMBDA_ENDPOINT: &str = "LAMBDA_ENDPOINT";
/// The region Lambda runs a function in.
pub const AWS_REGION: &str = "AWS_REGION";
/// The region of local runs when the environment names none (DynamoDB Local and moto ignore it).
pub const LOCAL_REGION: &str = "us-east-1";

/// The region this service runs in (a secret set's `region`).
pub fn region() -> String {
    optional(AWS_REGION).unwrap_or_else(|| LOCAL_REGION.to_owned())
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Missing(#[from] MissingVariable),
    #[error("environment variable {0} must be a whole number of days from 1 to 3650")]
    BadRetention(&'static str),
    #[error("environment variable {0} must be a whole number of seconds from 0 to 20")]
    BadWait(&'static str),
}

/// How long a session start waits for the data plane's report.
pub fn session_start_wait() -> Result<std::time::Duration, ConfigError> {
    start_wait_of(optional(SESSION_START_WAIT_SECONDS))
}

/// The start's wait `SESSION_START_WAIT_SECONDS` gives (unset: the default).
pub fn start_wait_of(variable: Option<String>) -> Result<std::time::Duration, ConfigError> {
    let seconds = match variable {
        None => DEFAULT_SESSION_START_WAIT_SECONDS,
        Some(seconds) => seconds
            .parse()
            .ok()
            .filter(|seconds| *seconds <= MAX_SESSION_START_WAIT_SECONDS)
            .ok_or(ConfigError::BadWait(SESSION_START_WAIT_SECONDS))?,
    };
    Ok(std::time::Duration::from_secs(seconds))
}

/// The days `LOG_RETENTION_DAYS` gives: a whole number from 1 to 3650 (ten years; CloudWatch
/// Logs' longest retention but one is 3653).
pub fn log_retention_days_of(value: &str) -> Option<u32> {
    value.parse().ok().filter(|days| (1..=3650).contains(days))
}

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
    /// Reads the configuration; each table variable named in `tables` must be set.
    pub fn from_env(tables: &[&'static str]) -> Result<Self, ConfigError> {
        let table = |name: &'static str| -> Result<String, MissingVariable> {
            if tables.contains(&name) {
                required(name)
            } else {
                Ok(optional(name).unwrap_or_default())
            }
        };
        let log_retention_days = match optional(LOG_RETENTION_DAYS) {
            None => DEFAULT_LOG_RETENTION_DAYS,
            Some(days) => {
                log_retention_days_of(&days).ok_or(ConfigError::BadRetention(LOG_RETENTION_DAYS))?
            }
        };
        Ok(Config {
            tables: TableNames {
                agents: table(AGENTS_TABLE)?,
                accounts: table(ACCOUNTS_TABLE)?,
                logs: table(LOGS_TABLE)?,
            },
            dynamodb_endpoint: optional(DYNAMODB_ENDPOINT),
            log_retention_days,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_start_waits_ten_seconds_unless_told_from_0_to_20() {
        let wait = |value: Option<&str>| start_wait_of(value.map(str::to_owned)).ok();
        assert_eq!(wait(None), Some(Duration::from_secs(10)));
        assert_eq!(wait(Some("0")), Some(Duration::ZERO));
        assert_eq!(wait(Some("20")), Some(Duration::from_secs(20)));
        for refused in ["21", "-1", "ten", "1.5"] {
            assert_eq!(wait(Some(refused)), None, "{refused}");
        }
    }
}
