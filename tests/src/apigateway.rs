//! moto's API Gateway as template.yaml deploys it (a REST API, its stage, the default per-account
//! plan), with a client whose requests are recorded, and the checks of accounts' keys and plans:
//! for the operator's side (tests/gateway_admin.rs) and the gateway-keys function's
//! (tests/gateway_keys.rs). moto does not refuse what AWS refuses (a key in two plans of a stage,
//! deleting a plan that still has a stage), so the tests check that a key is in exactly one plan
//! and, from the recorded requests, that the orderings AWS enforces are kept.

use aws_sdk_apigateway::Client;
use aws_sdk_apigateway::types::{ApiKey, ApiStage, IntegrationType, ThrottleSettings, UsagePlan};
use shared::auth::usage_plan_key_value;
use shared::gateway::Gateway;
pub use shared::testing::requests::{Requests, SentRequest};

/// The stage the tests' API is deployed to.
pub const STAGE: &str = "dev";

/// What template.yaml deploys: a REST API, its stage, and the default per-account plan, on moto.
pub struct Stack {
    /// The client the stack was made with, recording its requests in `requests`.
    pub client: Client,
    /// What `client` sends, in order (`METHOD /path`: the orderings AWS enforces and moto does
    /// not).
    pub requests: Requests,
    pub rest_api_id: String,
    pub default_plan_id: String,
}

impl Stack {
    /// The stack made with `client` (on moto), which from now on records its requests.
    pub async fn deploy(client: Client) -> Self {
        let requests = Requests::default();
        let client = Client::from_conf(
            client
                .config()
                .to_builder()
                .interceptor(requests.clone())
                .build(),
        );
        let rest_api_id = client
            .create_rest_api()
            .name(format!("agent-hosting-{}", uuid::Uuid::new_v4().simple()))
            .send()
            .await
            .unwrap()
            .id
            .unwrap();
        // A deployment needs a method (AWS and moto both refuse an empty API).
        let root = client
            .get_resources()
            .rest_api_id(&rest_api_id)
            .send()
            .await
            .unwrap()
            .items
            .unwrap()
            .remove(0)
            .id
            .unwrap();
        client
            .put_method()
            .rest_api_id(&rest_api_id)
            .resource_id(&root)
            .http_method("GET")
            .authorization_type("NONE")
            .send()
            .await
            .unwrap();
        client
            .put_integration()
            .rest_api_id(&rest_api_id)
            .resource_id(&root)
            .http_method("GET")
            .r#type(IntegrationType::Mock)
            .send()
            .await
            .unwrap();
        client
            .create_deployment()
            .rest_api_id(&rest_api_id)
            .stage_name(STAGE)
            .send()
            .await
            .unwrap();
        let plan = client
            .create_usage_plan()
            .name("accounts")
            .api_stages(
                ApiStage::builder()
                    .api_id(&rest_api_id)
                    .stage(STAGE)
                    .build(),
            )
            .throttle(
                ThrottleSettings::builder()
                    .rate_limit(10.0)
                    .burst_limit(20)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        Stack {
            client,
            requests,
            rest_api_id,
            default_plan_id: plan.id.unwrap(),
        }
    }

    /// Accounts' keys and plans on this stack, through the stack's recording client.
    pub fn gateway(&self) -> Gateway {
        Gateway::new(
            self.client.clone(),
            self.rest_api_id.clone(),
            STAGE.to_owned(),
            self.default_plan_id.clone(),
        )
    }

    /// Every key, with its value.
    pub async fn keys(&self) -> Vec<ApiKey> {
        self.client
            .get_api_keys()
            .include_values(true)
            .send()
            .await
            .unwrap()
            .items
            .unwrap_or_default()
    }

    pub async fn plans_with_key(&self, key_id: &str) -> Vec<UsagePlan> {
        self.client
            .get_usage_plans()
            .key_id(key_id)
            .send()
            .await
            .unwrap()
            .items
            .unwrap_or_default()
    }

    /// The one plan the key is in (asserts it is exactly one).
    pub async fn only_plan_of(&self, key_id: &str) -> UsagePlan {
        let plans = self.plans_with_key(key_id).await;
        assert_eq!(plans.len(), 1, "the key is in exactly one plan: {plans:?}");
        plans.into_iter().next().unwrap()
    }

    /// The names of every plan.
    pub async fn plan_names(&self) -> Vec<String> {
        let plans = self.client.get_usage_plans().send().await.unwrap();
        plans
            .items()
            .iter()
            .filter_map(|plan| plan.name().map(str::to_owned))
            .collect()
    }

    /// Asserts the account has exactly one key, enabled, with the value the authorizer names,
    /// in exactly one plan: the default. The key's id.
    pub async fn assert_keyed(&self, account_id: &str) -> String {
        let keys = self.keys().await;
        let mine: Vec<_> = keys
            .iter()
            .filter(|key| key.customer_id() == Some(account_id))
            .collect();
        assert_eq!(mine.len(), 1, "one key of {account_id}: {keys:?}");
        let key = mine[0];
        assert!(key.enabled, "a key the gateway accepts");
        assert_eq!(
            key.value(),
            Some(usage_plan_key_value(&self.rest_api_id, account_id).as_str())
        );
        let key_id = key.id().unwrap();
        assert_eq!(
            self.only_plan_of(key_id).await.id(),
            Some(self.default_plan_id.as_str())
        );
        key_id.to_owned()
    }
}
