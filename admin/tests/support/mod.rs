//! What the operator command's test files share.

use shared::config::TableNames;

/// Tables of one test's own (named after `label`, the process and the instant) on the DynamoDB
/// Local of `DYNAMODB_ENDPOINT`.
pub fn tables(label: &str) -> TableNames {
    let suffix = format!(
        "{label}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    TableNames {
        agents: format!("agents-{suffix}"),
        accounts: format!("accounts-{suffix}"),
        logs: format!("logs-{suffix}"),
    }
}
