//! What the anchor's CLI (`pipecatcloud`) reads of the service and of the caller's account
//! before a deploy, each a GET of the caller's private key (a public key is a 403, as on every
//! route but a session start); the paths' other methods get a 405 here:
//!
//! - `/v1/properties`: `{"properties": {"defaultRegion"}}`, the region a deploy without
//!   `--region` names: this service's own;
//! - `/v1/regions`: `{"regions": [{"code", "display_name", "supported_architectures"}]}` (the
//!   anchor's snake_case members), the one region this service runs in, whose agents run on
//!   arm64 (nodeType `arm`);
//! - `/v1/organizations`: `{"organizations": [{"name", "verboseName"}]}`, the caller's account
//!   (its id), which the CLI takes as its organization when none is configured.
//!
//! One function for the three: each is an answer made of the key's account and the region, with
//! nothing to read but the key; they share its permissions (the accounts table's GetItem).

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use shared::ApiError;
use shared::auth::{KeyStore, Principal};
use shared::http::{Callers, Json};

/// The methods each path serves (a 405's `Allow`).
pub const ALLOW: &str = "GET";

/// The architecture every agent runs on (nodeType `arm`, the only node type), in the anchor's
/// vocabulary.
pub const ARCHITECTURE: &str = "arm64";

/// The route a request came by, from its path's last segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Properties,
    Regions,
    Organizations,
}

impl Route {
    /// The last segment of the URI's path, which a stage prefix (a REST event's) leaves alone.
    fn of(request: &Request) -> Option<Self> {
        match request.uri().path().rsplit('/').next() {
            Some("properties") => Some(Route::Properties),
            Some("regions") => Some(Route::Regions),
            Some("organizations") => Some(Route::Organizations),
            _ => None,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Properties<'a> {
    pub properties: ServiceProperties<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceProperties<'a> {
    pub default_region: &'a str,
}

#[derive(Debug, Serialize)]
pub struct Regions<'a> {
    pub regions: [Region<'a>; 1],
}

/// A region as the anchor's CLI reads it (snake_case, its own names).
#[derive(Debug, Serialize)]
pub struct Region<'a> {
    pub code: &'a str,
    pub display_name: &'a str,
    pub supported_architectures: [&'static str; 1],
}

#[derive(Debug, Serialize)]
pub struct Organizations {
    pub organizations: [Organization; 1],
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub name: String,
    pub verbose_name: String,
}

/// One of the three answers.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answer<'a> {
    Properties(Properties<'a>),
    Regions(Regions<'a>),
    Organizations(Organizations),
}

impl<'a> Answer<'a> {
    fn of(route: Route, caller: &Principal, region: &'a str) -> Self {
        match route {
            Route::Properties => Answer::Properties(Properties {
                properties: ServiceProperties {
                    default_region: region,
                },
            }),
            Route::Regions => Answer::Regions(Regions {
                regions: [Region {
                    code: region,
                    display_name: region,
                    supported_architectures: [ARCHITECTURE],
                }],
            }),
            Route::Organizations => Answer::Organizations(Organizations {
                organizations: [Organization {
                    name: caller.account_id.clone(),
                    verbose_name: caller.account_id.clone(),
                }],
            }),
        }
    }
}

/// The answer to `request`, in `region` (the service's).
pub async fn handle<K: KeyStore>(keys: &K, region: &str, request: Request) -> Response<Body> {
    shared::http::respond(account_info(keys, region, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, route))]
async fn account_info<'a, K: KeyStore>(
    keys: &K,
    region: &'a str,
    request: &Request,
) -> Result<Json<Answer<'a>>, ApiError> {
    let caller =
        shared::http::route(request, keys, Callers::KeyOrPerson, Method::GET, ALLOW).await?;
    // The gateway sends only the three paths; any other (a misrouted request) is no resource.
    let route = Route::of(request).ok_or_else(|| {
        ApiError::NotFound("No such resource; the API lives under /v1".to_owned())
    })?;
    tracing::Span::current().record("route", format!("{route:?}"));
    Ok(Json(Answer::of(route, &caller, region)))
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory store, fed with the events/ fixtures; tests/ runs it against
    //! DynamoDB Local.

    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::{Value, json};
    use shared::store::memory::MemoryStore;
    use shared::testing::fixture_request as event;

    async fn call(fixture: &str) -> (StatusCode, Value) {
        let store = MemoryStore::default();
        let response = handle(&store, "eu-west-1", event(fixture)).await;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            assert_eq!(response.headers()["allow"], "GET");
        }
        let status = response.status();
        let body = serde_json::from_slice(response.body().as_ref()).unwrap();
        (status, body)
    }

    #[tokio::test]
    async fn properties_name_the_services_region_as_the_default() {
        let (status, body) = call("account-info-properties.json").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, json!({"properties": {"defaultRegion": "eu-west-1"}}));
    }

    #[tokio::test]
    async fn regions_are_the_services_one_region_on_arm64() {
        let (status, body) = call("account-info-regions.json").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body,
            json!({"regions": [{"code": "eu-west-1", "display_name": "eu-west-1",
                "supported_architectures": ["arm64"]}]})
        );
    }

    #[tokio::test]
    async fn organizations_are_the_callers_account() {
        let (status, body) = call("account-info-organizations.json").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let account = shared::testing::dev_owner().account_id;
        assert_eq!(
            body,
            json!({"organizations": [{"name": account, "verboseName": account}]})
        );
    }

    #[tokio::test]
    async fn a_public_key_is_403_and_other_methods_405() {
        let (status, body) = call("account-info-public-key.json").await;
        assert_eq!(
            (status, &body["code"]),
            (StatusCode::FORBIDDEN, &"FORBIDDEN".into())
        );
        let (status, body) = call("account-info-wrong-method.json").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
        assert_eq!(body["code"], "METHOD_NOT_ALLOWED");
    }
}
