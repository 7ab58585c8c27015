//! The HTTP API's Lambda authorizer (payload 2.0, simple responses): checks
//! `Authorization: Bearer <key>` with the same code the functions use, and hands the account and
//! its namespace to the routes in the authorizer context.

use std::collections::HashMap;

use aws_lambda_events::apigw::{
    ApiGatewayV2CustomAuthorizerSimpleResponse, ApiGatewayV2CustomAuthorizerV2Request,
};
use serde_json::Value;
use shared::auth::{self, CONTEXT_ACCOUNT_ID, CONTEXT_NAMESPACE, KeyStore};
use shared::{ApiError, StoreError};

pub type AuthorizerResponse = ApiGatewayV2CustomAuthorizerSimpleResponse<HashMap<String, Value>>;

// The event types are non-exhaustive: built from their Default.
fn response(is_authorized: bool, context: HashMap<String, Value>) -> AuthorizerResponse {
    let mut response = AuthorizerResponse::default();
    response.is_authorized = is_authorized;
    response.context = context;
    response
}

/// Allowed with the caller in the context, or denied with an empty context. A store failure is
/// an error (the gateway answers 500 and caches nothing), never a cached denial of a valid key.
#[tracing::instrument(skip_all, fields(route = event.route_key.as_deref().unwrap_or_default()))]
pub async fn authorize<K: KeyStore>(
    keys: &K,
    event: ApiGatewayV2CustomAuthorizerV2Request,
) -> Result<AuthorizerResponse, StoreError> {
    match auth::authenticate(&event.headers, keys).await {
        Ok(principal) => Ok(response(
            true,
            HashMap::from([
                (
                    CONTEXT_ACCOUNT_ID.to_owned(),
                    Value::String(principal.account_id),
                ),
                (
                    CONTEXT_NAMESPACE.to_owned(),
                    Value::String(principal.namespace),
                ),
            ]),
        )),
        Err(ApiError::Unavailable(error)) => Err(error),
        Err(ApiError::Internal(error)) => Err(StoreError::Unexpected(error)),
        Err(_) => {
            tracing::info!("request denied");
            Ok(response(false, HashMap::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::auth::Principal;
    use shared::store::memory::MemoryStore;

    fn event(name: &str) -> ApiGatewayV2CustomAuthorizerV2Request {
        let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    fn with_key(key: &str) -> ApiGatewayV2CustomAuthorizerV2Request {
        let mut event = event("authorizer.json");
        event
            .headers
            .insert("authorization", format!("Bearer {key}").parse().unwrap());
        event
    }

    #[tokio::test]
    async fn a_known_key_is_allowed_with_its_account_in_the_context() {
        let store = MemoryStore::default();
        let key = store.issue_key(&Principal {
            account_id: "acme".into(),
            namespace: "tiny-ferret-maroon-123".into(),
        });
        let response = authorize(&store, with_key(key.expose())).await.unwrap();
        assert!(response.is_authorized);
        assert_eq!(response.context["accountId"], "acme");
        assert_eq!(response.context["namespace"], "tiny-ferret-maroon-123");
        let wire = serde_json::to_value(&response).unwrap();
        assert_eq!(wire["isAuthorized"], true);
    }

    #[tokio::test]
    async fn unknown_revoked_and_malformed_keys_are_denied() {
        let store = MemoryStore::default();
        let revoked = store.issue_key(&Principal {
            account_id: "acme".into(),
            namespace: "ns".into(),
        });
        store.revoke(&revoked);
        for request in [
            event("authorizer.json"),
            event("authorizer-malformed.json"),
            with_key(revoked.expose()),
            with_key(shared::auth::ApiKey::generate().expose()),
        ] {
            let response = authorize(&store, request).await.unwrap();
            assert!(!response.is_authorized);
            assert!(response.context.is_empty());
        }
    }
}
