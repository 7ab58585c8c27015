//! The stack's user pool (moto's Cognito: scripts/stack.sh, stack_people), for the suites that
//! sign people in: a person invited by the operator command, their access token asked of
//! InitiateAuth as the console asks (an unsigned JSON POST: console/e2e/cognito.mjs), and
//! tokens the pool never issued: the person's own claims signed again with moto's published key
//! (its private half ships in moto's package), or by another key under the pool's `kid`.
//!
//! Reads `STACK_PEOPLE_ENDPOINT` and `STACK_PEOPLE_CLIENT_ID`; the operator command reads the
//! stack's own variables (`COGNITO_ENDPOINT`, `PEOPLE_POOL_ID`, the tables), inherited.

use std::path::PathBuf;
use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use num_bigint::BigUint;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// A person of an account of their own, signed in.
pub struct Person {
    pub account_id: String,
    pub email: String,
    /// Their `sub`, as the operator command printed it.
    pub person_id: String,
    /// Their access token, from InitiateAuth.
    pub token: String,
}

impl Person {
    /// The `Authorization` header's value with their access token.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
}

/// The stack's user pool and its app client (the console's).
pub struct Pool {
    endpoint: String,
    client_id: String,
    http: reqwest::Client,
}

fn variable(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: the people suite runs against a stack that scripts/e2e.sh starts"
        )
    })
}

impl Pool {
    pub fn from_env() -> Self {
        Pool {
            endpoint: variable("STACK_PEOPLE_ENDPOINT"),
            client_id: variable("STACK_PEOPLE_CLIENT_ID"),
            // A stalled pool fails the request, not the whole run.
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()
                .expect("an HTTP client"),
        }
    }

    /// A person invited to a new account (`e2e-{name}-…`) by the operator command, then
    /// signed in with the password it set.
    pub async fn invite(&self, name: &str) -> Person {
        let unique = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let account_id = format!("e2e-{name}-{unique}");
        let email = format!("{name}-{unique}@example.test");
        // Upper and lower case and digits, 28 characters: the pool's policy (stack_people).
        let password = format!("Pw-{unique}A1{}", uuid::Uuid::new_v4().simple());
        let person_id = invite_person(&account_id, &email, &password);
        let token = self.sign_in(&email, &password).await;
        Person {
            account_id,
            email,
            person_id,
            token,
        }
    }

    /// InitiateAuth USER_PASSWORD_AUTH, unsigned as from a browser: the access token.
    pub async fn sign_in(&self, email: &str, password: &str) -> String {
        let response = self
            .http
            .post(format!("{}/", self.endpoint.trim_end_matches('/')))
            .header("content-type", "application/x-amz-json-1.1")
            .header(
                "x-amz-target",
                "AWSCognitoIdentityProviderService.InitiateAuth",
            )
            .json(
                &json!({"AuthFlow": "USER_PASSWORD_AUTH", "ClientId": self.client_id,
                "AuthParameters": {"USERNAME": email, "PASSWORD": password}}),
            )
            .send()
            .await
            .expect("moto's Cognito answers InitiateAuth");
        let status = response.status();
        let body: Value = response.json().await.expect("InitiateAuth answers JSON");
        assert!(status.is_success(), "InitiateAuth {email}: {status} {body}");
        body["AuthenticationResult"]["AccessToken"]
            .as_str()
            .unwrap_or_else(|| panic!("InitiateAuth {email}: no access token in {body}"))
            .to_owned()
    }
}

/// `agent-hosting-admin invite-person ACCOUNT EMAIL --create-account --password P` (what
/// scripts/admin.sh runs; the binary the stack built, in `STACK_BIN_DIR`, not cargo run: a test
/// must not wait on cargo's build lock): the `sub` of its line `invited EMAIL to ACCOUNT (person
/// SUB)`.
fn invite_person(account_id: &str, email: &str, password: &str) -> String {
    let binary = PathBuf::from(variable("STACK_BIN_DIR")).join("agent-hosting-admin");
    let output = Command::new(&binary)
        .args(["invite-person", account_id, email, "--create-account"])
        .args(["--password", password])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "invite-person {account_id} {email}: {}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find(|line| line.starts_with(&format!("invited {email} to {account_id} (person ")))
        .unwrap_or_else(|| panic!("invite-person printed no `invited` line: {stdout}"));
    line.rsplit_once("(person ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .expect("(person SUB)")
        .to_owned()
}

/// A token's header and claims, as JSON.
pub fn decode(token: &str) -> (Value, Value) {
    let mut parts = token.split('.');
    let mut segment = || {
        let bytes = URL_SAFE_NO_PAD
            .decode(parts.next().expect("a JWS segment"))
            .expect("base64url");
        serde_json::from_slice::<Value>(&bytes).expect("a JSON segment")
    };
    (segment(), segment())
}

/// `token`'s claims, changed by `change`, signed again with moto's own key under its `kid`.
pub fn moto_signed(token: &str, change: impl FnOnce(&mut Value)) -> String {
    let (header, mut claims) = decode(token);
    change(&mut claims);
    let key = MotoKey::load();
    assert_eq!(
        header["kid"],
        key.kid.as_str(),
        "moto signs with its one key"
    );
    let input = signing_input(&header, &claims);
    let signature = key.sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// `token`'s claims as they are, signed by another RSA key (made in this process) under the
/// pool's `kid`.
pub fn forged(token: &str) -> String {
    let (header, claims) = decode(token);
    let kid = header["kid"].as_str().expect("a kid");
    shared::people::testing::TestIssuer::global().sign_claims(kid, &claims)
}

/// An hour ago, in a token's seconds.
pub fn an_hour_ago() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp() - 3600
}

fn signing_input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// moto's token key (moto/cognitoidp/resources/jwks-private.json.gz in its venv,
/// .local/moto-venv): n, e and d only, not the primes and CRT parameters of the PKCS#1 key
/// jsonwebtoken signs with, so RSASSA-PKCS1-v1_5 is computed from them directly.
struct MotoKey {
    kid: String,
    n: BigUint,
    d: BigUint,
}

impl MotoKey {
    fn load() -> Self {
        let file = moto_key_file();
        let gzipped = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gzipped[..]), &mut text)
            .expect("gzipped JSON");
        let jwk: Value = serde_json::from_str(&text).expect("a JWK");
        let number = |name: &str| {
            let text = jwk[name]
                .as_str()
                .unwrap_or_else(|| panic!("the JWK's {name}"));
            BigUint::from_bytes_be(&URL_SAFE_NO_PAD.decode(text).expect("base64url"))
        };
        MotoKey {
            kid: jwk["kid"].as_str().expect("the JWK's kid").to_owned(),
            n: number("n"),
            d: number("d"),
        }
    }

    /// EMSA-PKCS1-v1_5 of SHA-256 (RFC 8017 section 9.2), raised to d mod n.
    fn sign(&self, input: &[u8]) -> Vec<u8> {
        const SHA256_DIGEST_INFO: [u8; 19] = [
            0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
            0x01, 0x05, 0x00, 0x04, 0x20,
        ];
        let length = self.n.to_bytes_be().len();
        let digest = Sha256::digest(input);
        let padding = length - SHA256_DIGEST_INFO.len() - digest.len() - 3;
        let mut encoded = vec![0x00, 0x01];
        encoded.extend(std::iter::repeat_n(0xff, padding));
        encoded.push(0x00);
        encoded.extend(SHA256_DIGEST_INFO);
        encoded.extend(digest);
        let signature = BigUint::from_bytes_be(&encoded)
            .modpow(&self.d, &self.n)
            .to_bytes_be();
        let mut out = vec![0; length - signature.len()];
        out.extend(signature);
        out
    }
}

fn moto_key_file() -> PathBuf {
    let lib = crate::workspace().join(".local/moto-venv/lib");
    let python = std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e} (moto's venv: scripts/local.sh)", lib.display()))
        .flatten()
        .find(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
        .unwrap_or_else(|| panic!("no python3.* under {}", lib.display()))
        .path();
    python.join("site-packages/moto/cognitoidp/resources/jwks-private.json.gz")
}
