//! People of the console: their Cognito access tokens checked (docs/people.md, "Tokens and the
//! 60-second bound").
//!
//! A [`Verifier`] holds the user pool's settings and its JWKS cache; [`Verifier::global`] is the
//! one a function uses, built from the environment the first time a token arrives (key-only
//! traffic keeps today's cold start). Who the person is (their account) is the accounts table's
//! business: `auth::KeyStore::find_person`.

mod jwks;
mod token;

#[cfg(any(test, feature = "test-support"))]
pub mod testing;

use std::sync::OnceLock;

pub use jwks::{FETCH_TIMEOUT, JwksSource, REFETCH_INTERVAL};
pub use token::LEEWAY_SECONDS;

use crate::error::StoreError;

/// The user pool's issuer: `https://cognito-idp.{region}.amazonaws.com/{poolId}` (moto's tokens
/// name the AWS form too, so this is not where the JWKS is fetched from).
pub const PEOPLE_ISSUER: &str = "PEOPLE_ISSUER";
/// The console's app client: an access token of another client is refused.
pub const PEOPLE_CLIENT_ID: &str = "PEOPLE_CLIENT_ID";
/// `{issuer}/.well-known/jwks.json` on AWS; moto's address locally.
pub const PEOPLE_JWKS_URL: &str = "PEOPLE_JWKS_URL";

/// Where tokens come from and how they are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeopleConfig {
    pub issuer: String,
    pub client_id: String,
    pub jwks_url: String,
}

impl PeopleConfig {
    /// The three variables; any unset or empty is `None`: every token is then refused.
    pub fn from_env() -> Option<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    fn from_lookup(variable: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let value = |name| variable(name).filter(|value| !value.is_empty());
        Some(PeopleConfig {
            issuer: value(PEOPLE_ISSUER)?,
            client_id: value(PEOPLE_CLIENT_ID)?,
            jwks_url: value(PEOPLE_JWKS_URL)?,
        })
    }
}

/// Checks access tokens of one user pool and app client.
pub struct Verifier {
    config: PeopleConfig,
    keys: jwks::JwksCache,
}

impl Verifier {
    pub fn new(config: PeopleConfig, jwks: JwksSource) -> Self {
        Verifier {
            config,
            keys: jwks::JwksCache::new(jwks),
        }
    }

    /// The process's verifier, from the environment, made once. In a build with test support
    /// it is [`testing::TestIssuer`]'s, whatever the environment says: its key is generated in
    /// the process and never leaves it.
    pub fn global() -> Option<&'static Verifier> {
        static GLOBAL: OnceLock<Option<Verifier>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                #[cfg(any(test, feature = "test-support"))]
                return Some(testing::TestIssuer::global().verifier());
                #[cfg(not(any(test, feature = "test-support")))]
                PeopleConfig::from_env().map(|config| {
                    let source = JwksSource::Http(config.jwks_url.clone());
                    Verifier::new(config, source)
                })
            })
            .as_ref()
    }

    /// `Ok(Some(sub))`: verified (the checks of docs/people.md); `Ok(None)`: refused, for whatever
    /// reason (logged, never the token); `Err` only when the JWKS could not be had.
    pub async fn verify(&self, token: &str) -> Result<Option<String>, StoreError> {
        let Some(kid) = token::key_id(token) else {
            return Ok(None);
        };
        let Some(key) = self.keys.key(&kid).await? else {
            tracing::info!(kid = %kid, "access token refused: no such key in the user pool's JWKS");
            return Ok(None);
        };
        Ok(token::check(token, &key, &self.config))
    }
}

#[cfg(test)]
mod tests;
