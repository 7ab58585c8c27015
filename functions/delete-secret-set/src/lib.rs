//! DELETE /v1/secrets/{setName}: the set and its sealed values; 409 while an agent's active
//! deployment uses it (its next start would fail), 404 when absent (contract section 10).

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::auth::KeyStore;
use shared::http::{Callers, Json, StatusOk, allow};
use shared::secrets::sets;
use shared::secrets::store::SecretStore;

pub async fn handle<S: SecretStore, K: KeyStore>(
    secrets: &S,
    keys: &K,
    request: Request,
) -> Response<Body> {
    shared::http::respond(delete_secret_set(secrets, keys, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, set))]
async fn delete_secret_set<S: SecretStore, K: KeyStore>(
    secrets: &S,
    keys: &K,
    request: &Request,
) -> Result<Json<StatusOk>, ApiError> {
    let caller = shared::http::route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::DELETE,
        allow::SECRET_SET,
    )
    .await?;
    let name = sets::existing_name(shared::http::path_parameter(request, "setName", 2))?;
    tracing::Span::current().record("set", name.as_str());
    sets::delete(secrets, &caller.namespace, &name).await?;
    Ok(shared::http::status_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::testing::fixture_request as event;

    #[tokio::test]
    async fn a_set_is_deleted_then_404() {
        let store = shared::testing::seeded_memory_store().await;
        let response = handle(&store, &store, event("delete-secret-set.json")).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body, json!({"status": "OK"}));
        let again = handle(&store, &store, event("delete-secret-set.json")).await;
        assert_eq!(again.status(), StatusCode::NOT_FOUND);
    }
}
