//! What the stack gives the data plane's service (template.yaml sets exactly these variables),
//! read once at start: a missing or invalid one stops the start with its name, before any
//! replica is touched.

use std::time::Duration;

use shared::config::{AGENTS_TABLE, AWS_REGION, EVENT_BUS_NAME, LOG_RETENTION_DAYS};

use crate::ecs::EcsConfig;

// The data plane's own variables; the ones it shares with the functions are shared::config's.
const STACK_NAME: &str = "STACK_NAME";
const DATA_PLANE_INBOX_URL: &str = "DATA_PLANE_INBOX_URL";
const INGEST_FUNCTION_ARN: &str = "INGEST_FUNCTION_ARN";
const ECS_CLUSTER: &str = "ECS_CLUSTER";
const REPLICA_SUBNETS: &str = "REPLICA_SUBNETS";
const REPLICA_SECURITY_GROUP: &str = "REPLICA_SECURITY_GROUP";
const REPLICA_ASSIGN_PUBLIC_IP: &str = "REPLICA_ASSIGN_PUBLIC_IP";
const REPLICA_EXECUTION_ROLE_ARN: &str = "REPLICA_EXECUTION_ROLE_ARN";
const HOLDER_IMAGE: &str = "HOLDER_IMAGE";
const REPLICA_SECRETS_PREFIX: &str = "REPLICA_SECRETS_PREFIX";
const REPLICA_LOG_GROUP: &str = "REPLICA_LOG_GROUP";
const PLATFORM_LOG_GROUP: &str = "PLATFORM_LOG_GROUP";

/// Between two reads of a task's state or of its lines: every replica's lines are one
/// GetLogEvents per poll, against an account's per-region quota of a few tens a second
/// (CloudWatch Logs' quotas, docs.aws.amazon.com/general/latest/gr/cwl_region.html): 2 s
/// lets that quota follow a few dozen replicas; a shorter poll only makes the lines prompter.
const ECS_POLL: Duration = Duration::from_secs(2);
/// A Fargate task's image pull can take a minute for a large image; past this the run answers
/// anyway and the listing says what became of the task.
const ECS_START_TIMEOUT: Duration = Duration::from_secs(120);

/// The service's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The stack label of its replicas.
    pub stack: String,
    pub agents_table: String,
    pub inbox_url: String,
    /// The agents bus its reports go onto.
    pub event_bus_name: String,
    /// The destination of the agents' log groups' subscription filter.
    pub ingest_function_arn: String,
    /// At least this long (the log sink rounds it up to a retention CloudWatch Logs takes).
    pub log_retention_days: u32,
    /// The cluster's name or ARN.
    pub cluster: String,
    pub replica_subnets: Vec<String>,
    pub replica_security_group: String,
    pub assign_public_ip: bool,
    pub execution_role_arn: String,
    pub holder_image: String,
    pub secrets_prefix: String,
    pub replica_log_group: String,
    pub platform_log_group: String,
    pub region: String,
}

/// A variable the service cannot start without, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("the environment variable {0} is not set")]
    Missing(&'static str),
    #[error("the environment variable {name} is invalid: {reason}")]
    Invalid { name: &'static str, reason: String },
}

impl Settings {
    /// Read from the process's environment.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Read through `variable` (tests give a map).
    pub fn from_lookup(variable: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let text = |name: &'static str| {
            variable(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
                .ok_or(SettingsError::Missing(name))
        };
        Ok(Settings {
            stack: text(STACK_NAME)?,
            agents_table: text(AGENTS_TABLE)?,
            inbox_url: text(DATA_PLANE_INBOX_URL)?,
            event_bus_name: text(EVENT_BUS_NAME)?,
            ingest_function_arn: text(INGEST_FUNCTION_ARN)?,
            log_retention_days: retention(&text(LOG_RETENTION_DAYS)?)?,
            cluster: text(ECS_CLUSTER)?,
            replica_subnets: subnets(&text(REPLICA_SUBNETS)?)?,
            replica_security_group: text(REPLICA_SECURITY_GROUP)?,
            assign_public_ip: public_ip(&text(REPLICA_ASSIGN_PUBLIC_IP)?)?,
            execution_role_arn: text(REPLICA_EXECUTION_ROLE_ARN)?,
            holder_image: text(HOLDER_IMAGE)?,
            secrets_prefix: text(REPLICA_SECRETS_PREFIX)?,
            replica_log_group: text(REPLICA_LOG_GROUP)?,
            platform_log_group: text(PLATFORM_LOG_GROUP)?,
            region: text(AWS_REGION)?,
        })
    }

    /// What the ECS engine is given of them.
    pub fn ecs_config(&self) -> EcsConfig {
        EcsConfig {
            cluster: self.cluster.clone(),
            subnets: self.replica_subnets.clone(),
            security_groups: vec![self.replica_security_group.clone()],
            assign_public_ip: self.assign_public_ip,
            execution_role_arn: self.execution_role_arn.clone(),
            holder_image: self.holder_image.clone(),
            secrets_prefix: self.secrets_prefix.clone(),
            // Secrets Manager's AWS-managed key: the replicas' execution role needs no KMS grant.
            secrets_kms_key: None,
            region: self.region.clone(),
            platform_log_group: self.platform_log_group.clone(),
            replica_log_group: self.replica_log_group.clone(),
            poll: ECS_POLL,
            start_timeout: ECS_START_TIMEOUT,
        }
    }
}

fn invalid(name: &'static str, reason: impl Into<String>) -> SettingsError {
    SettingsError::Invalid {
        name,
        reason: reason.into(),
    }
}

/// `subnet-a,subnet-b`: at least one, none empty.
fn subnets(value: &str) -> Result<Vec<String>, SettingsError> {
    let subnets: Vec<String> = value.split(',').map(|id| id.trim().to_owned()).collect();
    if subnets.iter().any(String::is_empty) {
        return Err(invalid(
            REPLICA_SUBNETS,
            "expected comma-separated subnet ids, found an empty one",
        ));
    }
    Ok(subnets)
}

/// ECS's own words for it, and no others.
fn public_ip(value: &str) -> Result<bool, SettingsError> {
    match value {
        "ENABLED" => Ok(true),
        "DISABLED" => Ok(false),
        other => Err(invalid(
            REPLICA_ASSIGN_PUBLIC_IP,
            format!("expected ENABLED or DISABLED, found {other:?}"),
        )),
    }
}

/// A whole number of days, as the functions read it.
fn retention(value: &str) -> Result<u32, SettingsError> {
    shared::config::log_retention_days_of(value).ok_or_else(|| {
        invalid(
            LOG_RETENTION_DAYS,
            format!("expected a whole number of days from 1 to 3650, found {value:?}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn environment() -> HashMap<&'static str, String> {
        [
            ("STACK_NAME", "agent-hosting"),
            ("AGENTS_TABLE", "agents"),
            (
                "DATA_PLANE_INBOX_URL",
                "https://sqs.us-east-1.amazonaws.com/123456789012/inbox",
            ),
            ("EVENT_BUS_NAME", "agents"),
            (
                "INGEST_FUNCTION_ARN",
                "arn:aws:lambda:us-east-1:123456789012:function:ingest",
            ),
            ("LOG_RETENTION_DAYS", "30"),
            ("ECS_CLUSTER", "agent-hosting"),
            ("REPLICA_SUBNETS", "subnet-a, subnet-b"),
            ("REPLICA_SECURITY_GROUP", "sg-1"),
            ("REPLICA_ASSIGN_PUBLIC_IP", "DISABLED"),
            (
                "REPLICA_EXECUTION_ROLE_ARN",
                "arn:aws:iam::123456789012:role/execution",
            ),
            (
                "HOLDER_IMAGE",
                "123456789012.dkr.ecr.us-east-1.amazonaws.com/p:h",
            ),
            ("REPLICA_SECRETS_PREFIX", "agent-hosting/agent-hosting/"),
            (
                "REPLICA_LOG_GROUP",
                "/agent-hosting-platform/agent-hosting/replicas",
            ),
            (
                "PLATFORM_LOG_GROUP",
                "/agent-hosting-platform/agent-hosting/holders",
            ),
            ("AWS_REGION", "us-east-1"),
        ]
        .into_iter()
        .map(|(name, value)| (name, value.to_owned()))
        .collect()
    }

    fn read(environment: &HashMap<&'static str, String>) -> Result<Settings, SettingsError> {
        Settings::from_lookup(|name| environment.get(name).cloned())
    }

    #[test]
    fn every_variable_is_read_and_the_engine_is_given_them() {
        let settings = read(&environment()).unwrap();
        assert_eq!(settings.replica_subnets, ["subnet-a", "subnet-b"]);
        assert!(!settings.assign_public_ip);
        assert_eq!(settings.log_retention_days, 30);
        let ecs = settings.ecs_config();
        assert_eq!(ecs.cluster, "agent-hosting");
        assert_eq!(ecs.subnets, ["subnet-a", "subnet-b"]);
        assert_eq!(ecs.security_groups, ["sg-1"]);
        assert_eq!(ecs.secrets_prefix, "agent-hosting/agent-hosting/");
        assert_eq!(
            ecs.replica_log_group,
            "/agent-hosting-platform/agent-hosting/replicas"
        );
        assert_eq!(ecs.secrets_kms_key, None);
    }

    #[test]
    fn a_missing_or_empty_variable_is_named() {
        for name in environment().keys() {
            let mut missing = environment();
            missing.remove(name);
            assert_eq!(read(&missing), Err(SettingsError::Missing(name)));
            let mut empty = environment();
            empty.insert(name, " ".into());
            assert_eq!(read(&empty), Err(SettingsError::Missing(name)));
        }
    }

    #[test]
    fn the_subnets_are_split_on_commas_and_none_may_be_empty() {
        let mut one = environment();
        one.insert("REPLICA_SUBNETS", "subnet-a".into());
        assert_eq!(read(&one).unwrap().replica_subnets, ["subnet-a"]);
        for bad in ["subnet-a,", "subnet-a,,subnet-b", ",subnet-a"] {
            let mut environment = environment();
            environment.insert("REPLICA_SUBNETS", bad.into());
            assert!(matches!(
                read(&environment),
                Err(SettingsError::Invalid {
                    name: "REPLICA_SUBNETS",
                    ..
                })
            ));
        }
    }

    #[test]
    fn a_public_ip_is_enabled_or_disabled_and_nothing_else() {
        let mut enabled = environment();
        enabled.insert("REPLICA_ASSIGN_PUBLIC_IP", "ENABLED".into());
        assert!(read(&enabled).unwrap().assign_public_ip);
        assert!(read(&enabled).unwrap().ecs_config().assign_public_ip);
        for bad in ["enabled", "true", "yes", "DISABLED_"] {
            let mut environment = environment();
            environment.insert("REPLICA_ASSIGN_PUBLIC_IP", bad.into());
            assert!(matches!(
                read(&environment),
                Err(SettingsError::Invalid {
                    name: "REPLICA_ASSIGN_PUBLIC_IP",
                    ..
                })
            ));
        }
    }

    #[test]
    fn the_retention_is_a_whole_number_of_days() {
        for bad in ["0", "-1", "2.5", "thirty"] {
            let mut environment = environment();
            environment.insert("LOG_RETENTION_DAYS", bad.into());
            assert!(matches!(
                read(&environment),
                Err(SettingsError::Invalid {
                    name: "LOG_RETENTION_DAYS",
                    ..
                })
            ));
        }
    }
}
