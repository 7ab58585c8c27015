//! Reading `PUT /v1/secrets/{setName}`: the three body forms of contract section 10 and every
//! rule one request decides. What needs the stored set (its type, 100 keys, 64 KiB of values)
//! is [`SetChange::check_limits`]'s. No message here ever quotes a value.

use std::collections::BTreeMap;

use base64::Engine;

use super::{MAX_KEYS_PER_SET, MAX_SET_VALUE_BYTES, MAX_VALUE_BYTES, SecretValue, SetType};
use crate::ApiError;
use crate::validation::{JsonObject, Member};

/// One key and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSecret {
    pub key: String,
    pub value: SecretValue,
}

/// What a PUT asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetChange {
    /// Each key given is set; keys not given are kept. `field` is the member an error about
    /// the whole set names (`secrets`, or `secretKey` in the single-key form).
    Keys {
        secrets: Vec<NewSecret>,
        field: &'static str,
    },
    /// A registry's credentials (the base64 of `user:token`), replacing the set's whole.
    ImagePull {
        host: String,
        credentials: SecretValue,
    },
}

/// `secretKey`: the anchor's rule.
pub fn is_secret_key(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

const SECRET_KEY_RULE: &str = "must be 1 to 64 letters, digits, underscores or hyphens";

impl SetChange {
    /// Reads a PUT body for the set `set_name` of a service in `region`.
    pub fn from_json(
        set_name: &str,
        region: &str,
        body: serde_json::Value,
    ) -> Result<Self, ApiError> {
        let mut body = JsonObject::root(body)?;
        if body
            .take_string("name")?
            .given()
            .is_some_and(|name| name != set_name)
        {
            return Err(ApiError::bad_request(
                "name",
                format!("name must be the set's name in the path ('{set_name}'), or be left out"),
            ));
        }
        if body
            .take_string("region")?
            .given()
            .is_some_and(|given| given != region)
        {
            return Err(ApiError::bad_request(
                "region",
                format!("region must be '{region}', the region of this service, or be left out"),
            ));
        }
        let is_image_pull = body
            .take_bool("isImagePullSecret")?
            .given()
            .unwrap_or(false);
        let change = if is_image_pull {
            image_pull(&mut body)?
        } else {
            keys(&mut body)?
        };
        body.finish()?;
        Ok(change)
    }

    pub fn set_type(&self) -> SetType {
        match self {
            SetChange::Keys { .. } => SetType::Secret,
            SetChange::ImagePull { .. } => SetType::ImagePullSecret,
        }
    }

    /// The rules between this change and the set as stored (its type, and the size of each of
    /// its values by key): a set keeps its type (409), and holds at most 100 keys and 64 KiB of
    /// values once changed (400).
    pub fn check_limits(
        &self,
        stored: Option<(SetType, &BTreeMap<String, usize>)>,
    ) -> Result<(), ApiError> {
        if let Some((stored_type, _)) = stored
            && stored_type != self.set_type()
        {
            return Err(ApiError::Conflict(format!(
                "This set holds {}; a set cannot change type (delete it first)",
                match stored_type {
                    SetType::Secret => "secrets",
                    SetType::ImagePullSecret => "image pull credentials",
                }
            )));
        }
        let SetChange::Keys { secrets, field } = self else {
            return Ok(());
        };
        let mut sizes: BTreeMap<&str, usize> = stored
            .map(|(_, sizes)| {
                sizes
                    .iter()
                    .map(|(key, size)| (key.as_str(), *size))
                    .collect()
            })
            .unwrap_or_default();
        for secret in secrets {
            sizes.insert(&secret.key, secret.value.len());
        }
        if sizes.len() > MAX_KEYS_PER_SET {
            return Err(ApiError::bad_request(
                *field,
                format!(
                    "A set holds at most {MAX_KEYS_PER_SET} keys; this would make it {}",
                    sizes.len()
                ),
            ));
        }
        let total: usize = sizes.values().sum();
        if total > MAX_SET_VALUE_BYTES {
            return Err(ApiError::bad_request(
                *field,
                format!(
                    "A set's values take at most {MAX_SET_VALUE_BYTES} bytes together; this would make them {total}"
                ),
            ));
        }
        Ok(())
    }
}

/// A member that must be given.
fn required<T>(member: Member<T>, field: &str, why: &str) -> Result<T, ApiError> {
    member
        .given()
        .ok_or_else(|| ApiError::bad_request(field.to_owned(), format!("{field} is required{why}")))
}

fn secret_key(key: String, field: &str) -> Result<String, ApiError> {
    if is_secret_key(&key) {
        Ok(key)
    } else {
        Err(ApiError::bad_request(
            field.to_owned(),
            format!("{field} {SECRET_KEY_RULE}"),
        ))
    }
}

fn secret_value(value: String, field: &str) -> Result<SecretValue, ApiError> {
    if (1..=MAX_VALUE_BYTES).contains(&value.len()) {
        Ok(SecretValue::new(value))
    } else {
        Err(ApiError::bad_request(
            field.to_owned(),
            format!("{field} must be a string of 1 to {MAX_VALUE_BYTES} bytes"),
        ))
    }
}

/// `{"secrets": [...]}` or `{"secretKey", "secretValue"}`.
fn keys(body: &mut JsonObject) -> Result<SetChange, ApiError> {
    let list = body.take_objects("secrets")?;
    let single_key = body.take_string("secretKey")?;
    let single_value = body.take_string("secretValue")?;
    let Member::Given(entries) = list else {
        let why = ": give secretKey and secretValue, or secrets";
        let key = secret_key(required(single_key, "secretKey", why)?, "secretKey")?;
        let value = secret_value(required(single_value, "secretValue", why)?, "secretValue")?;
        return Ok(SetChange::Keys {
            secrets: vec![NewSecret { key, value }],
            field: "secretKey",
        });
    };
    if !matches!(
        (&single_key, &single_value),
        (Member::Absent, Member::Absent)
    ) {
        return Err(ApiError::bad_request(
            "secretKey",
            "Give either secrets or secretKey and secretValue, not both",
        ));
    }
    if !(1..=MAX_KEYS_PER_SET).contains(&entries.len()) {
        return Err(ApiError::bad_request(
            "secrets",
            format!("secrets must hold 1 to {MAX_KEYS_PER_SET} entries"),
        ));
    }
    let mut secrets: Vec<NewSecret> = Vec::with_capacity(entries.len());
    for mut entry in entries {
        let key_field = entry.path_of("secretKey");
        let value_field = entry.path_of("secretValue");
        let key = secret_key(
            required(entry.take_string("secretKey")?, &key_field, "")?,
            &key_field,
        )?;
        let value = secret_value(
            required(entry.take_string("secretValue")?, &value_field, "")?,
            &value_field,
        )?;
        entry.finish()?;
        if secrets.iter().any(|earlier| earlier.key == key) {
            return Err(ApiError::bad_request(
                key_field.clone(),
                format!("{key_field} repeats the key '{key}'; give each key once"),
            ));
        }
        secrets.push(NewSecret { key, value });
    }
    Ok(SetChange::Keys {
        secrets,
        field: "secrets",
    })
}

/// `{"isImagePullSecret": true, "host", "secretValue"}`.
fn image_pull(body: &mut JsonObject) -> Result<SetChange, ApiError> {
    let why = " for an image pull secret";
    let host = required(body.take_string("host")?, "host", why)?;
    if !is_registry_host(&host) {
        return Err(ApiError::bad_request(
            "host",
            "host must be a registry host, such as ghcr.io or registry.example.com:5000",
        ));
    }
    let credentials = secret_value(
        required(body.take_string("secretValue")?, "secretValue", why)?,
        "secretValue",
    )?;
    if !is_user_and_token(credentials.expose()) {
        return Err(ApiError::bad_request(
            "secretValue",
            "secretValue must be the base64 of user:token for an image pull secret",
        ));
    }
    Ok(SetChange::ImagePull { host, credentials })
}

/// A registry's host, with a port if any: DNS labels of letters, digits and hyphens.
fn is_registry_host(host: &str) -> bool {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    let port_ok = port.is_none_or(|port| {
        !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && port
                .parse::<u32>()
                .is_ok_and(|port| (1..=65_535).contains(&port))
    });
    host.len() <= 253 && name.split('.').all(label_ok) && port_ok
}

/// Whether `value` is the base64 of `user:token`, both parts non-empty.
fn is_user_and_token(value: &[u8]) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .ok()
        .and_then(|decoded| String::from_utf8(decoded).ok())
        .is_some_and(|text| {
            text.split_once(':')
                .is_some_and(|(user, token)| !user.is_empty() && !token.is_empty())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const REGION: &str = "us-west-2";

    fn read(body: Value) -> Result<SetChange, ApiError> {
        SetChange::from_json("voice-keys", REGION, body)
    }

    fn field_of(body: Value) -> String {
        let error = read(body.clone()).expect_err(&body.to_string());
        assert_eq!(error.status(), http::StatusCode::BAD_REQUEST, "{body}");
        error.field().unwrap_or_default().to_owned()
    }

    #[test]
    fn the_single_key_form_the_anchors_cli_sends_is_one_key() {
        let change = read(json!({"name": "voice-keys", "isImagePullSecret": false,
            "secretKey": "DEEPGRAM_API_KEY", "secretValue": "dg-123", "region": REGION}))
        .unwrap();
        let SetChange::Keys { secrets, field } = change else {
            panic!()
        };
        assert_eq!(field, "secretKey");
        assert_eq!(secrets.len(), 1);
        assert_eq!(secrets[0].key, "DEEPGRAM_API_KEY");
        assert_eq!(secrets[0].value.expose(), b"dg-123");
    }

    #[test]
    fn the_list_form_holds_1_to_100_distinct_keys() {
        let change = read(json!({"secrets": [
            {"secretKey": "A", "secretValue": "1"}, {"secretKey": "B", "secretValue": "2"}]}))
        .unwrap();
        assert_eq!(change.set_type(), SetType::Secret);
        let entries = |n: usize| -> Vec<Value> {
            (0..n)
                .map(|i| json!({"secretKey": format!("K{i}"), "secretValue": "v"}))
                .collect()
        };
        assert!(read(json!({"secrets": entries(100)})).is_ok());
        assert_eq!(field_of(json!({"secrets": entries(101)})), "secrets");
        assert_eq!(field_of(json!({"secrets": []})), "secrets");
        assert_eq!(
            field_of(json!({"secrets": [{"secretKey": "A", "secretValue": "1"},
                {"secretKey": "A", "secretValue": "2"}]})),
            "secrets[1].secretKey"
        );
    }

    #[test]
    fn every_rule_of_one_request_is_400_naming_its_member() {
        for (body, field) in [
            (json!({"secretKey": "A"}), "secretValue"),
            (json!({"secretValue": "x"}), "secretKey"),
            (
                json!({"secretKey": "bad key", "secretValue": "x"}),
                "secretKey",
            ),
            (
                json!({"secretKey": "K".repeat(65), "secretValue": "x"}),
                "secretKey",
            ),
            (json!({"secretKey": "A", "secretValue": ""}), "secretValue"),
            (
                json!({"secretKey": "A", "secretValue": "x".repeat(32_769)}),
                "secretValue",
            ),
            (json!({"secretKey": "A", "secretValue": 7}), "secretValue"),
            (
                json!({"secretKey": "A", "secretValue": "x", "name": "other"}),
                "name",
            ),
            (
                json!({"secretKey": "A", "secretValue": "x", "region": "eu-west-1"}),
                "region",
            ),
            (
                json!({"secretKey": "A", "secretValue": "x", "secrets": []}),
                "secretKey",
            ),
            (
                json!({"secrets": [{"secretKey": "A"}]}),
                "secrets[0].secretValue",
            ),
            (
                json!({"secrets": [{"secretKey": "A", "secretValue": "x", "extra": 1}]}),
                "secrets[0].extra",
            ),
            (json!({"secrets": ["A"]}), "secrets[0]"),
            (
                json!({"secretKey": "A", "secretValue": "x", "enabled": true}),
                "enabled",
            ),
            (
                json!({"isImagePullSecret": true, "secretValue": "dTp0"}),
                "host",
            ),
            (
                json!({"isImagePullSecret": true, "host": "ghcr.io"}),
                "secretValue",
            ),
            (
                json!({"isImagePullSecret": true, "host": "not a host", "secretValue": "dTp0"}),
                "host",
            ),
            (
                json!({"isImagePullSecret": true, "host": "ghcr.io:99999", "secretValue": "dTp0"}),
                "host",
            ),
            (
                json!({"isImagePullSecret": true, "host": "ghcr.io", "secretValue": "not base64!"}),
                "secretValue",
            ),
            (
                json!({"isImagePullSecret": true, "host": "ghcr.io", "secretValue": "dXNlcg=="}),
                "secretValue",
            ),
            (
                json!({"isImagePullSecret": true, "host": "ghcr.io", "secretValue": "dTp0", "secretKey": "A"}),
                "secretKey",
            ),
        ] {
            assert_eq!(field_of(body.clone()), field, "{body}");
        }
    }

    #[test]
    fn no_error_quotes_a_value() {
        let value = "sk-planted-0123456789abcdef";
        for body in [
            json!({"secretKey": "bad key", "secretValue": value}),
            json!({"secretKey": "A", "secretValue": value, "name": "other"}),
            json!({"isImagePullSecret": true, "host": "ghcr.io", "secretValue": value}),
            json!({"isImagePullSecret": true, "host": "bad host", "secretValue": value}),
            json!({"secrets": [{"secretKey": "A", "secretValue": value}, {"secretKey": "A", "secretValue": value}]}),
        ] {
            let error = read(body).unwrap_err();
            assert!(!error.to_string().contains(value), "{error}");
            assert!(!format!("{error:?}").contains(value), "{error:?}");
        }
    }

    #[test]
    fn an_image_pull_secret_is_a_registry_host_and_base64_user_token() {
        let credentials = base64::engine::general_purpose::STANDARD.encode("robot:ghp_token");
        for host in [
            "ghcr.io",
            "registry.example.com:5000",
            "localhost",
            "123456789012.dkr.ecr.us-west-2.amazonaws.com",
        ] {
            let change =
                read(json!({"isImagePullSecret": true, "host": host, "secretValue": credentials}))
                    .unwrap();
            assert_eq!(change.set_type(), SetType::ImagePullSecret, "{host}");
        }
    }

    #[test]
    fn a_set_keeps_its_type_and_its_limits_once_changed() {
        let one = |key: &str, bytes: usize| SetChange::Keys {
            secrets: vec![NewSecret {
                key: key.to_owned(),
                value: SecretValue::new("x".repeat(bytes)),
            }],
            field: "secretKey",
        };
        let stored: BTreeMap<String, usize> = (0..99).map(|i| (format!("K{i}"), 10)).collect();
        assert!(
            one("K100", 10)
                .check_limits(Some((SetType::Secret, &stored)))
                .is_ok()
        );
        assert!(
            one("K0", 10)
                .check_limits(Some((SetType::Secret, &stored)))
                .is_ok()
        );
        let mut full = stored.clone();
        full.insert("K99".to_owned(), 10);
        assert_eq!(
            one("K100", 10)
                .check_limits(Some((SetType::Secret, &full)))
                .unwrap_err()
                .field(),
            Some("secretKey")
        );
        let big: BTreeMap<String, usize> =
            [("A".to_owned(), 32_768), ("B".to_owned(), 32_768)].into();
        assert!(
            one("A", 32_768)
                .check_limits(Some((SetType::Secret, &big)))
                .is_ok()
        );
        assert!(
            one("C", 1)
                .check_limits(Some((SetType::Secret, &big)))
                .is_err()
        );
        let conflict = one("A", 1)
            .check_limits(Some((SetType::ImagePullSecret, &BTreeMap::new())))
            .unwrap_err();
        assert_eq!(conflict.status(), http::StatusCode::CONFLICT);
    }
}
