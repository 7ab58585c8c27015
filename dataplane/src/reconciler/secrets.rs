//! What a deployment's replicas receive of its secret sets (contract sections 10 and 12): the
//! env sets' keys as environment variables after `PORT=8080`, and the image pull set's registry
//! and credentials. Values are opened here and go nowhere but the replica's spec.

use shared::agent::DeploymentError;
use shared::manifest::Manifest;
use shared::secrets::opening::{OpenedSet, open_set};
use shared::secrets::store::{DataKeyOpener, SecretStore};

use crate::replica::{AGENT_PORT, EnvVar, PullAuth};

/// The code a deployment is reported `failed` with when a set it names does not open.
pub const SECRET_SET_UNAVAILABLE: &str = "SECRET_SET_UNAVAILABLE";

/// What a deployment's replicas are started with from its sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub env: Vec<EnvVar>,
    pub pull: Option<PullAuth>,
}

/// Opens every set the manifest names; the first that does not open is the deployment's error
/// (naming the set and why, never a value).
pub async fn receive<S: SecretStore, K: DataKeyOpener>(
    store: &S,
    keys: &K,
    manifest: &Manifest,
) -> Result<Received, DeploymentError> {
    let namespace = &manifest.metadata.namespace;
    let mut env = vec![EnvVar {
        name: "PORT".to_owned(),
        value: AGENT_PORT.to_string(),
    }];
    for name in &manifest.spec.env_from_secret_names {
        let set = open(store, keys, namespace, name).await?;
        for value in &set.values {
            env.push(EnvVar {
                name: value.key.clone(),
                value: text(&set, value.value())?,
            });
        }
    }
    let mut pull = None;
    if let Some(name) = manifest.spec.image_pull_secret_names.first() {
        let set = open(store, keys, namespace, name).await?;
        pull = Some(pull_auth(&set)?);
    }
    Ok(Received { env, pull })
}

async fn open<S: SecretStore, K: DataKeyOpener>(
    store: &S,
    keys: &K,
    namespace: &str,
    name: &str,
) -> Result<OpenedSet, DeploymentError> {
    open_set(store, keys, namespace, name)
        .await
        .map_err(|error| {
            tracing::warn!(set = name, %error, "a secret set did not open");
            unavailable(name, &error.to_string())
        })
}

fn unavailable(set: &str, why: &str) -> DeploymentError {
    DeploymentError {
        code: SECRET_SET_UNAVAILABLE.to_owned(),
        message: format!("the secret set {set} could not be opened: {why}"),
    }
}

fn text(set: &OpenedSet, value: &[u8]) -> Result<String, DeploymentError> {
    String::from_utf8(value.to_vec()).map_err(|_| unavailable(&set.name, "a value is not UTF-8"))
}

/// An image pull set's `host` and `credentials` (the base64 of `user:token`).
fn pull_auth(set: &OpenedSet) -> Result<PullAuth, DeploymentError> {
    let bad = || unavailable(&set.name, "it holds no registry credentials");
    let registry = set.host.clone().ok_or_else(bad)?;
    let credentials = set
        .values
        .iter()
        .find(|value| value.key == "credentials")
        .ok_or_else(bad)?;
    let decoded = decode_base64(credentials.value()).ok_or_else(bad)?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
    let (username, password) = decoded.split_once(':').ok_or_else(bad)?;
    Ok(PullAuth {
        registry,
        username: username.to_owned(),
        password: password.to_owned(),
    })
}

/// Standard base64 (padding optional). The crate has no base64 dependency and this is its one
/// use; the set was checked to be `user:token` in base64 when it was written.
fn decode_base64(text: &[u8]) -> Option<Vec<u8>> {
    let digit = |byte: u8| -> Option<u32> {
        Some(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let trimmed = text
        .strip_suffix(b"==")
        .or(text.strip_suffix(b"="))
        .unwrap_or(text);
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    for chunk in trimmed.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut bits = 0u32;
        for (i, byte) in chunk.iter().enumerate() {
            bits |= digit(*byte)? << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::manifest::DeploymentMode;
    use shared::secrets::body::SetChange;
    use shared::store::memory::MemoryStore;
    use shared::testing::data_keys::FakeKms;

    const NS: &str = "tiny-ferret-1";

    async fn put(store: &MemoryStore, kms: &FakeKms, name: &str, body: serde_json::Value) {
        let change = SetChange::from_json(name, "us-west-2", body).unwrap();
        shared::secrets::sets::put(store, kms, NS, name, "us-west-2", change)
            .await
            .unwrap();
    }

    fn manifest(env: &[&str], pull: &[&str]) -> Manifest {
        let body = json!({"serviceName": "echo", "image": "example/agent:1"});
        let (_, config) = shared::agent::ConfigChanges::from_json(body)
            .and_then(shared::agent::ConfigChanges::into_new_agent)
            .unwrap();
        let mut manifest = config.manifest(DeploymentMode::Simulated, "echo", NS);
        manifest.spec.env_from_secret_names = env.iter().map(|s| s.to_string()).collect();
        manifest.spec.image_pull_secret_names = pull.iter().map(|s| s.to_string()).collect();
        manifest
    }

    #[tokio::test]
    async fn replicas_receive_port_then_the_sets_keys_and_the_pull_sets_credentials() {
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        put(
            &store,
            &kms,
            "voice",
            json!({"secrets": [
            {"secretKey": "OPENAI_API_KEY", "secretValue": "sk-1"}]}),
        )
        .await;
        let credentials = "cm9ib3Q6Z2hwX3Rva2Vu"; // robot:ghp_token
        put(
            &store,
            &kms,
            "pull",
            json!({"isImagePullSecret": true, "host": "ghcr.io",
            "secretValue": credentials}),
        )
        .await;
        let received = receive(&store, &kms, &manifest(&["voice"], &["pull"]))
            .await
            .unwrap();
        let env: Vec<(&str, &str)> = received
            .env
            .iter()
            .map(|var| (var.name.as_str(), var.value.as_str()))
            .collect();
        assert_eq!(env, [("PORT", "8080"), ("OPENAI_API_KEY", "sk-1")]);
        let pull = received.pull.unwrap();
        assert_eq!(
            (
                pull.registry.as_str(),
                pull.username.as_str(),
                pull.password.as_str()
            ),
            ("ghcr.io", "robot", "ghp_token")
        );
    }

    #[tokio::test]
    async fn a_set_that_does_not_open_names_the_set_and_no_value() {
        let (store, kms) = (MemoryStore::default(), FakeKms::default());
        let error = receive(&store, &kms, &manifest(&["absent"], &[]))
            .await
            .unwrap_err();
        assert_eq!(error.code, SECRET_SET_UNAVAILABLE);
        assert!(error.message.contains("absent"), "{}", error.message);
    }

    #[test]
    fn base64_of_user_and_token_decodes() {
        for (encoded, plain) in [
            ("cm9ib3Q6Z2hwX3Rva2Vu", "robot:ghp_token"),
            ("YTpi", "a:b"),
            ("YTpiYw==", "a:bc"),
            ("YTpiY2Q=", "a:bcd"),
            ("YTpiYw", "a:bc"),
        ] {
            assert_eq!(
                decode_base64(encoded.as_bytes()).as_deref(),
                Some(plain.as_bytes()),
                "{encoded}"
            );
        }
        assert_eq!(decode_base64(b"a!bc"), None);
        assert_eq!(decode_base64(b"YTpiY"), None);
    }
}
