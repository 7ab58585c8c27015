//! A person's API keys (docs/api.md, "Keys"), for the console and the anchor's CLI
//! (`organizations keys`): only a person signed in may use these routes; any API key is a 403,
//! so a leaked key cannot mint more. The key rules (names, the 50-live-key limit, revocation) are
//! `shared::account`'s, the operator command's too.
//!
//! - `GET /v1/keys`: the account's keys, newest first, as `keys` and, for the anchor's CLI, its
//!   public keys again as `public` in the CLI's shape;
//! - `POST /v1/keys` `{"kind": "private"|"public", "name"}` (`type` is the anchor's name of
//!   `kind`): 201 with the key, in this answer only (`Cache-Control: no-store`);
//! - `DELETE /v1/keys/{keyId}`: revoked (the first time stays), 404 for an id the caller's
//!   account does not have.

use lambda_http::http::header::{CACHE_CONTROL, HeaderValue};
use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use serde_json::Value;
use shared::ApiError;
use shared::account::{self, AccountError, AccountStore, KeySummary};
use shared::auth::{KeyKind, KeyStore, Principal};
use shared::http::{Callers, Json, Reply};

/// The methods `/v1/keys` serves (a 405's `Allow`).
pub const ALLOW_KEYS: &str = "GET, POST";
/// The methods `/v1/keys/{keyId}` serves.
pub const ALLOW_KEY: &str = "DELETE";

/// A key as listed and created (never the key itself but in a create's answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub id: String,
    pub kind: KeyKind,
    pub name: String,
    pub hint: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

impl From<KeySummary> for KeyView {
    fn from(key: KeySummary) -> Self {
        KeyView {
            id: key.key_id,
            kind: key.kind,
            name: key.name,
            hint: key.hint,
            created_at: key.created_at,
            revoked_at: key.revoked_at,
        }
    }
}

/// A public key as the anchor's CLI lists them (`organizations keys list`): `key` is the hint,
/// since only the key's hash is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnchorPublicKey {
    pub id: String,
    pub key: String,
    pub metadata: AnchorMetadata,
    pub created_at: String,
    pub revoked: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnchorMetadata {
    pub name: String,
}

#[derive(Debug, Serialize)]
pub struct KeyList {
    pub keys: Vec<KeyView>,
    pub public: Vec<AnchorPublicKey>,
}

/// A created key: 201, the key in this answer only, never stored by a cache.
#[derive(Serialize)]
pub struct Created {
    #[serde(flatten)]
    pub view: KeyView,
    pub key: String,
}

impl Reply for Created {
    fn into_response(self) -> Response<Body> {
        let mut response = shared::http::json_response(StatusCode::CREATED, &self);
        response
            .headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    pub id: String,
    pub revoked_at: String,
}

/// One of the routes' answers.
pub enum Answer {
    List(Json<KeyList>),
    Created(Created),
    Revoked(Json<Revoked>),
}

impl Reply for Answer {
    fn into_response(self) -> Response<Body> {
        match self {
            Answer::List(list) => list.into_response(),
            Answer::Created(created) => created.into_response(),
            Answer::Revoked(revoked) => revoked.into_response(),
        }
    }
}

/// The answer to `request`.
pub async fn handle<S: AccountStore + KeyStore>(store: &S, request: Request) -> Response<Body> {
    shared::http::respond(keys(store, &request).await)
}

#[tracing::instrument(skip_all, fields(namespace, key_id))]
async fn keys<S: AccountStore + KeyStore>(
    store: &S,
    request: &Request,
) -> Result<Answer, ApiError> {
    let operation = Operation::of(request);
    let (method, allow) = operation.method();
    let caller = shared::http::route(request, store, Callers::PersonOnly, method, allow).await?;
    match operation {
        Operation::List => list(store, &caller).await.map(Answer::List),
        Operation::Create => create(store, &caller, request).await.map(Answer::Created),
        Operation::Revoke(key_id) => {
            tracing::Span::current().record("key_id", key_id.as_str());
            revoke(store, &caller, &key_id).await.map(Answer::Revoked)
        }
    }
}

/// What a request asks of the keys: the path names the key of a revoke; on `/v1/keys` a POST
/// creates, and any other method is taken for the list (a GET, or a 405 with the path's
/// `Allow`).
#[derive(Debug)]
enum Operation {
    List,
    Create,
    Revoke(String),
}

impl Operation {
    fn of(request: &Request) -> Self {
        match shared::http::path_parameter(request, "keyId", 2) {
            Some(key_id) => Operation::Revoke(key_id),
            None if *request.method() == Method::POST => Operation::Create,
            None => Operation::List,
        }
    }

    /// The method the operation is asked with, and its path's `Allow`.
    fn method(&self) -> (Method, &'static str) {
        match self {
            Operation::List => (Method::GET, ALLOW_KEYS),
            Operation::Create => (Method::POST, ALLOW_KEYS),
            Operation::Revoke(_) => (Method::DELETE, ALLOW_KEY),
        }
    }
}

async fn list<S: AccountStore>(store: &S, caller: &Principal) -> Result<Json<KeyList>, ApiError> {
    let keys = account::list_keys(store, &caller.account_id)
        .await
        .map_err(api_error)?;
    let public = keys
        .iter()
        .filter(|key| key.kind == KeyKind::Public)
        .map(|key| AnchorPublicKey {
            id: key.key_id.clone(),
            key: key.hint.clone(),
            metadata: AnchorMetadata {
                name: key.name.clone(),
            },
            created_at: key.created_at.clone(),
            revoked: key.revoked_at.is_some(),
        })
        .collect();
    Ok(Json(KeyList {
        keys: keys.into_iter().map(KeyView::from).collect(),
        public,
    }))
}

/// What a create's body asks for.
#[derive(Debug, PartialEq, Eq)]
pub struct NewKey {
    pub kind: KeyKind,
    pub name: String,
}

impl NewKey {
    /// `{"kind", "name"}`, `type` for `kind`; every refusal names its member.
    pub fn from_json(body: Value) -> Result<Self, ApiError> {
        let Value::Object(members) = body else {
            return Err(ApiError::bad_body(
                "Request body must be a JSON object such as {\"kind\": \"private\", \"name\": \"ci\"}",
            ));
        };
        if let Some(unknown) = members
            .keys()
            .find(|member| !["kind", "type", "name"].contains(&member.as_str()))
        {
            let field = shared::validation::echoed(unknown);
            return Err(ApiError::bad_request(
                field.clone(),
                format!("{field} is not a member of a key; give kind and name"),
            ));
        }
        let (field, kind) = match (members.get("kind"), members.get("type")) {
            (Some(_), Some(_)) => {
                return Err(ApiError::bad_request(
                    "type",
                    "type is the anchor's name of kind; give one of them",
                ));
            }
            (Some(kind), None) => ("kind", kind),
            (None, Some(kind)) => ("type", kind),
            (None, None) => {
                return Err(ApiError::bad_request(
                    "kind",
                    "kind is required: private or public",
                ));
            }
        };
        let kind = kind
            .as_str()
            .and_then(|text| text.parse::<KeyKind>().ok())
            .ok_or_else(|| {
                ApiError::bad_request(field, format!("{field} must be private or public"))
            })?;
        let name = match members.get("name") {
            Some(Value::String(name)) if account::is_key_name(name) => name.clone(),
            _ => return Err(bad_name()),
        };
        Ok(NewKey { kind, name })
    }
}

fn bad_name() -> ApiError {
    ApiError::bad_request(
        "name",
        format!(
            "name is required: 1 to {} characters, none a control character",
            account::MAX_KEY_NAME_CHARS
        ),
    )
}

async fn create<S: AccountStore>(
    store: &S,
    caller: &Principal,
    request: &Request,
) -> Result<Created, ApiError> {
    let new = NewKey::from_json(shared::http::request_json(request)?)?;
    let (key, summary) = account::issue_named_key(store, &caller.account_id, new.kind, &new.name)
        .await
        .map_err(api_error)?;
    // The key id only: never the key.
    tracing::info!(key_id = %summary.key_id, kind = new.kind.as_str(), "key issued");
    Ok(Created {
        view: summary.into(),
        key: key.expose().to_owned(),
    })
}

async fn revoke<S: AccountStore>(
    store: &S,
    caller: &Principal,
    key_id: &str,
) -> Result<Json<Revoked>, ApiError> {
    let revoked_at = account::revoke_key(store, &caller.account_id, key_id)
        .await
        .map_err(api_error)?;
    tracing::info!("key revoked");
    Ok(Json(Revoked {
        id: key_id.to_owned(),
        revoked_at,
    }))
}

/// The key rules' refusals as the API answers them (mapped here once).
fn api_error(error: AccountError) -> ApiError {
    match error {
        AccountError::Store(error) => error.into(),
        AccountError::KeyLimit => ApiError::bad_body(format!(
            "this account has {} live keys, the most it may have; revoke one first",
            account::MAX_LIVE_KEYS
        )),
        AccountError::BadKeyName => bad_name(),
        AccountError::NoKey => ApiError::NotFound("No key of that id in this account".to_owned()),
        // The person's account went away under them: nothing of theirs is left to manage.
        other => ApiError::internal(other),
    }
}

#[cfg(test)]
mod tests;
