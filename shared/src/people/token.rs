//! The claims of a Cognito access token and its checks (docs/people.md, "Tokens and the
//! 60-second bound").

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::PeopleConfig;

/// Clock skew allowed on `exp` (jsonwebtoken's default is 60 s; a 15-minute token needs less).
pub const LEEWAY_SECONDS: u64 = 5;

/// What is read of an access token beyond what `Validation` checks (`iss`, `exp`). Cognito's
/// access tokens carry no `aud`: the app client is `client_id`, and `token_use` tells an access
/// token from an ID token, which is never accepted as a credential.
#[derive(Deserialize)]
struct Claims {
    sub: String,
    token_use: String,
    client_id: String,
}

/// The `kid` of a token's header, if the header is a JWS header of RS256 naming one.
pub(super) fn key_id(token: &str) -> Option<String> {
    match jsonwebtoken::decode_header(token) {
        Ok(header) if header.alg == Algorithm::RS256 => header.kid,
        Ok(header) => {
            tracing::info!(alg = ?header.alg, "access token refused: not RS256");
            None
        }
        Err(error) => {
            tracing::info!(error = %error, "access token refused: unreadable header");
            None
        }
    }
}

/// The person's `sub` when `token` is signed by `key`, issued by the pool, unexpired, an access
/// token and of the console's client; `None` otherwise.
pub(super) fn check(token: &str, key: &DecodingKey, config: &PeopleConfig) -> Option<String> {
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[&config.issuer]);
    validation.set_required_spec_claims(&["exp", "iss", "sub"]);
    validation.leeway = LEEWAY_SECONDS;
    validation.validate_aud = false;
    let claims = match jsonwebtoken::decode::<Claims>(token, key, &validation) {
        Ok(data) => data.claims,
        Err(error) => {
            tracing::info!(error = %error, "access token refused");
            return None;
        }
    };
    if claims.token_use != "access" {
        tracing::info!(token_use = %claims.token_use, "access token refused: not an access token");
        return None;
    }
    if claims.client_id != config.client_id {
        tracing::info!(client_id = %claims.client_id, "access token refused: another app client");
        return None;
    }
    if claims.sub.is_empty() {
        return None;
    }
    Some(claims.sub)
}
