//! An account's resources at the API gateway (contract section 9): its API key, whose value is
//! the `usageIdentifierKey` the authorizer names for the account's requests, and the usage plan
//! that key is in: the stack's default plan (`AccountsUsagePlan`: the template's per-account
//! defaults) or a plan of the account's own (`set-limits`). The key is in exactly one plan of the
//! API's stage at a time; API Gateway refuses a second one.
//!
//! AWS enforces orderings that emulators may not (moto does not): a key leaves its plan before
//! it joins another, a plan loses its stage before it is deleted, a key leaves its plan before it
//! is deleted. Every function here does those steps itself, in that order.
//!
//! One implementation for its two users (feature `gateway`): the operator command (every
//! operation) and the gateway-keys function, which makes a self-signed-up account's key
//! (`ensure_account` only).

use std::time::Duration;

use crate::auth::usage_plan_key_value;
use crate::error::DisplayErrorContext;
use aws_sdk_apigateway::Client;
use aws_sdk_apigateway::error::SdkError;
use aws_sdk_apigateway::types::{
    ApiKey, ApiStage, Op, PatchOperation, ThrottleSettings, UsagePlan,
};

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// An API Gateway call failed (with the SDK's whole error chain).
    #[error("API Gateway {operation}: {message}")]
    Api {
        operation: &'static str,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
}

fn failed<E>(operation: &'static str) -> impl FnOnce(SdkError<E>) -> GatewayError
where
    E: std::error::Error + Send + Sync + 'static,
{
    move |error| GatewayError::Api {
        operation,
        message: DisplayErrorContext(&error).to_string(),
    }
}

/// CreateUsagePlanKey failed: the key is in a plan of the stage already (ConflictException), or
/// otherwise.
enum AddKeyError {
    Conflict(GatewayError),
    Failed(GatewayError),
}

impl AddKeyError {
    /// For a caller to whom a key already in a plan is a failure too (`move_key` took it out of
    /// every other plan first: a conflict means the plans changed meanwhile).
    fn into_gateway(self) -> GatewayError {
        match self {
            AddKeyError::Conflict(error) | AddKeyError::Failed(error) => error,
        }
    }
}

/// An account's own rate and burst (requests a second, requests at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub rate: u32,
    pub burst: u32,
}

/// Which plan an account's key is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The stack's default plan: the template's per-account limits.
    Default,
    /// The account's own plan, with its limits.
    Own { plan_id: String, limits: Limits },
}

/// An account's gateway key and the plan it is in (None: in no plan of the stage, so the
/// gateway refuses the account's requests: an operator's omission `sync-gateway` mends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountGateway {
    pub key_id: String,
    pub plan: Option<Plan>,
}

/// The API's stage and its default plan, as the stack's outputs name them.
pub struct Gateway {
    client: Client,
    rest_api_id: String,
    stage: String,
    default_plan_id: String,
}

/// CreateApiKey and DeleteApiKey are limited to 5 requests a second per AWS account: the pace of
/// a sweep over every account (`sync-gateway`).
pub const SWEEP_PACE: Duration = Duration::from_millis(250);

impl Gateway {
    pub fn new(
        client: Client,
        rest_api_id: String,
        stage: String,
        default_plan_id: String,
    ) -> Self {
        Gateway {
            client,
            rest_api_id,
            stage,
            default_plan_id,
        }
    }

    fn key_name(&self, account_id: &str) -> String {
        format!("agent-hosting/{}/{account_id}", self.rest_api_id)
    }

    fn plan_name(&self, account_id: &str) -> String {
        format!(
            "agent-hosting/{}/{}/{account_id}",
            self.rest_api_id, self.stage
        )
    }

    /// `apiId:stage`, as a usage plan's patch operations name a stage.
    fn stage_path_value(&self) -> String {
        format!("{}:{}", self.rest_api_id, self.stage)
    }

    async fn find_key(&self, account_id: &str) -> Result<Option<ApiKey>, GatewayError> {
        let name = self.key_name(account_id);
        // nameQuery narrows the listing; the name is then matched exactly.
        let keys: Vec<ApiKey> = self
            .client
            .get_api_keys()
            .name_query(&name)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(failed("GetApiKeys"))?;
        Ok(keys
            .into_iter()
            .find(|key| key.name() == Some(name.as_str())))
    }

    async fn plans_with_key(&self, key_id: &str) -> Result<Vec<UsagePlan>, GatewayError> {
        self.client
            .get_usage_plans()
            .key_id(key_id)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<_>, _>>()
            .await
            .map_err(failed("GetUsagePlans"))
    }

    async fn find_own_plan(&self, account_id: &str) -> Result<Option<UsagePlan>, GatewayError> {
        let name = self.plan_name(account_id);
        let plans: Vec<UsagePlan> = self
            .client
            .get_usage_plans()
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(failed("GetUsagePlans"))?;
        Ok(plans
            .into_iter()
            .find(|plan| plan.name() == Some(name.as_str())))
    }

    fn plan_of(&self, plan: &UsagePlan) -> Plan {
        if plan.id() == Some(self.default_plan_id.as_str()) {
            return Plan::Default;
        }
        let throttle = plan.throttle();
        Plan::Own {
            plan_id: plan.id().unwrap_or_default().to_owned(),
            limits: Limits {
                rate: throttle.map_or(0, |t| t.rate_limit() as u32),
                burst: throttle.map_or(0, |t| t.burst_limit() as u32),
            },
        }
    }

    /// The account's key and its plan, as they are (None: no key).
    pub async fn describe(&self, account_id: &str) -> Result<Option<AccountGateway>, GatewayError> {
        let Some(key) = self.find_key(account_id).await? else {
            return Ok(None);
        };
        let key_id = key.id().unwrap_or_default().to_owned();
        let plans = self.plans_with_key(&key_id).await?;
        Ok(Some(AccountGateway {
            plan: plans.first().map(|plan| self.plan_of(plan)),
            key_id,
        }))
    }

    /// The account's key, created (enabled, with the value the authorizer names) when missing,
    /// and in a plan: the default one unless it is in one already. Idempotent, and safe to run
    /// twice at once for one account: the key's value is unique per account, so of two
    /// CreateApiKey calls API Gateway answers the second ConflictException (the key exists: it
    /// is looked up again), and of two CreateUsagePlanKey calls the second ConflictException
    /// (the key is in the plan already).
    pub async fn ensure_account(&self, account_id: &str) -> Result<AccountGateway, GatewayError> {
        let key_id = match self.find_key(account_id).await? {
            Some(key) => key.id().unwrap_or_default().to_owned(),
            None => self.create_key(account_id).await?,
        };
        // What was read and done answers the call: no second read of the key and its plans.
        let plan = match self.plans_with_key(&key_id).await?.first() {
            Some(plan) => self.plan_of(plan),
            None => match self.add_key_to(&self.default_plan_id, &key_id).await {
                Ok(()) | Err(AddKeyError::Conflict(_)) => Plan::Default,
                Err(AddKeyError::Failed(error)) => return Err(error),
            },
        };
        Ok(AccountGateway {
            key_id,
            plan: Some(plan),
        })
    }

    /// Makes the account's key; one made meanwhile by another caller (ConflictException) is
    /// found by its name instead.
    async fn create_key(&self, account_id: &str) -> Result<String, GatewayError> {
        let created = self
            .client
            .create_api_key()
            .name(self.key_name(account_id))
            .description("agent-hosting: the account's usage-plan key")
            .customer_id(account_id)
            .value(usage_plan_key_value(&self.rest_api_id, account_id))
            // Keys are created disabled unless told otherwise.
            .enabled(true)
            .send()
            .await;
        match created {
            Ok(key) => key
                .id
                .ok_or_else(|| GatewayError::Invalid("an API key without an id".into())),
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|error| error.is_conflict_exception()) =>
            {
                let key = self.find_key(account_id).await?.ok_or_else(|| {
                    GatewayError::Invalid(format!(
                        "CreateApiKey answered that the key of {account_id} exists, and none is \
                         found by its name"
                    ))
                })?;
                Ok(key.id().unwrap_or_default().to_owned())
            }
            Err(error) => Err(failed("CreateApiKey")(error)),
        }
    }

    async fn add_key_to(&self, plan_id: &str, key_id: &str) -> Result<(), AddKeyError> {
        match self
            .client
            .create_usage_plan_key()
            .usage_plan_id(plan_id)
            .key_id(key_id)
            .key_type("API_KEY")
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(error) => {
                let conflict = error
                    .as_service_error()
                    .is_some_and(|error| error.is_conflict_exception());
                let error = failed("CreateUsagePlanKey")(error);
                Err(if conflict {
                    AddKeyError::Conflict(error)
                } else {
                    AddKeyError::Failed(error)
                })
            }
        }
    }

    /// Puts the key in `plan_id` and in no other plan: out of the others first (a key is in one
    /// plan of a stage at a time). Between the two calls the account's requests are refused
    /// (INVALID_API_KEY, the gateway's 503) for a moment.
    async fn move_key(&self, key_id: &str, plan_id: &str) -> Result<(), GatewayError> {
        let mut already = false;
        for plan in self.plans_with_key(key_id).await? {
            let id = plan.id().unwrap_or_default();
            if id == plan_id {
                already = true;
                continue;
            }
            self.client
                .delete_usage_plan_key()
                .usage_plan_id(id)
                .key_id(key_id)
                .send()
                .await
                .map_err(failed("DeleteUsagePlanKey"))?;
        }
        if !already {
            self.add_key_to(plan_id, key_id)
                .await
                .map_err(AddKeyError::into_gateway)?;
        }
        Ok(())
    }

    /// Gives the account limits of its own: its own plan (made, or updated) with the key in it.
    pub async fn set_limits(
        &self,
        account_id: &str,
        limits: Limits,
    ) -> Result<AccountGateway, GatewayError> {
        if limits.rate == 0 || limits.burst == 0 {
            return Err(GatewayError::Invalid(
                "rate and burst must be at least 1".into(),
            ));
        }
        let account = self.ensure_account(account_id).await?;
        let plan_id = match self.find_own_plan(account_id).await? {
            Some(plan) => {
                let id = plan.id().unwrap_or_default().to_owned();
                // Whole numbers as text: "10", not "10.0" (some emulators parse integers).
                let replace = |path: &str, value: u32| {
                    PatchOperation::builder()
                        .op(Op::Replace)
                        .path(path)
                        .value(value.to_string())
                        .build()
                };
                self.client
                    .update_usage_plan()
                    .usage_plan_id(&id)
                    .patch_operations(replace("/throttle/rateLimit", limits.rate))
                    .patch_operations(replace("/throttle/burstLimit", limits.burst))
                    .send()
                    .await
                    .map_err(failed("UpdateUsagePlan"))?;
                id
            }
            None => self
                .client
                .create_usage_plan()
                .name(self.plan_name(account_id))
                .description(format!(
                    "agent-hosting: {account_id}'s own limits (agent-hosting-admin set-limits)"
                ))
                .api_stages(
                    ApiStage::builder()
                        .api_id(&self.rest_api_id)
                        .stage(&self.stage)
                        .build(),
                )
                .throttle(
                    ThrottleSettings::builder()
                        .rate_limit(f64::from(limits.rate))
                        .burst_limit(limits.burst as i32)
                        .build(),
                )
                .send()
                .await
                .map_err(failed("CreateUsagePlan"))?
                .id
                .ok_or_else(|| GatewayError::Invalid("a usage plan without an id".into()))?,
        };
        self.move_key(&account.key_id, &plan_id).await?;
        self.describe(account_id)
            .await?
            .ok_or_else(|| GatewayError::Invalid(format!("the key of {account_id} vanished")))
    }

    /// Back to the default limits: the key into the default plan, the account's own plan gone.
    pub async fn reset_limits(&self, account_id: &str) -> Result<AccountGateway, GatewayError> {
        let account = self.ensure_account(account_id).await?;
        self.move_key(&account.key_id, &self.default_plan_id)
            .await?;
        self.delete_own_plan(account_id).await?;
        self.describe(account_id)
            .await?
            .ok_or_else(|| GatewayError::Invalid(format!("the key of {account_id} vanished")))
    }

    async fn delete_own_plan(&self, account_id: &str) -> Result<(), GatewayError> {
        let Some(plan) = self.find_own_plan(account_id).await? else {
            return Ok(());
        };
        let id = plan.id().unwrap_or_default();
        // A plan with a stage cannot be deleted: the stage goes first.
        if !plan.api_stages().is_empty() {
            self.client
                .update_usage_plan()
                .usage_plan_id(id)
                .patch_operations(
                    PatchOperation::builder()
                        .op(Op::Remove)
                        .path("/apiStages")
                        .value(self.stage_path_value())
                        .build(),
                )
                .send()
                .await
                .map_err(failed("UpdateUsagePlan"))?;
        }
        self.client
            .delete_usage_plan()
            .usage_plan_id(id)
            .send()
            .await
            .map_err(failed("DeleteUsagePlan"))?;
        Ok(())
    }

    /// Everything the account has at the gateway, gone: its key out of its plan, the key, its own
    /// plan. Idempotent.
    pub async fn remove_account(&self, account_id: &str) -> Result<(), GatewayError> {
        if let Some(key) = self.find_key(account_id).await? {
            let key_id = key.id().unwrap_or_default();
            for plan in self.plans_with_key(key_id).await? {
                self.client
                    .delete_usage_plan_key()
                    .usage_plan_id(plan.id().unwrap_or_default())
                    .key_id(key_id)
                    .send()
                    .await
                    .map_err(failed("DeleteUsagePlanKey"))?;
            }
            self.client
                .delete_api_key()
                .api_key(key_id)
                .send()
                .await
                .map_err(failed("DeleteApiKey"))?;
        }
        self.delete_own_plan(account_id).await
    }
}
