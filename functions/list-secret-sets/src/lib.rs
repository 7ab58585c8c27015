//! GET /v1/secrets: the caller's secret sets by name, `limit` (1 to 100, default 100) at a time,
//! with `nextCursor` when more follow (contract section 10). Names and types, never a value.

use lambda_http::http::Method;
use lambda_http::{Body, Request, RequestExt, Response};
use shared::ApiError;
use shared::auth::KeyStore;
use shared::cursor::CursorKey;
use shared::http::{Callers, Json, allow};
use shared::paging::ListQuery;
use shared::secrets::sets;
use shared::secrets::store::SecretStore;
use shared::secrets::views::SetList;

pub async fn handle<S: SecretStore, K: KeyStore>(
    secrets: &S,
    keys: &K,
    cursor_key: &CursorKey,
    region: &str,
    request: Request,
) -> Response<Body> {
    shared::http::respond(list_secret_sets(secrets, keys, cursor_key, region, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace))]
async fn list_secret_sets<S: SecretStore, K: KeyStore>(
    secrets: &S,
    keys: &K,
    cursor_key: &CursorKey,
    region: &str,
    request: &Request,
) -> Result<Json<SetList>, ApiError> {
    let caller = shared::http::route(
        request,
        keys,
        Callers::KeyOrPerson,
        Method::GET,
        allow::SECRETS,
    )
    .await?;
    let params = request.query_string_parameters_ref();
    let query = ListQuery::from_params(
        params.into_iter().flat_map(|params| params.iter()),
        cursor_key,
        &sets::CURSOR_FORMAT,
        &caller.namespace,
    )?;
    Ok(Json(
        sets::list(secrets, &caller.namespace, &query, cursor_key, region).await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::Value;
    use shared::testing::fixture_request as event;

    #[tokio::test]
    async fn the_accounts_sets_are_listed_by_name_without_values() {
        let store = shared::testing::seeded_memory_store().await;
        let key = CursorKey::from_bytes([5; 32]);
        let response = handle(
            &store,
            &store,
            &key,
            "us-east-1",
            event("list-secret-sets.json"),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        let names: Vec<&str> = body["sets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["fixture-keys", "old-keys"]);
        assert_eq!(body["sets"][0]["type"], "secret");
        assert_eq!(body["sets"][0]["region"], "us-east-1");
    }
}
