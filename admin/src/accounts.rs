//! An account across the store and the gateway: the steps that touch both, each idempotent.

use shared::account::{self, AccountStore};

use crate::error::AdminError;
use crate::gateway::{AccountGateway, Gateway, SWEEP_PACE};

/// Deletes an account (refused while it has agents: `shared::account::delete_account`) and then
/// what it has at the gateway. Run again after a failure: both steps are idempotent. `false` when
/// there was no such account.
pub async fn delete_account<S: AccountStore>(
    store: &S,
    gateway: Option<&Gateway>,
    account_id: &str,
) -> Result<bool, AdminError> {
    let existed = account::delete_account(store, account_id).await?;
    if let Some(gateway) = gateway {
        gateway.remove_account(account_id).await?;
    }
    Ok(existed)
}

/// Makes the gateway key of every account whose key is missing or in no plan, at the pace
/// API Gateway allows; returns the accounts it changed.
pub async fn sync_gateway<S: AccountStore>(
    store: &S,
    gateway: &Gateway,
) -> Result<Vec<(String, AccountGateway)>, AdminError> {
    let mut changed = Vec::new();
    for account in store.list_accounts().await? {
        let before = gateway.describe(&account.account_id).await?;
        if before.is_some_and(|state| state.plan.is_some()) {
            continue;
        }
        let state = gateway.ensure_account(&account.account_id).await?;
        changed.push((account.account_id, state));
        tokio::time::sleep(SWEEP_PACE).await;
    }
    Ok(changed)
}
