//! Contract section 9, the operator's side: each account has one gateway key, whose value is the
//! usage-plan key the authorizer names, in exactly one usage plan of the API's stage: the
//! stack's default plan, or its own after `set-limits`; made with the account, removed with it.
//! API Gateway is moto's server (an emulator of the real API); the store is DynamoDB Local.
//! moto does not refuse what AWS refuses (a key in two plans of a stage, deleting a plan that
//! still has a stage), so the tests check after every step that the key is in exactly one plan.

use agent_hosting_admin::accounts;
use agent_hosting_admin::gateway::{Limits, Plan};
use integration_tests::apigateway::{Requests, STAGE, Stack};
use integration_tests::emulators::Moto;
use integration_tests::{TestStore, create_named_agent};
use shared::account::AccountStore;

#[tokio::test]
async fn an_account_gets_one_enabled_key_in_the_default_plan_with_the_value_the_authorizer_names() {
    let moto = Moto::start();
    let stack = Stack::deploy(moto.apigateway()).await;
    let store = TestStore::new().await;
    let gateway = stack.gateway();
    shared::account::ensure_account(&store.store, "acme", None)
        .await
        .unwrap();

    let state = gateway.ensure_account("acme").await.unwrap();
    assert_eq!(state.plan, Some(Plan::Default));
    // Its one key, enabled, with the value the authorizer names, in the default plan alone.
    assert_eq!(stack.assert_keyed("acme").await, state.key_id);

    // Again (create-account, issue-key run twice): the same key, no second one.
    assert_eq!(gateway.ensure_account("acme").await.unwrap(), state);
    let keys = stack.client.get_api_keys().send().await.unwrap();
    assert_eq!(keys.items().len(), 1, "{keys:?}");
}

#[tokio::test]
async fn set_limits_gives_the_account_its_own_plan_and_reset_limits_takes_it_back() {
    let moto = Moto::start();
    let stack = Stack::deploy(moto.apigateway()).await;
    let store = TestStore::new().await;
    let gateway = stack.gateway();
    for account in ["acme", "bob"] {
        shared::account::ensure_account(&store.store, account, None)
            .await
            .unwrap();
    }
    let bob = gateway.ensure_account("bob").await.unwrap();

    let acme_default = gateway.ensure_account("acme").await.unwrap();
    stack.requests.take();
    let limits = Limits { rate: 5, burst: 10 };
    let acme = gateway.set_limits("acme", limits).await.unwrap();
    let Some(Plan::Own {
        plan_id,
        limits: own,
    }) = &acme.plan
    else {
        panic!("acme's own plan: {acme:?}");
    };
    assert_eq!(*own, limits);
    let plan = stack.only_plan_of(&acme.key_id).await;
    assert_eq!(plan.id.as_deref(), Some(plan_id.as_str()));
    let throttle = plan.throttle().unwrap();
    assert_eq!((throttle.rate_limit(), throttle.burst_limit()), (5.0, 10));
    assert_eq!(
        plan.api_stages()[0].api_id(),
        Some(stack.rest_api_id.as_str())
    );
    assert_eq!(plan.api_stages()[0].stage(), Some(STAGE));
    // Out of the default plan before into its own: AWS refuses a key in two plans of a stage.
    Requests::assert_before(
        &stack.requests.take_lines(),
        &format!(
            "DELETE /usageplans/{}/keys/{}",
            stack.default_plan_id, acme_default.key_id
        ),
        &format!("POST /usageplans/{plan_id}/keys"),
    );

    // New limits change the same plan.
    let changed = gateway
        .set_limits("acme", Limits { rate: 7, burst: 14 })
        .await
        .unwrap();
    assert_eq!(
        changed.plan,
        Some(Plan::Own {
            plan_id: plan_id.clone(),
            limits: Limits { rate: 7, burst: 14 }
        })
    );
    assert_eq!(stack.plan_names().await.len(), 2, "the default and acme's");

    stack.requests.take();
    let reset = gateway.reset_limits("acme").await.unwrap();
    let sent = stack.requests.take_lines();
    Requests::assert_before(
        &sent,
        &format!("DELETE /usageplans/{plan_id}/keys/{}", acme.key_id),
        &format!("POST /usageplans/{}/keys", stack.default_plan_id),
    );
    // A plan with a stage cannot be deleted: the stage is removed first.
    Requests::assert_before(
        &sent,
        &format!("PATCH /usageplans/{plan_id}"),
        &format!("DELETE /usageplans/{plan_id}"),
    );
    assert_eq!(reset.plan, Some(Plan::Default));
    assert_eq!(reset.key_id, acme.key_id);
    assert_eq!(
        stack.only_plan_of(&acme.key_id).await.id.as_deref(),
        Some(stack.default_plan_id.as_str())
    );
    assert_eq!(
        stack.plan_names().await,
        ["accounts"],
        "acme's plan is gone"
    );

    // Bob was under the default limits throughout, with his key.
    assert_eq!(gateway.describe("bob").await.unwrap(), Some(bob));

    assert!(
        gateway
            .set_limits("acme", Limits { rate: 0, burst: 1 })
            .await
            .is_err(),
        "a rate of 0 is refused"
    );
}

#[tokio::test]
async fn an_account_with_agents_is_not_deleted_one_without_is_removed_everywhere() {
    let moto = Moto::start();
    let stack = Stack::deploy(moto.apigateway()).await;
    let store = TestStore::new().await;
    let gateway = stack.gateway();

    let (acme, acme_key) = store.account_with_key("acme").await;
    gateway.ensure_account("acme").await.unwrap();
    create_named_agent(&store, &acme_key, "support-bot").await;
    let refused = accounts::delete_account(&store.store, Some(&gateway), "acme").await;
    assert!(refused.is_err(), "acme still has an agent");
    assert!(store.store.get_account("acme").await.unwrap().is_some());
    assert!(gateway.describe("acme").await.unwrap().is_some());
    assert!(
        shared::auth::authenticate(&bearer_headers(&acme_key), &store.store)
            .await
            .unwrap()
            .is_some(),
        "acme's key still works"
    );

    let (bob, bob_key) = store.account_with_key("bob").await;
    let bob_gateway = gateway
        .set_limits("bob", Limits { rate: 2, burst: 4 })
        .await
        .unwrap();
    stack.requests.take();
    assert!(
        accounts::delete_account(&store.store, Some(&gateway), "bob")
            .await
            .unwrap()
    );
    let Some(Plan::Own { plan_id, .. }) = &bob_gateway.plan else {
        panic!("bob's own plan: {bob_gateway:?}");
    };
    let sent = stack.requests.take_lines();
    // The key leaves its plan before it is deleted; the plan loses its stage before it is.
    Requests::assert_before(
        &sent,
        &format!("DELETE /usageplans/{plan_id}/keys/{}", bob_gateway.key_id),
        &format!("DELETE /apikeys/{}", bob_gateway.key_id),
    );
    Requests::assert_before(
        &sent,
        &format!("PATCH /usageplans/{plan_id}"),
        &format!("DELETE /usageplans/{plan_id}"),
    );
    assert!(store.store.get_account("bob").await.unwrap().is_none());
    assert!(store.store.list_keys("bob").await.unwrap().is_empty());
    assert!(
        shared::auth::authenticate(&bearer_headers(&bob_key), &store.store)
            .await
            .unwrap()
            .is_none(),
        "bob's key no longer authenticates"
    );
    assert_eq!(gateway.describe("bob").await.unwrap(), None);
    assert!(stack.plans_with_key(&bob_gateway.key_id).await.is_empty());
    assert_eq!(stack.plan_names().await, ["accounts"], "bob's plan is gone");
    // His namespace is never another account's.
    assert!(
        shared::account::ensure_account(&store.store, "carol", Some(&bob.namespace))
            .await
            .is_err()
    );
    // Deleting again is harmless; acme is untouched.
    assert!(
        !accounts::delete_account(&store.store, Some(&gateway), "bob")
            .await
            .unwrap()
    );
    assert!(
        store
            .store
            .get_account(&acme.account_id)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        gateway.describe("acme").await.unwrap().unwrap().plan,
        Some(Plan::Default)
    );
}

#[tokio::test]
async fn sync_gateway_gives_every_account_made_without_the_gateway_its_key() {
    let moto = Moto::start();
    let stack = Stack::deploy(moto.apigateway()).await;
    let store = TestStore::new().await;
    let gateway = stack.gateway();
    for account in ["acme", "bob", "carol"] {
        shared::account::ensure_account(&store.store, account, None)
            .await
            .unwrap();
    }
    gateway.ensure_account("acme").await.unwrap();
    gateway
        .set_limits("carol", Limits { rate: 3, burst: 3 })
        .await
        .unwrap();

    let changed = accounts::sync_gateway(&store.store, &gateway)
        .await
        .unwrap();
    let names: Vec<&str> = changed
        .iter()
        .map(|(account, _)| account.as_str())
        .collect();
    assert_eq!(names, ["bob"], "only the account without a key");
    for account in ["acme", "bob", "carol"] {
        let state = gateway.describe(account).await.unwrap().unwrap();
        stack.only_plan_of(&state.key_id).await;
    }
    assert!(matches!(
        gateway.describe("carol").await.unwrap().unwrap().plan,
        Some(Plan::Own { .. })
    ));
    assert!(
        accounts::sync_gateway(&store.store, &gateway)
            .await
            .unwrap()
            .is_empty()
    );
}

fn bearer_headers(key: &shared::auth::ApiKey) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        integration_tests::bearer(key).parse().unwrap(),
    );
    headers
}
