//! The user pool's signing keys (its JWKS), fetched on the first token an execution environment
//! sees and kept for the environment's life (docs/decisions.md, "JWKS"). A `kid` the cached set
//! lacks (Cognito rotated its keys) refetches, but at most once per [`REFETCH_INTERVAL`], so
//! tokens with made-up `kid`s cannot turn every request into a fetch.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use tokio::sync::RwLock;

use crate::error::{BoxError, StoreError};

/// The longest a JWKS fetch may take: well inside the authorizer's 5 s.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// The least time between two fetches caused by an unknown `kid`.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(60);
/// A JWKS is a few keys of about 500 bytes; anything much larger is not one.
const MAX_JWKS_BYTES: usize = 64 * 1024;

/// Where the signing keys come from.
pub enum JwksSource {
    /// Fetched from this URL: `https://`, or plain `http://` to a loopback or private address
    /// (moto on this machine or on Docker's bridge); any other URL fails every fetch.
    Http(String),
    /// Given once (tests).
    Static(JwkSet),
}

type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

pub(super) struct JwksCache {
    source: JwksSource,
    refetch_interval: Duration,
    /// The last set fetched and when it was fetched (or a refetch last failed).
    state: RwLock<Option<(JwkSet, Instant)>>,
    client: OnceLock<HttpClient>,
}

impl JwksCache {
    pub(super) fn new(source: JwksSource) -> Self {
        Self::with_interval(source, REFETCH_INTERVAL)
    }

    pub(super) fn with_interval(source: JwksSource, refetch_interval: Duration) -> Self {
        JwksCache {
            source,
            refetch_interval,
            state: RwLock::new(None),
            client: OnceLock::new(),
        }
    }

    /// The RSA key `kid` names; `None` when the set has none (after at most one refetch).
    pub(super) async fn key(&self, kid: &str) -> Result<Option<DecodingKey>, StoreError> {
        let url = match &self.source {
            JwksSource::Static(set) => return Ok(rsa_key(set, kid)),
            JwksSource::Http(url) => url,
        };
        if let Some(found) = self.cached(&*self.state.read().await, kid) {
            return Ok(found);
        }
        let mut state = self.state.write().await;
        // Another request may have fetched while this one waited for the lock.
        if let Some(found) = self.cached(&state, kid) {
            return Ok(found);
        }
        // Boxed as a trait object: the HTTP client's future is deep, and every function's
        // handler future would otherwise hold its type (rustc's query depth limit).
        let fetch: std::pin::Pin<Box<dyn Future<Output = _> + Send + '_>> =
            Box::pin(self.fetch(url));
        match fetch.await {
            Ok(set) => {
                let key = rsa_key(&set, kid);
                tracing::info!(keys = set.keys.len(), "user pool JWKS fetched");
                *state = Some((set, Instant::now()));
                Ok(key)
            }
            Err(error) => {
                // Keep the old set; the failed attempt counts as a fetch for the interval.
                if let Some((_, fetched)) = state.as_mut() {
                    *fetched = Instant::now();
                }
                Err(error)
            }
        }
    }

    /// `Some` when the cached state answers without a fetch: the key, or `None` for an unknown
    /// `kid` fetched too recently to fetch again.
    fn cached(&self, state: &Option<(JwkSet, Instant)>, kid: &str) -> Option<Option<DecodingKey>> {
        let (set, fetched) = state.as_ref()?;
        match rsa_key(set, kid) {
            Some(key) => Some(Some(key)),
            None if fetched.elapsed() < self.refetch_interval => Some(None),
            None => None,
        }
    }

    async fn fetch(&self, url: &str) -> Result<JwkSet, StoreError> {
        let uri = allowed_uri(url).map_err(StoreError::Unexpected)?;
        let client = self.client.get_or_init(http_client);
        let get = async {
            let response = client
                .get(uri)
                .await
                .map_err(|error| StoreError::Timeout(error.into()))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
                .collect()
                .await
                .map_err(StoreError::Timeout)?
                .to_bytes();
            if !status.is_success() {
                return Err(StoreError::Unavailable(
                    format!("the JWKS URL answered {status}").into(),
                ));
            }
            serde_json::from_slice::<JwkSet>(&body)
                .map_err(|error| StoreError::Unexpected(error.into()))
        };
        tokio::time::timeout(FETCH_TIMEOUT, get)
            .await
            .map_err(|elapsed| StoreError::Timeout(elapsed.into()))?
    }
}

/// The RSA key of `kid` in `set`, usable for RS256.
fn rsa_key(set: &JwkSet, kid: &str) -> Option<DecodingKey> {
    let jwk = set.find(kid)?;
    match &jwk.algorithm {
        AlgorithmParameters::RSA(rsa) => DecodingKey::from_rsa_components(&rsa.n, &rsa.e).ok(),
        _ => None,
    }
}

/// `url` as a URI when it may be fetched: HTTPS anywhere, plain HTTP only to this machine or a
/// private address (Docker's bridge, where moto answers a function in a container).
pub(super) fn allowed_uri(url: &str) -> Result<http::Uri, BoxError> {
    let uri: http::Uri = url.parse()?;
    let host = uri.host().unwrap_or_default();
    let plain_ok = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| match ip {
                std::net::IpAddr::V4(ip) => ip.is_loopback() || ip.is_private(),
                std::net::IpAddr::V6(ip) => ip.is_loopback(),
            });
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(uri),
        Some("http") if plain_ok => Ok(uri),
        _ => Err(format!(
            "{}: neither https nor http to this machine or a private address",
            super::PEOPLE_JWKS_URL
        )
        .into()),
    }
}

/// HTTPS (rustls on aws-lc) trusting Amazon Trust Services' roots, which Cognito's endpoints
/// chain to, as the SDK's clients do (crate::aws); HTTP/1 only, for one small GET.
fn http_client() -> HttpClient {
    let mut roots = rustls::RootCertStore::empty();
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    roots.add_parsable_certificates(
        CertificateDer::pem_slice_iter(crate::aws::AMAZON_TRUST_SERVICES_ROOTS).flatten(),
    );
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("aws-lc's provider supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(FETCH_TIMEOUT));
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new()).build(connector)
}
