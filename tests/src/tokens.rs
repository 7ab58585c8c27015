//! People in the handler tests: a person of an account, signed in with an access token of the
//! process's test issuer (shared::people::testing), and requests with that token as cargo lambda
//! watch hands them over (the keys routes take nothing else).

use lambda_http::{Request, RequestExt};
use serde_json::Value;
use shared::auth::PersonRecord;
use shared::people::testing::TestIssuer;

/// A person `person_id` of the existing account `account_id`, in `store`: their access token.
pub async fn person_token<S: shared::account::AccountStore>(
    store: &S,
    account_id: &str,
    person_id: &str,
) -> String {
    let account = store
        .get_account(account_id)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no account {account_id}"));
    let person = PersonRecord {
        person_id: person_id.to_owned(),
        account_id: account.account_id,
        namespace: account.namespace,
        email: format!("{person_id}@example.test"),
        created_at: shared::timestamp::now_rfc3339_millis(),
    };
    shared::account::add_person(store, &person).await.unwrap();
    TestIssuer::global().access_token(person_id)
}

/// `method` on `path` with `token` as the bearer, the route's path parameters and a JSON body
/// when given.
pub fn token_request(
    method: &str,
    path: &str,
    token: &str,
    params: &[(&str, &str)],
    body: Option<Value>,
) -> Request {
    let body = body.map_or(lambda_http::Body::Empty, |body| {
        lambda_http::Body::Text(body.to_string())
    });
    http::Request::builder()
        .method(method)
        .uri(format!("https://api.example.com{path}"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
        .with_path_parameters(
            params
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect::<std::collections::HashMap<_, _>>(),
        )
}

/// `method` on `/v1/keys` (no `key_id`) or `/v1/keys/{key_id}`, with `token`.
pub fn keys_request(
    method: &str,
    token: &str,
    key_id: Option<&str>,
    body: Option<&Value>,
) -> Request {
    let body = body.cloned();
    match key_id {
        None => token_request(method, "/v1/keys", token, &[], body),
        Some(id) => token_request(
            method,
            &format!("/v1/keys/{id}"),
            token,
            &[("keyId", id)],
            body,
        ),
    }
}
