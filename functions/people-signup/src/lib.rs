//! Self sign-up (template parameter `SelfSignUp`, docs/people.md): the user pool's
//! post-confirmation trigger. When a person confirms their own sign-up, they get an account of
//! their own (a generated namespace) and the item that ties them to it, through the account
//! rules every other writer uses (`account::ensure_account`, `account::add_person`). Any other
//! confirmation (a forgotten password reset) changes nothing.
//!
//! Cognito requires the event back unchanged, and retries a trigger that timed out or was
//! throttled (whether it runs it again after the trigger's error is not documented): the
//! account's id is drawn from the person's `sub`, so a retry finds the account the first try
//! made (even one whose person was not written) instead of making a second. A store failure is
//! an error to the runtime: Cognito answers the confirmation with an error (docs/people.md: what
//! the operator does if the person was confirmed all the same).
//!
//! On AWS the account also needs its gateway key (contract section 9), which this trigger cannot
//! make (it would need the REST API's id: a CloudFormation cycle through the API's authorizer and
//! the pool). Once the account exists it asks the gateway-keys function for it, asynchronously
//! (`GatewayKeyRequests`, gateway_keys.rs), within what is left of the invocation's time
//! (`invoke_timeout`). A request that fails, or that no time is left for, is logged
//! (`KEY_NOT_REQUESTED`) and the confirmation still succeeds: the account and person are written,
//! failing would show the person an error for an account they have, and a missing key is
//! mended by `agent-hosting-admin sync-gateway` (the failure's alarm and `GatewayKeyMissingAlarm`
//! say when).

use aws_lambda_events::cognito::{
    CognitoEventUserPoolsPostConfirmation, CognitoEventUserPoolsPostConfirmationTriggerSource,
};
use serde_json::Value;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use shared::account::{self, AccountError, AccountStore};
use shared::auth::{KeyStore, PersonRecord};
use shared::timestamp::now_rfc3339_millis;

pub mod gateway_keys;

/// The prefix of the accounts self sign-up makes (operators name theirs).
pub const ACCOUNT_PREFIX: &str = "acct-";
/// Hex digits of the sub's SHA-256 in the account id: 128 bits, as many as the sub's own.
const ACCOUNT_HEX_DIGITS: usize = 32;

/// Why a confirmation could not be given its account; Cognito fails the confirmation.
#[derive(Debug, thiserror::Error)]
pub enum SignupError {
    #[error("not a post-confirmation event: {0}")]
    NotPostConfirmation(#[source] serde_json::Error),
    #[error("the event's user attributes have no sub")]
    NoSub,
    #[error(transparent)]
    Account(#[from] AccountError),
}

/// What a confirmation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not a sign-up (a password reset): nothing to do.
    NotSignUp,
    /// The person belonged to their own account already (a retry: the account self sign-up
    /// draws from their sub).
    AlreadyTied { account_id: String },
    /// The person belonged to another account already (an operator invited them before they
    /// signed up): theirs, not this trigger's to key (the operator's `invite-person` made its key).
    InvitedBefore { account_id: String },
    /// A new account, and the person tied to it.
    Made { account_id: String },
    /// Tied to another account while this one was being made (an operator's invitation).
    TiedMeanwhile { unused_account_id: String },
}

/// The log message of a gateway key that could not be asked for (a metric filter of the
/// template counts it, and alarms).
pub const KEY_NOT_REQUESTED: &str =
    "the account's gateway key was not asked for; agent-hosting-admin sync-gateway makes it";

/// The port to the gateway-keys function: asks for an account's gateway key to be made, without
/// waiting for it (`gateway_keys::LambdaGatewayKeys` on AWS; a fake in tests), giving up after
/// `timeout` (retries included).
pub trait GatewayKeyRequests: Send + Sync {
    fn request(
        &self,
        account_id: &str,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<(), KeyRequestError>> + Send;
}

/// The longest the Invoke may take, retries included: it is queued in tens of milliseconds, and
/// Cognito waits 5 seconds for the whole trigger.
pub const INVOKE_TIMEOUT: Duration = Duration::from_millis(1_500);
/// Kept back from the invocation's deadline: for the answer to reach Cognito.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(200);
/// Less than this left for the Invoke: not tried (it could not finish).
pub const MIN_INVOKE_TIMEOUT: Duration = Duration::from_millis(100);

/// The Invoke's bound with `left` of the invocation's time: `INVOKE_TIMEOUT`, or what is left
/// but `DEADLINE_MARGIN` if less; None when that is under `MIN_INVOKE_TIMEOUT` (not tried).
pub fn invoke_timeout(left: Duration) -> Option<Duration> {
    let timeout = INVOKE_TIMEOUT.min(left.saturating_sub(DEADLINE_MARGIN));
    (timeout >= MIN_INVOKE_TIMEOUT).then_some(timeout)
}

/// The gateway key could not be asked for (Lambda refused or was unreachable).
#[derive(Debug, thiserror::Error)]
#[error("the gateway key of {account_id} was not asked for: {message}")]
pub struct KeyRequestError {
    pub account_id: String,
    pub message: String,
}

/// What became of the account's gateway key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRequest {
    /// No account of the person's to key (a password reset; a person tied to another account).
    NotNeeded,
    /// No gateway-keys function configured (locally: the gateway has no usage plans).
    NotConfigured,
    Asked,
    /// Logged (`KEY_NOT_REQUESTED`); `sync-gateway` makes the key.
    Failed,
    /// Too little of the invocation's time left to ask (logged as `Failed` is).
    NoTimeLeft,
}

impl Outcome {
    /// The account whose gateway key the confirmation asks for: the person's own, whether made
    /// now or by an earlier try (asking again is harmless: the function is idempotent); never an
    /// operator's account.
    pub fn account_to_key(&self) -> Option<&str> {
        match self {
            Outcome::Made { account_id } | Outcome::AlreadyTied { account_id } => Some(account_id),
            Outcome::NotSignUp | Outcome::InvitedBefore { .. } | Outcome::TiedMeanwhile { .. } => {
                None
            }
        }
    }
}

/// The account self sign-up makes for the person `sub`: the same id on every try.
pub fn account_id_of(sub: &str) -> String {
    let digest = Sha256::digest(sub.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{ACCOUNT_PREFIX}{}", &hex[..ACCOUNT_HEX_DIGITS])
}

/// The trigger: the event is answered as it came (Cognito's rule), once its person has an
/// account and its gateway key is asked for (`keys`; None: not configured, nothing asked) within
/// the invocation's `deadline` (the Lambda context's).
pub async fn handle<S: AccountStore + KeyStore, K: GatewayKeyRequests>(
    store: &S,
    keys: Option<&K>,
    event: Value,
    deadline: SystemTime,
) -> Result<Value, SignupError> {
    let outcome = confirm(store, &event).await?;
    let key = match outcome.account_to_key() {
        Some(account_id) => {
            let left = deadline
                .duration_since(SystemTime::now())
                .unwrap_or_default();
            request_key(keys, account_id, left).await
        }
        None => KeyRequest::NotNeeded,
    };
    tracing::info!(?outcome, ?key, "post-confirmation");
    Ok(event)
}

/// Asks for the account's gateway key with `left` of the invocation's time; a failure, or too
/// little time, is logged, not returned (the module's doc says why).
pub async fn request_key<K: GatewayKeyRequests>(
    keys: Option<&K>,
    account_id: &str,
    left: Duration,
) -> KeyRequest {
    let Some(keys) = keys else {
        return KeyRequest::NotConfigured;
    };
    let Some(timeout) = invoke_timeout(left) else {
        tracing::error!(
            left_ms = left.as_millis() as u64,
            account_id,
            "{KEY_NOT_REQUESTED}"
        );
        return KeyRequest::NoTimeLeft;
    };
    match keys.request(account_id, timeout).await {
        Ok(()) => KeyRequest::Asked,
        Err(error) => {
            tracing::error!(error = %error, account_id, "{KEY_NOT_REQUESTED}");
            KeyRequest::Failed
        }
    }
}

/// The account and person a confirmation of a sign-up makes, once.
pub async fn confirm<S: AccountStore + KeyStore>(
    store: &S,
    event: &Value,
) -> Result<Outcome, SignupError> {
    let parsed: CognitoEventUserPoolsPostConfirmation =
        serde_json::from_value(event.clone()).map_err(SignupError::NotPostConfirmation)?;
    let source = parsed.cognito_event_user_pools_header.trigger_source;
    if !matches!(
        source,
        Some(CognitoEventUserPoolsPostConfirmationTriggerSource::ConfirmSignUp)
    ) {
        return Ok(Outcome::NotSignUp);
    }
    let attributes = parsed.request.user_attributes;
    let sub = attributes
        .get("sub")
        .filter(|sub| !sub.is_empty())
        .ok_or(SignupError::NoSub)?;
    let own = account_id_of(sub);
    if let Some(person) = store.find_person(sub).await.map_err(AccountError::from)? {
        let account_id = person.account_id;
        return Ok(if account_id == own {
            Outcome::AlreadyTied { account_id }
        } else {
            Outcome::InvitedBefore { account_id }
        });
    }
    let account = account::ensure_account(store, &own, None).await?;
    let person = PersonRecord {
        person_id: sub.clone(),
        account_id: account.account_id.clone(),
        namespace: account.namespace,
        email: attributes.get("email").cloned().unwrap_or_default(),
        created_at: now_rfc3339_millis(),
    };
    match account::add_person(store, &person).await {
        Ok(()) => Ok(Outcome::Made {
            account_id: account.account_id,
        }),
        // Tied to another account meanwhile (an operator's invitation): a person belongs to
        // one account, and they have it. The empty account made here is the operator's to delete.
        Err(AccountError::PersonTaken(_)) => Ok(Outcome::TiedMeanwhile {
            unused_account_id: account.account_id,
        }),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests;
