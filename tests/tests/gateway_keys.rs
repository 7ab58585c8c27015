//! Self sign-up's gateway key (contract section 9; docs/people.md): the gateway-keys function,
//! on moto's API Gateway, with its client built as the function builds it
//! (`shared::aws::apigateway_client`), and the post-confirmation trigger on DynamoDB Local asking
//! for the key of the account it made (the asynchronous Invoke between them replaced by a direct
//! call: the trigger's own tests check the Invoke).

use std::sync::Mutex;

use gateway_keys::GatewayKeysError;
use integration_tests::TestStore;
use integration_tests::apigateway::{STAGE, Stack};
use integration_tests::emulators::Moto;
use people_signup::{GatewayKeyRequests, KeyRequestError};
use serde_json::{Value, json};
use shared::account::AccountStore;
use shared::gateway::{Gateway, Plan};

/// The gateway-keys function's grants in template.yaml: (action, resource's path), the plan's
/// id written `${AccountsUsagePlan}`.
fn granted() -> Vec<(String, String)> {
    let template = integration_tests::template::template();
    let (_, grants) = integration_tests::template::function_grants(&template)
        .into_iter()
        .find(|(name, _)| *name == "GatewayKeysFunction")
        .expect("GatewayKeysFunction");
    let prefix = "arn:${AWS::Partition}:apigateway:${AWS::Region}::";
    let mut granted = Vec::new();
    for grant in grants {
        for action in &grant.actions {
            for resource in &grant.resources {
                let arn = integration_tests::template::sub(resource).expect("a !Sub ARN");
                let path = arn.strip_prefix(prefix).expect("an API Gateway ARN");
                granted.push((action.clone(), path.to_owned()));
            }
        }
    }
    granted
}

/// moto's API Gateway as the stack deploys it, with a client built as the function builds it.
async fn deploy(moto: &Moto) -> Stack {
    Stack::deploy(shared::aws::apigateway_client(Some(&moto.endpoint)).unwrap()).await
}

#[tokio::test]
async fn an_account_without_a_key_gets_one_in_the_default_plan_once_however_often_asked() {
    let moto = Moto::start();
    let stack = deploy(&moto).await;
    let store = TestStore::new().await;
    let gateway = stack.gateway();
    // The fixture `sam local invoke` sends (events/gateway-keys.json).
    let event: Value = shared::testing::fixture_event("gateway-keys.json");
    let account_id = event["account_id"].as_str().unwrap().to_owned();
    shared::account::ensure_account(&store.store, &account_id, None)
        .await
        .unwrap();

    stack.requests.take();
    let answer = gateway_keys::handle(&gateway, event.clone()).await.unwrap();
    // Every request the function sent is one its policy allows (template.yaml).
    let sent = stack.requests.take();
    let granted = granted();
    let plan_keys = format!("/usageplans/{}/keys", stack.default_plan_id);
    for request in &sent {
        let method = &request.method;
        let path = if request.path == plan_keys {
            "/usageplans/${AccountsUsagePlan}/keys"
        } else {
            &request.path
        };
        assert!(
            granted.contains(&(format!("apigateway:{method}"), path.to_owned())),
            "{method} {path} is not granted: {granted:?}"
        );
    }
    assert!(
        sent.iter().any(|request| request.method == "POST"),
        "the key was made: {sent:?}"
    );
    stack.assert_keyed(&account_id).await;
    let key_id = stack.keys().await[0].id().unwrap().to_owned();
    assert_eq!(
        answer,
        json!({"account_id": account_id, "key_id": key_id, "plan": "default"})
    );

    // Lambda's retry, the trigger's on Cognito's retry: the same key, in the same one plan.
    let again = gateway_keys::handle(&gateway, event.clone()).await.unwrap();
    assert_eq!(again, answer);
    assert_eq!(stack.keys().await.len(), 1);
    stack.assert_keyed(&account_id).await;
    assert_eq!(
        gateway.describe(&account_id).await.unwrap().unwrap().plan,
        Some(Plan::Default)
    );
}

#[tokio::test]
async fn two_requests_at_once_for_one_account_both_succeed_with_one_key_in_one_plan() {
    // Lambda may run the trigger's request and a retry (or Cognito's retry's request) at the
    // same moment: both find no key and both make it; API Gateway refuses the second
    // (ConflictException: the value is the account's own), which finds the first's.
    let moto = Moto::start();
    let stack = deploy(&moto).await;
    let gateway = stack.gateway();
    let account_id = format!("acct-{}", uuid::Uuid::new_v4().simple());
    let event = json!({ "account_id": account_id });

    let (first, second) = tokio::join!(
        gateway_keys::handle(&gateway, event.clone()),
        gateway_keys::handle(&gateway, event.clone()),
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first, second, "the same key, in the same plan");
    assert_eq!(stack.keys().await.len(), 1, "{:?}", stack.keys().await);
    stack.assert_keyed(&account_id).await;
    assert_eq!(first["plan"], "default");
}

#[tokio::test]
async fn a_bad_event_is_an_error_and_makes_nothing() {
    let moto = Moto::start();
    let stack = deploy(&moto).await;
    let gateway = stack.gateway();
    for event in [
        json!(null),
        json!({}),
        json!({"account_id": ""}),
        json!({"account_id": "Not/An/Id"}),
        json!({"account_id": "acme", "extra": 1}),
        json!({"accountId": "acme"}),
        json!(["acme"]),
    ] {
        let failed = gateway_keys::handle(&gateway, event.clone()).await;
        assert!(
            matches!(
                failed,
                Err(GatewayKeysError::Malformed(_) | GatewayKeysError::NotAnAccountId(_))
            ),
            "{event}: {failed:?}"
        );
    }
    assert!(stack.keys().await.is_empty(), "no key made");
}

#[tokio::test]
async fn api_gateway_failing_is_an_error_lambda_retries() {
    // Nothing listens on port 9: every call fails, after the client's bounded retries.
    let client = shared::aws::apigateway_client(Some("http://127.0.0.1:9")).unwrap();
    let gateway = Gateway::new(client, "api".into(), STAGE.into(), "plan".into());
    let failed = gateway_keys::handle(&gateway, json!({"account_id": "acme"})).await;
    assert!(
        matches!(failed, Err(GatewayKeysError::Gateway(_))),
        "{failed:?}"
    );
}

/// The trigger's port, answered by the function's handler at once (on AWS: Lambda's queue).
struct Direct<'a> {
    gateway: &'a Gateway,
    answers: Mutex<Vec<Value>>,
}

impl GatewayKeyRequests for Direct<'_> {
    async fn request(
        &self,
        account_id: &str,
        _timeout: std::time::Duration,
    ) -> Result<(), KeyRequestError> {
        let event = people_signup::gateway_keys::request_event(account_id);
        let answer = gateway_keys::handle(self.gateway, event)
            .await
            .map_err(|error| KeyRequestError {
                account_id: account_id.to_owned(),
                message: error.to_string(),
            })?;
        self.answers.lock().unwrap().push(answer);
        Ok(())
    }
}

#[tokio::test]
async fn a_person_who_signs_up_gets_an_account_and_its_gateway_key() {
    let moto = Moto::start();
    let stack = deploy(&moto).await;
    let store = TestStore::new().await;
    let gateway = stack.gateway();
    let keys = Direct {
        gateway: &gateway,
        answers: Mutex::default(),
    };
    // A sub of this run's own: DynamoDB Local's tables are shared by the suite's tests.
    let sub = uuid::Uuid::new_v4().to_string();
    let mut event: Value = shared::testing::fixture_event("people-signup.json");
    event["request"]["userAttributes"]["sub"] = sub.clone().into();

    let deadline = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    let answer = people_signup::handle(&store.store, Some(&keys), event.clone(), deadline)
        .await
        .unwrap();
    assert_eq!(answer, event);
    let account_id = people_signup::account_id_of(&sub);
    assert!(
        store
            .store
            .get_account(&account_id)
            .await
            .unwrap()
            .is_some()
    );
    stack.assert_keyed(&account_id).await;
    assert_eq!(keys.answers.lock().unwrap().len(), 1);
}
