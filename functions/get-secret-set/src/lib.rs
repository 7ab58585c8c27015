//! GET /v1/secrets/{setName}: one set, its keys' names (a secret set) or its registry (an image
//! pull secret); never a value (contract section 10). Other methods of the path that no other
//! function serves get a 405 here.

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::auth::KeyStore;
use shared::http::{Callers, Json, allow};
use shared::secrets::sets;
use shared::secrets::store::SecretStore;
use shared::secrets::views::SetView;

pub async fn handle<S: SecretStore, K: KeyStore>(
    secrets: &S,
    keys: &K,
    region: &str,
    request: Request,
) -> Response<Body> {
    shared::http::respond(get_secret_set(secrets, keys, region, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, set))]
async fn get_secret_set<S: SecretStore, K: KeyStore>(
    secrets: &S,
    keys: &K,
    region: &str,
    request: &Request,
) -> Result<Json<SetView>, ApiError> {
    let caller = shared::http::route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::GET,
        allow::SECRET_SET,
    )
    .await?;
    let name = sets::existing_name(shared::http::path_parameter(request, "setName", 2))?;
    tracing::Span::current().record("set", name.as_str());
    Ok(Json(
        sets::get(secrets, &caller.namespace, &name, region).await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::testing::fixture_request as event;

    async fn call(request: Request) -> (StatusCode, Value) {
        let store = shared::testing::seeded_memory_store().await;
        let response = handle(&store, &store, "us-east-1", request).await;
        (
            response.status(),
            serde_json::from_slice(response.body().as_ref()).unwrap(),
        )
    }

    #[tokio::test]
    async fn a_set_shows_its_key_names_only() {
        let (status, body) = call(event("get-secret-set.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["name"], "fixture-keys");
        assert_eq!(body["type"], "secret");
        assert_eq!(body["status"], "ready");
        assert_eq!(
            body["secrets"],
            json!([{"fieldName": "OLD_KEY", "updatedAt": "2026-11-24T10:00:00.000Z"},
                   {"fieldName": "OPENAI_API_KEY", "updatedAt": "2026-11-24T10:00:00.000Z"}])
        );
    }

    #[tokio::test]
    async fn a_set_not_in_the_account_is_404_and_other_methods_405() {
        let (status, body) = call(event("get-secret-set-unknown.json")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(body["code"], "NOT_FOUND");
        let (status, body) = call(event("get-secret-set-wrong-method.json")).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    }
}
