//! A self-signed-up account's gateway key (contract section 9; docs/people.md). The user pool's
//! post-confirmation trigger cannot make it: it would need the REST API's id, and the API's
//! authorizer already depends on the pool, which depends on its trigger (a CloudFormation
//! cycle). So the trigger invokes this function asynchronously, by name, with the account's id;
//! it makes the key (value `usage_plan_key_value`) and puts it in the default usage plan,
//! through the same `Gateway::ensure_account` as the operator command.
//!
//! Idempotent: Lambda retries a failed event twice, and the trigger may ask again on Cognito's
//! retry; a key found by its name is not made again, and a key in a plan stays in it.

use serde::Deserialize;
use serde_json::Value;
use shared::gateway::{AccountGateway, Gateway, GatewayError, Plan};
use shared::validation::is_dns_label;

/// What the trigger sends.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRequest {
    pub account_id: String,
}

/// Why no key was made: a malformed event (logged and failed, never retried into success), or
/// API Gateway refusing or failing (Lambda retries, then the failure queue keeps the event).
#[derive(Debug, thiserror::Error)]
pub enum GatewayKeysError {
    #[error("not a gateway key request ({{\"account_id\": \"...\"}}): {0}")]
    Malformed(#[source] serde_json::Error),
    #[error("not an account id: {0:?}")]
    NotAnAccountId(String),
    #[error(transparent)]
    Gateway(#[from] GatewayError),
}

/// Reads and checks the event: one member, `account_id`, an account id by the accounts' rule.
pub fn parse(event: Value) -> Result<KeyRequest, GatewayKeysError> {
    // serde would also read a struct from an array (`["acme"]`): an object only.
    if !event.is_object() {
        return Err(GatewayKeysError::Malformed(serde::de::Error::custom(
            "the event is not a JSON object",
        )));
    }
    let request: KeyRequest = serde_json::from_value(event).map_err(GatewayKeysError::Malformed)?;
    if !is_dns_label(&request.account_id) {
        return Err(GatewayKeysError::NotAnAccountId(request.account_id));
    }
    Ok(request)
}

/// Makes the account's key, or finds it; answers what the account has at the gateway.
pub async fn handle(gateway: &Gateway, event: Value) -> Result<Value, GatewayKeysError> {
    let request = parse(event)?;
    let state = gateway.ensure_account(&request.account_id).await?;
    tracing::info!(account_id = %request.account_id, key_id = %state.key_id, "gateway key in place");
    Ok(answer(&request.account_id, &state))
}

fn answer(account_id: &str, state: &AccountGateway) -> Value {
    let plan = match &state.plan {
        Some(Plan::Default) => Value::from("default"),
        Some(Plan::Own { plan_id, .. }) => Value::from(plan_id.as_str()),
        None => Value::Null,
    };
    serde_json::json!({ "account_id": account_id, "key_id": state.key_id, "plan": plan })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_account_id_is_read_and_anything_else_refused() {
        assert_eq!(
            parse(json!({"account_id": "acct-0123abcd"}))
                .unwrap()
                .account_id,
            "acct-0123abcd"
        );
        for event in [
            json!(null),
            json!([]),
            json!(["acme"]),
            json!("acme"),
            json!({}),
            json!({"account_id": 7}),
            json!({"account_id": "acme", "namespace": "x"}),
            json!({"accountId": "acme"}),
        ] {
            assert!(
                matches!(parse(event.clone()), Err(GatewayKeysError::Malformed(_))),
                "{event}"
            );
        }
        for id in ["", "Acme", "-acme", "acme/../x", &"a".repeat(64)] {
            assert!(
                matches!(
                    parse(json!({"account_id": id})),
                    Err(GatewayKeysError::NotAnAccountId(_))
                ),
                "{id:?}"
            );
        }
    }
}
