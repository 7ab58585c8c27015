//! DELETE /v1/secrets/{setName}/{secretKey}: one key of a secret set; 404 when the set or the key
//! is absent, 400 on an image pull secret, which has no keys (contract section 10).

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::auth::KeyStore;
use shared::http::{Callers, Json, StatusOk, allow};
use shared::secrets::body::is_secret_key;
use shared::secrets::sets;
use shared::secrets::store::SecretStore;

pub async fn handle<S: SecretStore, K: KeyStore>(
    secrets: &S,
    keys: &K,
    request: Request,
) -> Response<Body> {
    shared::http::respond(delete_secret(secrets, keys, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, set, key))]
async fn delete_secret<S: SecretStore, K: KeyStore>(
    secrets: &S,
    keys: &K,
    request: &Request,
) -> Result<Json<StatusOk>, ApiError> {
    let caller = shared::http::route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::DELETE,
        allow::SECRET,
    )
    .await?;
    let name = sets::existing_name(shared::http::path_parameter(request, "setName", 2))?;
    let key = shared::http::path_parameter(request, "secretKey", 3)
        .filter(|key| is_secret_key(key))
        .ok_or_else(|| ApiError::NotFound("No key of that name in this secret set".to_owned()))?;
    let span = tracing::Span::current();
    span.record("set", name.as_str());
    span.record("key", key.as_str());
    sets::delete_key(secrets, &caller.namespace, &name, &key).await?;
    Ok(shared::http::status_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::secrets::store::SecretStore;
    use shared::testing::fixture_request as event;

    #[tokio::test]
    async fn a_key_is_deleted_then_404() {
        let store = shared::testing::seeded_memory_store().await;
        let response = handle(&store, &store, event("delete-secret.json")).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body, json!({"status": "OK"}));
        let set = store
            .get_set("dev-local", "fixture-keys")
            .await
            .unwrap()
            .unwrap();
        assert!(!set.keys.contains_key("OLD_KEY"));
        let again = handle(&store, &store, event("delete-secret.json")).await;
        assert_eq!(again.status(), StatusCode::NOT_FOUND);
    }
}
