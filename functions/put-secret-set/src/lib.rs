//! PUT /v1/secrets/{setName}: a secret set made or changed (contract section 10). Each value is
//! sealed under a KMS data key of its own before anything is stored; this function can make
//! data keys and never decrypt one.

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use shared::ApiError;
use shared::auth::KeyStore;
use shared::http::{Callers, Json, allow};
use shared::secrets::body::SetChange;
use shared::secrets::sets;
use shared::secrets::store::{DataKeys, SecretStore};
use shared::secrets::views::PutAnswer;

pub async fn handle<S: SecretStore, D: DataKeys, K: KeyStore>(
    secrets: &S,
    data_keys: &D,
    keys: &K,
    region: &str,
    request: Request,
) -> Response<Body> {
    shared::http::respond(put_secret_set(secrets, data_keys, keys, region, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, set))]
async fn put_secret_set<S: SecretStore, D: DataKeys, K: KeyStore>(
    secrets: &S,
    data_keys: &D,
    keys: &K,
    region: &str,
    request: &Request,
) -> Result<Json<PutAnswer>, ApiError> {
    let caller = shared::http::route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::PUT,
        allow::SECRET_SET,
    )
    .await?;
    let name = sets::new_name(shared::http::path_parameter(request, "setName", 2))?;
    tracing::Span::current().record("set", name.as_str());
    let body = shared::http::request_json(request)?;
    let change = SetChange::from_json(&name, region, body)?;
    let answer = sets::put(secrets, data_keys, &caller.namespace, &name, region, change).await?;
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store with a stand-in for KMS, fed with the events/
    //! fixtures; tests/ runs it on DynamoDB Local and moto's KMS.

    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::store::memory::MemoryStore;
    use shared::testing::data_keys::FakeKms;
    use shared::testing::fixture_request as event;

    async fn call(store: &MemoryStore, request: Request) -> (StatusCode, Value) {
        let kms = FakeKms::default();
        let response = handle(store, &kms, store, "us-east-1", request).await;
        let status = response.status();
        (
            status,
            serde_json::from_slice(response.body().as_ref()).unwrap(),
        )
    }

    #[tokio::test]
    async fn a_key_is_set_and_the_answer_names_the_set_never_the_value() {
        let store = shared::testing::seeded_memory_store().await;
        let (status, body) = call(&store, event("put-secret-set.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body,
            json!({"status": "OK", "name": "voice-keys", "type": "secret", "region": "us-east-1"})
        );
        assert_eq!(store.sealed_value_count(), 1);
    }

    #[tokio::test]
    async fn bad_input_is_400_naming_the_member_and_stores_nothing() {
        let store = shared::testing::seeded_memory_store().await;
        let (status, body) = call(&store, event("put-secret-set-invalid.json")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["field"], "secretKey");
        assert!(!body.to_string().contains("planted"), "{body}");
        assert_eq!(store.sealed_value_count(), 0);
    }

    #[tokio::test]
    async fn an_image_pull_secret_is_its_own_type() {
        let store = shared::testing::seeded_memory_store().await;
        let (status, body) = call(&store, event("put-image-pull-secret.json")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["type"], "imagePullSecret");
    }
}
