//! Who is calling, read from a request, and which callers a route admits ([`Callers`]).
//!
//! Through the gateway the authorizer has checked the credential already and put its verdict in
//! the request's context ([`caller_from_context`]); a request that came another way (cargo
//! lambda watch, a function URL) has its credential checked here, with the code the authorizer
//! runs ([`auth::authenticate`]). No route is ever unauthenticated.

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

use crate::ApiError;
use crate::auth::{self, Caller, CallerKind, KeyKind, KeyStore, PersonRecord, Principal};

/// Which callers a route admits, once their credential has checked (a credential that does not
/// is a 401 on every route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callers {
    /// A key of either kind or a person: a session start, the one route a public key (shipped
    /// in a web or mobile client) may use (contract section 11).
    AnyKey,
    /// A private key or a person: an account's other routes; a public key is a 403.
    KeyOrPerson,
    /// A person signed in to the console (`/v1/keys`): any API key is a 403, so a leaked key
    /// cannot mint more.
    PersonOnly,
}

impl Callers {
    /// The account `request` acts for, if this policy admits its caller: 401 for a credential
    /// that does not check, then 403 for a caller the route does not take.
    pub(super) async fn admit<K: KeyStore>(
        self,
        request: &Request,
        keys: &K,
    ) -> Result<Principal, ApiError> {
        let caller = caller(request, keys).await?;
        match (self, &caller.kind) {
            (Callers::PersonOnly, _) => Ok(person(caller, keys).await?.into()),
            (Callers::KeyOrPerson, CallerKind::Key(KeyKind::Public)) => Err(ApiError::Forbidden),
            (Callers::AnyKey | Callers::KeyOrPerson, _) => Ok(caller.principal),
        }
    }
}

/// The caller of `request`, with any credential that checks.
async fn caller<K: KeyStore>(request: &Request, keys: &K) -> Result<Caller, ApiError> {
    match caller_from_context(request.request_context_ref()) {
        Some(caller) => Ok(caller),
        None => auth::authenticate(request.headers(), keys)
            .await?
            .ok_or(ApiError::Unauthorized),
    }
}

/// The person `caller` is, as the accounts table knows them at this moment; any API key is a
/// 403 ([`ApiError::KeysNeedAPerson`]).
async fn person<K: KeyStore>(caller: Caller, keys: &K) -> Result<PersonRecord, ApiError> {
    let CallerKind::Person { person_id } = caller.kind else {
        return Err(ApiError::KeysNeedAPerson);
    };
    // Through the gateway the context names the person only; their record is one GetItem, and
    // a person removed since the authorizer's cached verdict is refused here at once.
    match keys.find_person(&person_id).await? {
        Some(person) if person.account_id == caller.principal.account_id => Ok(person),
        _ => Err(ApiError::Unauthorized),
    }
}

/// The caller the gateway's authorizer put into the request context, if any. Only the REST
/// API's context (payload 1.0) counts: that is what the deployed gateway and `sam local` send. A
/// payload 2.0 request (cargo lambda watch, a function URL) always has its credential checked
/// here. A context with `personId` is a person's (the authorizer then writes no `keyKind`); one
/// without either is a private key's: the authorizer names public keys, and none existed before
/// it did.
fn caller_from_context(context: Option<&RequestContext>) -> Option<Caller> {
    let Some(RequestContext::ApiGatewayV1(context)) = context else {
        return None;
    };
    let fields = &context.authorizer.fields;
    let text = |name: &str| fields.get(name)?.as_str().map(str::to_owned);
    let kind = match (text(auth::CONTEXT_PERSON_ID), text(auth::CONTEXT_KEY_KIND)) {
        (Some(person_id), None) if !person_id.is_empty() => CallerKind::Person { person_id },
        (Some(_), _) => return None,
        (None, None) => CallerKind::Key(KeyKind::Private),
        (None, Some(kind)) => CallerKind::Key(kind.parse().ok()?),
    };
    Some(Caller {
        principal: Principal {
            account_id: text(auth::CONTEXT_ACCOUNT_ID)?,
            namespace: text(auth::CONTEXT_NAMESPACE)?,
        },
        kind,
    })
}

#[cfg(test)]
mod tests;
