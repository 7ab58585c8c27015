//! The AWS clients of a function (DynamoDB; KMS where it seals values; Secrets Manager where it
//! signs cursors), built at cold start with explicit time and retry
//! bounds, so a slow store turns into a 503 well inside the Lambda timeout.
//!
//! Built from what Lambda gives a function and nothing else, because init is billed and every
//! millisecond of it is a caller waiting (docs/performance.md has the measurements):
//! - region and credentials from the environment variables Lambda sets (`AWS_REGION`,
//!   `AWS_ACCESS_KEY_ID`...), not the SDK's default chains, which also look for profile files,
//!   SSO, web identity, container and instance metadata, and link a client for each;
//! - TLS trusting the Amazon Trust Services roots that AWS endpoints chain to, instead of loading
//!   and parsing the system's whole certificate store at every cold start (5.9 ms of a 9.5 ms init
//!   on Debian). The system store is still used where those roots do not apply: the China and
//!   isolated partitions, and an HTTPS `DYNAMODB_ENDPOINT` that is not AWS's.

use std::time::Duration;

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::config::{Credentials, SharedCredentialsProvider, SharedHttpClient};
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};

use crate::config::{AWS_REGION, LOCAL_REGION, MissingVariable, optional};

/// Attempts per call (the first and two retries, with the SDK's jittered backoff).
pub const MAX_ATTEMPTS: u32 = 3;
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(1_000);
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1_500);
pub const OPERATION_TIMEOUT: Duration = Duration::from_millis(4_000);

pub const AWS_ACCESS_KEY_ID: &str = "AWS_ACCESS_KEY_ID";

/// The roots of Amazon Trust Services, which every AWS endpoint in the `aws` and `aws-us-gov`
/// partitions chains to (Amazon Root CA 1-4 and Starfield Services Root G2).
pub const AMAZON_TRUST_SERVICES_ROOTS: &[u8] = include_bytes!("../certs/amazon-trust-services.pem");

/// A client for DynamoDB on AWS, or for DynamoDB Local when `endpoint` is set.
///
/// On AWS, `AWS_REGION` and `AWS_ACCESS_KEY_ID` (with the rest of Lambda's credential variables)
/// must be set; their absence fails the cold start. For DynamoDB Local, which ignores both, a
/// region and dummy credentials stand in for missing ones.
pub fn dynamodb_client(
    endpoint: Option<&str>,
) -> Result<aws_sdk_dynamodb::Client, MissingVariable> {
    client_from(optional, endpoint)
}

/// A client for KMS on AWS, or for an emulator (moto's server) when `endpoint` is set; built as
/// [`dynamodb_client`] is, with the same bounds.
pub fn kms_client(endpoint: Option<&str>) -> Result<aws_sdk_kms::Client, MissingVariable> {
    Ok(aws_sdk_kms::Client::new(&shared_config(
        optional, endpoint,
    )?))
}

/// A client for Secrets Manager on AWS, or for an emulator (moto's server) when `endpoint` is
/// set; built as [`dynamodb_client`] is, with the same bounds.
pub fn secrets_manager_client(
    endpoint: Option<&str>,
) -> Result<aws_sdk_secretsmanager::Client, MissingVariable> {
    Ok(aws_sdk_secretsmanager::Client::new(&shared_config(
        optional, endpoint,
    )?))
}

/// A client for EventBridge on AWS, or for an emulator (moto's server) when `endpoint` is set;
/// built as [`dynamodb_client`] is, with the same bounds.
#[cfg(feature = "eventbridge")]
pub fn eventbridge_client(
    endpoint: Option<&str>,
) -> Result<aws_sdk_eventbridge::Client, MissingVariable> {
    Ok(aws_sdk_eventbridge::Client::new(&shared_config(
        optional, endpoint,
    )?))
}

/// A client for API Gateway on AWS, or for an emulator (moto's server) when `endpoint` is set;
/// built as [`dynamodb_client`] is, with the same bounds.
#[cfg(feature = "gateway")]
pub fn apigateway_client(
    endpoint: Option<&str>,
) -> Result<aws_sdk_apigateway::Client, MissingVariable> {
    Ok(aws_sdk_apigateway::Client::new(&shared_config(
        optional, endpoint,
    )?))
}

/// A client for Lambda on AWS, or for an emulator when `endpoint` is set; built as
/// [`dynamodb_client`] is, with the same bounds.
#[cfg(feature = "lambda-invoke")]
pub fn lambda_client(endpoint: Option<&str>) -> Result<aws_sdk_lambda::Client, MissingVariable> {
    Ok(aws_sdk_lambda::Client::new(&shared_config(
        optional, endpoint,
    )?))
}

/// [`dynamodb_client`] with the environment given as a lookup (tests use a map).
fn client_from(
    variable: impl Fn(&str) -> Option<String>,
    endpoint: Option<&str>,
) -> Result<aws_sdk_dynamodb::Client, MissingVariable> {
    Ok(aws_sdk_dynamodb::Client::new(&shared_config(
        variable, endpoint,
    )?))
}

/// What every client of a function shares: region and credentials from the environment (dummies
/// for a local endpoint), the endpoint if one is given, the HTTPS client, the retry and time
/// bounds.
fn shared_config(
    variable: impl Fn(&str) -> Option<String>,
    endpoint: Option<&str>,
) -> Result<aws_config::SdkConfig, MissingVariable> {
    let region = match (variable(AWS_REGION), endpoint) {
        (Some(region), _) => region,
        (None, Some(_)) => LOCAL_REGION.to_owned(),
        (None, None) => return Err(MissingVariable(AWS_REGION)),
    };
    let credentials = match (variable(AWS_ACCESS_KEY_ID), endpoint) {
        (Some(_), _) => {
            SharedCredentialsProvider::new(EnvironmentVariableCredentialsProvider::new())
        }
        (None, Some(_)) => SharedCredentialsProvider::new(Credentials::new(
            "local",
            "local",
            None,
            None,
            "local-emulator",
        )),
        (None, None) => return Err(MissingVariable(AWS_ACCESS_KEY_ID)),
    };
    let mut config = aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .credentials_provider(credentials)
        .http_client(http_client(trust(&region, endpoint)))
        .region(Region::new(region))
        .retry_config(retry_config())
        .timeout_config(timeout_config());
    config.set_endpoint_url(endpoint.map(str::to_owned));
    Ok(config.build())
}

pub fn retry_config() -> RetryConfig {
    RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS)
}

pub fn timeout_config() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

/// HTTPS over rustls (aws-lc: post-quantum key exchange where the endpoint offers it), trusting
/// `trust`'s roots.
pub fn http_client(trust: Trust) -> SharedHttpClient {
    let store = match trust {
        Trust::AmazonTrustServices => {
            TrustStore::empty().with_pem_certificate(AMAZON_TRUST_SERVICES_ROOTS)
        }
        Trust::System => TrustStore::default(),
    };
    let context = TlsContext::builder()
        .with_trust_store(store)
        .build()
        .unwrap_or_default();
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(context)
        .build_https()
}

/// Which certificate authorities a connection trusts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    AmazonTrustServices,
    /// The system's store (rustls-native-certs: `SSL_CERT_FILE`, `SSL_CERT_DIR` or the usual
    /// paths), read once per process.
    System,
}

/// The Amazon Trust Services roots for AWS's own endpoints in the partitions that use them, and
/// for plain-HTTP DynamoDB Local (no TLS at all); the system store for the China and isolated
/// partitions, whose endpoints are certified by other authorities, and for any HTTPS endpoint
/// given by hand (a proxy, a VPC endpoint's private name, a test double).
pub fn trust(region: &str, endpoint: Option<&str>) -> Trust {
    let other_partition = region.starts_with("cn-") || region.contains("-iso");
    let custom_tls_endpoint = endpoint.is_some_and(|url| !url.starts_with("http://"));
    if other_partition || custom_tls_endpoint {
        Trust::System
    } else {
        Trust::AmazonTrustServices
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    use sha2::{Digest, Sha256};

    /// SHA-256 of each root, as https://www.amazontrust.com/repository/ publishes them.
    const PUBLISHED_FINGERPRINTS: [&str; 5] = [
        "8ecde6884f3d87b1125ba31ac3fcb13d7016de7f57cc904fe1cb97c6ae98196e", // Amazon Root CA 1
        "1ba5b2aa8c65401a82960118f80bec4f62304d83cec4713a19c39c011ea46db4", // Amazon Root CA 2
        "18ce6cfe7bf14e60b2e347b8dfe868cb31d02ebb3ada271569f50343b46db3a4", // Amazon Root CA 3
        "e35d28419ed02025cfa69038cd623962458da5c695fbdea3c22b0bfb25897092", // Amazon Root CA 4
        "568d6905a2c88708a4b3025190edcfedb1974a606a13c6e5290fcb2ae63edab5", // Starfield Services G2
    ];

    #[test]
    fn the_embedded_roots_are_amazon_trust_services_own() {
        let fingerprints: Vec<String> = CertificateDer::pem_slice_iter(AMAZON_TRUST_SERVICES_ROOTS)
            .map(|cert| {
                let cert = cert.expect("a PEM certificate");
                Sha256::digest(cert.as_ref())
                    .iter()
                    .map(|byte| format!("{byte:02x}"))
                    .collect()
            })
            .collect();
        assert_eq!(fingerprints, PUBLISHED_FINGERPRINTS);
    }

    fn environment(
        variables: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<String> {
        |name| {
            variables
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        }
    }

    fn region(client: &aws_sdk_dynamodb::Client) -> Option<&str> {
        client.config().region().map(|region| region.as_ref())
    }

    #[test]
    fn on_aws_a_missing_region_or_credentials_fails_the_cold_start() {
        let error = client_from(environment(&[]), None).expect_err("no region");
        assert_eq!(error.0, AWS_REGION);
        let region_only = environment(&[(AWS_REGION, "eu-west-1")]);
        let error = client_from(region_only, None).expect_err("no credentials");
        assert_eq!(error.0, AWS_ACCESS_KEY_ID);
        let lambda = environment(&[(AWS_REGION, "eu-west-1"), (AWS_ACCESS_KEY_ID, "AKIA")]);
        let client = client_from(lambda, None).expect("Lambda's environment is enough");
        assert_eq!(region(&client), Some("eu-west-1"));
    }

    #[test]
    fn dynamodb_local_needs_neither_region_nor_credentials() {
        let client =
            client_from(environment(&[]), Some("http://127.0.0.1:8000")).expect("a local client");
        assert_eq!(region(&client), Some(LOCAL_REGION));
        let named = environment(&[(AWS_REGION, "ap-south-1")]);
        let client = client_from(named, Some("http://127.0.0.1:8000")).expect("a local client");
        assert_eq!(region(&client), Some("ap-south-1"));
    }

    #[test]
    fn amazon_roots_for_aws_endpoints_the_system_store_elsewhere() {
        use Trust::*;
        let cases = [
            ("us-east-1", None, AmazonTrustServices),
            ("eu-central-1", None, AmazonTrustServices),
            ("us-gov-west-1", None, AmazonTrustServices),
            (
                "us-east-1",
                Some("http://127.0.0.1:8000"),
                AmazonTrustServices,
            ),
            ("cn-north-1", None, System),
            ("cn-northwest-1", None, System),
            ("us-iso-east-1", None, System),
            ("us-isob-east-1", None, System),
            ("eu-isoe-west-1", None, System),
            ("us-east-1", Some("https://dynamodb.proxy.internal"), System),
        ];
        for (region, endpoint, expected) in cases {
            assert_eq!(trust(region, endpoint), expected, "{region} {endpoint:?}");
        }
    }
}
