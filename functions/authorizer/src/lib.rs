//! The REST API's Lambda authorizer (REQUEST type): checks `Authorization: Bearer <key>` (or a
//! person's Cognito access token, docs/people.md) with the same code the functions
//! use, and answers the gateway with an IAM policy. Allowed, it names the
//! account three ways: as the principal, in the context the routes read, and as the
//! `usageIdentifierKey` that puts the request under the account's usage plan (per-account
//! throttling, contract section 9), with the key's kind beside it, or for a person their `sub`
//! (`personId`) and no kind: a person's requests share their account's usage plan. Denied, the gateway answers
//! with its ACCESS_DENIED response, which template.yaml shapes as the contract's 401.
//!
//! A public key is allowed as a private one is, its kind in the context: the functions answer it
//! 403 on every route but a session start (`shared::http::Callers`). Not a policy naming only the start
//! route: the gateway would then answer ACCESS_DENIED, one status for all its denials, which is
//! the contract's 401 for a bad key and cannot also be its 403.

use std::collections::HashMap;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerRequestTypeRequest,
};
use aws_lambda_events::iam::{IamPolicyEffect, IamPolicyStatement};
use serde::Serialize;
use serde_json::Value;
use shared::StoreError;
use shared::auth::{
    self, CONTEXT_ACCOUNT_ID, CONTEXT_KEY_KIND, CONTEXT_NAMESPACE, CONTEXT_PERSON_ID, CallerKind,
    KeyStore,
};

/// What a REST API authorizer returns. Not aws_lambda_events' type: that one writes
/// `"usageIdentifierKey": null` on a denial, which the gateway need not accept.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizerResponse {
    pub principal_id: String,
    pub policy_document: ApiGatewayCustomAuthorizerPolicy,
    #[serde(skip_serializing_if = "HashMap::is_empty")]
    pub context: HashMap<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_identifier_key: Option<String>,
}

/// The principal of a denied request (the gateway requires one, as a string).
pub const ANONYMOUS: &str = "anonymous";

impl AuthorizerResponse {
    pub fn effect(&self) -> &IamPolicyEffect {
        &self.policy_document.statement[0].effect
    }

    pub fn is_allowed(&self) -> bool {
        self.effect() == &IamPolicyEffect::Allow
    }
}

/// The policy covers every method of the API's stage, not only the one asked about: the gateway
/// caches the verdict for 60 seconds per key and applies it to the key's next requests, whatever
/// their route. `arn:...:{apiId}/{stage}/{METHOD}/{path}` → `arn:...:{apiId}/{stage}/*`.
fn stage_resource(method_arn: Option<&str>) -> Option<String> {
    let mut parts = method_arn?.splitn(3, '/');
    let (api, stage) = (parts.next()?, parts.next()?);
    (api.starts_with("arn:") && !stage.is_empty()).then(|| format!("{api}/{stage}/*"))
}

fn policy(effect: IamPolicyEffect, resource: String) -> ApiGatewayCustomAuthorizerPolicy {
    // The event types are non-exhaustive: built from their Default.
    let mut statement = IamPolicyStatement::default();
    statement.action = vec!["execute-api:Invoke".to_owned()];
    statement.effect = effect;
    statement.resource = vec![resource];
    let mut policy = ApiGatewayCustomAuthorizerPolicy::default();
    policy.version = Some("2012-10-17".to_owned());
    policy.statement = vec![statement];
    policy
}

fn denied(resource: String) -> AuthorizerResponse {
    AuthorizerResponse {
        principal_id: ANONYMOUS.to_owned(),
        policy_document: policy(IamPolicyEffect::Deny, resource),
        context: HashMap::new(),
        usage_identifier_key: None,
    }
}

/// Allowed with the caller in the context, or denied with an empty context. A store failure is
/// an error (the gateway answers its AUTHORIZER_FAILURE response, 503, and caches nothing), never
/// a cached denial of a valid key.
#[tracing::instrument(skip_all, fields(method_arn = event.method_arn.as_deref().unwrap_or_default()))]
pub async fn authorize<K: KeyStore>(
    keys: &K,
    event: ApiGatewayCustomAuthorizerRequestTypeRequest,
) -> Result<AuthorizerResponse, StoreError> {
    let (Some(resource), Some(api_id)) = (
        stage_resource(event.method_arn.as_deref()),
        event.request_context.apiid.as_deref(),
    ) else {
        tracing::warn!("request without a method ARN or API id denied");
        return Ok(denied("*".to_owned()));
    };
    match auth::authenticate(&event.headers, keys).await? {
        Some(auth::Caller { principal, kind }) => {
            let mut context = HashMap::from([
                (
                    CONTEXT_ACCOUNT_ID.to_owned(),
                    Value::String(principal.account_id.clone()),
                ),
                (
                    CONTEXT_NAMESPACE.to_owned(),
                    Value::String(principal.namespace),
                ),
            ]);
            // A key names its kind; a person their `sub` and no kind (shared::http's reading of the context).
            let (name, value) = match kind {
                CallerKind::Key(kind) => (CONTEXT_KEY_KIND, kind.as_str().to_owned()),
                CallerKind::Person { person_id } => (CONTEXT_PERSON_ID, person_id),
            };
            context.insert(name.to_owned(), Value::String(value));
            Ok(AuthorizerResponse {
                // A person's requests share their account's usage plan (its throttling).
                usage_identifier_key: Some(auth::usage_plan_key_value(
                    api_id,
                    &principal.account_id,
                )),
                principal_id: principal.account_id,
                policy_document: policy(IamPolicyEffect::Allow, resource),
                context,
            })
        }
        None => {
            tracing::info!("request denied");
            Ok(denied(resource))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::auth::Principal;
    use shared::store::memory::MemoryStore;

    fn event(name: &str) -> ApiGatewayCustomAuthorizerRequestTypeRequest {
        shared::testing::fixture_event(name)
    }

    fn with_key(key: &str) -> ApiGatewayCustomAuthorizerRequestTypeRequest {
        let mut event = event("authorizer.json");
        event
            .headers
            .insert("authorization", format!("Bearer {key}").parse().unwrap());
        event
    }

    #[tokio::test]
    async fn a_known_key_is_allowed_on_the_whole_stage_with_its_account_and_usage_plan_key() {
        let store = MemoryStore::default();
        let key = store.issue_key(&Principal {
            account_id: "acme".into(),
            namespace: "tiny-ferret-maroon-123".into(),
        });
        let response = authorize(&store, with_key(key.expose())).await.unwrap();
        let wire = serde_json::to_value(&response).unwrap();
        assert_eq!(
            wire,
            serde_json::json!({
                "principalId": "acme",
                "policyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [{
                        "Action": ["execute-api:Invoke"],
                        "Effect": "Allow",
                        "Resource": ["arn:aws:execute-api:us-east-1:123456789012:abc123/dev/*"],
                    }],
                },
                "context": {
                    "accountId": "acme",
                    "namespace": "tiny-ferret-maroon-123",
                    "keyKind": "private",
                },
                "usageIdentifierKey": auth::usage_plan_key_value("abc123", "acme"),
            })
        );
    }

    #[tokio::test]
    async fn a_public_key_is_allowed_with_its_kind_for_the_functions_to_refuse_off_the_start_route()
    {
        let store = MemoryStore::default();
        let key = store.issue_key_of(
            &Principal {
                account_id: "acme".into(),
                namespace: "ns".into(),
            },
            shared::auth::KeyKind::Public,
        );
        let response = authorize(&store, with_key(key.expose())).await.unwrap();
        assert!(response.is_allowed());
        assert_eq!(response.context["keyKind"], "public");
        assert_eq!(response.context["accountId"], "acme");
    }

    #[tokio::test]
    async fn unknown_revoked_and_malformed_keys_are_denied_without_context_or_usage_key() {
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
            let wire = serde_json::to_value(&response).unwrap();
            assert_eq!(wire["policyDocument"]["Statement"][0]["Effect"], "Deny");
            assert_eq!(wire["principalId"], ANONYMOUS);
            assert!(wire.get("context").is_none(), "{wire}");
            assert!(wire.get("usageIdentifierKey").is_none(), "{wire}");
        }
    }

    #[tokio::test]
    async fn a_request_without_a_method_arn_is_denied_even_with_a_good_key() {
        let store = MemoryStore::default();
        let key = store.issue_key(&Principal {
            account_id: "acme".into(),
            namespace: "ns".into(),
        });
        let mut request = with_key(key.expose());
        request.method_arn = Some("not-an-arn".into());
        let response = authorize(&store, request).await.unwrap();
        assert_eq!(response.effect(), &IamPolicyEffect::Deny);
        assert!(response.usage_identifier_key.is_none());
    }

    /// The accounts table's people: one person of acme, or a table that cannot be read.
    struct People {
        failing: bool,
    }

    impl KeyStore for People {
        async fn find_key(
            &self,
            _: &shared::auth::KeyHash,
        ) -> Result<Option<shared::auth::KeyRecord>, StoreError> {
            Ok(None)
        }

        async fn find_person(
            &self,
            person_id: &str,
        ) -> Result<Option<shared::auth::PersonRecord>, StoreError> {
            if self.failing {
                return Err(StoreError::Unavailable("the table is down".into()));
            }
            Ok((person_id == "p-1").then(|| shared::auth::PersonRecord {
                person_id: "p-1".into(),
                account_id: "acme".into(),
                namespace: "acme-ns".into(),
                email: "p-1@example.test".into(),
                created_at: "2026-11-26T14:00:00.000Z".into(),
            }))
        }
    }

    fn issuer() -> &'static shared::people::testing::TestIssuer {
        shared::people::testing::TestIssuer::global()
    }

    #[tokio::test]
    async fn a_persons_access_token_is_allowed_with_their_account_person_id_and_usage_plan_key() {
        let store = People { failing: false };
        let response = authorize(&store, with_key(&issuer().access_token("p-1")))
            .await
            .unwrap();
        let wire = serde_json::to_value(&response).unwrap();
        assert_eq!(wire["principalId"], "acme");
        assert_eq!(wire["policyDocument"]["Statement"][0]["Effect"], "Allow");
        assert_eq!(
            wire["context"],
            serde_json::json!({"accountId": "acme", "namespace": "acme-ns", "personId": "p-1"}),
            "a person's context names no key kind"
        );
        assert_eq!(
            wire["usageIdentifierKey"],
            auth::usage_plan_key_value("abc123", "acme"),
            "a person's requests share the account's usage plan"
        );
    }

    #[tokio::test]
    async fn expired_forged_id_other_client_and_unknown_persons_tokens_are_denied() {
        let store = People { failing: false };
        for token in [
            issuer().expired_token("p-1"),
            issuer().forged_token("p-1"),
            issuer().id_token("p-1"),
            issuer().other_client_token("p-1"),
            issuer().access_token("p-removed"),
        ] {
            let response = authorize(&store, with_key(&token)).await.unwrap();
            let wire = serde_json::to_value(&response).unwrap();
            assert_eq!(wire["policyDocument"]["Statement"][0]["Effect"], "Deny");
            assert_eq!(wire["principalId"], ANONYMOUS);
            assert!(wire.get("context").is_none(), "{wire}");
            assert!(wire.get("usageIdentifierKey").is_none(), "{wire}");
        }
    }

    #[tokio::test]
    async fn a_person_lookup_that_fails_is_an_error_never_a_cached_denial() {
        // (A JWKS that cannot be fetched is the same error: people::tests.)
        let store = People { failing: true };
        let result = authorize(&store, with_key(&issuer().access_token("p-1"))).await;
        assert!(
            matches!(result, Err(StoreError::Unavailable(_))),
            "{result:?}"
        );
    }
}
