//! Input rules shared by every endpoint, and a reader for JSON objects that names the exact
//! member (`autoScaling.maxAgents`) in every error and rejects members it was not asked for.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use crate::ApiError;

mod echo;
mod query;
mod report;

pub use echo::echoed;
#[cfg(test)]
pub(crate) use query::pairs as query_pairs;
pub use query::{MAX_QUERY_ID_LENGTH, MAX_UNIX_SECONDS, QueryParameters};
pub use report::{OutOfBounds, keys_out_of_bounds};

/// Longest DNS label (RFC 1035), the contract's bound for names.
pub const MAX_NAME_LENGTH: usize = 63;
/// The contract's bound for an image reference.
pub const MAX_IMAGE_LENGTH: usize = 512;

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, 1 to 63 characters: agent names, secret set names,
/// namespaces and account ids all follow it.
pub fn is_dns_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=MAX_NAME_LENGTH).contains(&bytes.len())
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

/// An id the control plane makes (deployments', sessions'): a UUID.
pub fn is_uuid(value: &str) -> bool {
    value.parse::<uuid::Uuid>().is_ok()
}

pub const DNS_LABEL_RULE: &str = "must be 1 to 63 characters of lowercase letters, digits and \
     hyphens, starting and ending with a lowercase letter or digit";

/// The reference grammar of distribution/reference (the registries' own parser: `regexp.go`),
/// narrowed to what the contract accepts: the only digest is `sha256:` with 64 lowercase hex
/// digits, and no IPv6 literal registries. Go's `\w` is ASCII, so the tag class is written out.
/// openapi.yaml publishes this exact pattern (a test compares them).
pub const IMAGE_REFERENCE_PATTERN: &str = r"^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$";

/// Compiled on first use. regex-lite, not regex: the SDK links it already, and it compiles this
/// pattern in about 0.1 ms where oci-spec's Unicode-aware regex took 70-85 ms on the first
/// create after every cold start (docs/performance.md).
static IMAGE_REFERENCE: LazyLock<regex_lite::Regex> = LazyLock::new(|| {
    regex_lite::Regex::new(IMAGE_REFERENCE_PATTERN).expect("the image reference pattern compiles")
});

/// A container image reference by the OCI distribution grammar (optional registry and port,
/// lowercase path, optional `:tag`, optional `@sha256:<64 hex>`), at most 512 characters.
///
/// The 255-character name limit some registries apply is not enforced: the contract's one bound
/// is 512 for the whole reference. A reference that does not match is explained by its first
/// fault in the order a reader would look: length, characters, digest, case, grammar.
pub fn check_image_reference(image: &str) -> Result<(), &'static str> {
    if image.is_empty() {
        return Err("must not be empty");
    }
    if image.len() > MAX_IMAGE_LENGTH {
        return Err("must be at most 512 characters");
    }
    if !image.is_ascii() {
        return Err("must be ASCII: registry, lowercase path, optional :tag and @sha256:digest");
    }
    if IMAGE_REFERENCE.is_match(image) {
        return Ok(());
    }
    let (name_and_tag, digest) = match image.split_once('@') {
        Some((name_and_tag, digest)) => (name_and_tag, Some(digest)),
        None => (image, None),
    };
    if digest.is_some_and(|digest| !is_sha256_digest(digest)) {
        return Err("digest must be sha256: followed by 64 lowercase hex digits");
    }
    // The tag starts at the first ':' after the last '/' (a ':' before it is the port's).
    let last_component = name_and_tag.rfind('/').map_or(0, |slash| slash + 1);
    let name_length = name_and_tag[last_component..]
        .find(':')
        .map_or(name_and_tag.len(), |colon| last_component + colon);
    let lowercased = format!(
        "{}{}",
        image[..name_length].to_ascii_lowercase(),
        &image[name_length..]
    );
    if lowercased != image && IMAGE_REFERENCE.is_match(&lowercased) {
        // The registry may hold capitals; only the path can have made it fail.
        return Err("repository path must be lowercase");
    }
    Err(
        "must be a container image reference such as ghcr.io/acme/agent:1.0 or \
         registry.example.com:5000/team/agent@sha256:<64 hex digits>",
    )
}

/// `sha256:` and 64 lowercase hex digits, the only digest the contract accepts.
fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// What a JSON member holds, for error messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A member of a request body as given: absent, `null`, or a value. On create both absent and
/// `null` mean the default; on update absent keeps the agent's current value and `null`
/// restores the default (contract sections 3 and 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member<T> {
    Absent,
    Null,
    Given(T),
}

impl<T> Member<T> {
    pub fn given(self) -> Option<T> {
        match self {
            Member::Given(value) => Some(value),
            Member::Absent | Member::Null => None,
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Member<U> {
        match self {
            Member::Absent => Member::Absent,
            Member::Null => Member::Null,
            Member::Given(value) => Member::Given(f(value)),
        }
    }

    /// The given value checked and converted by `f`; absent and `null` stay as they are.
    pub fn try_map<U, E>(self, f: impl FnOnce(T) -> Result<U, E>) -> Result<Member<U>, E> {
        Ok(match self {
            Member::Absent => Member::Absent,
            Member::Null => Member::Null,
            Member::Given(value) => Member::Given(f(value)?),
        })
    }

    /// The value after this change: `current` when absent, `default` when `null`.
    pub fn apply(self, current: T, default: T) -> T {
        match self {
            Member::Absent => current,
            Member::Null => default,
            Member::Given(value) => value,
        }
    }
}

/// Reads the members of one JSON object; each `take_*` removes the member, and [`finish`]
/// rejects whatever is left, so a misspelt member is never silently ignored.
///
/// [`finish`]: JsonObject::finish
#[derive(Debug)]
pub struct JsonObject {
    /// Path of this object from the body's root, `""` for the root itself.
    path: String,
    members: Map<String, Value>,
}

impl JsonObject {
    /// The body's root: anything but an object is a 400 about the whole body.
    pub fn root(value: Value) -> Result<Self, ApiError> {
        match value {
            Value::Object(members) => Ok(JsonObject {
                path: String::new(),
                members,
            }),
            other => Err(ApiError::bad_body(format!(
                "Request body must be a JSON object, not {}",
                kind_of(&other)
            ))),
        }
    }

    /// The JSON path of a member of this object.
    pub fn path_of(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_owned()
        } else {
            format!("{}.{}", self.path, name)
        }
    }

    fn take(&mut self, name: &str) -> Member<Value> {
        match self.members.remove(name) {
            None => Member::Absent,
            Some(Value::Null) => Member::Null,
            Some(value) => Member::Given(value),
        }
    }

    fn wrong_type(&self, name: &str, expected: &str, got: &Value) -> ApiError {
        let field = self.path_of(name);
        ApiError::bad_request(
            field.clone(),
            format!("{field} must be {expected}, not {}", kind_of(got)),
        )
    }

    /// The member read by `read` when given; absent and `null` pass through.
    fn take_with<T>(
        &mut self,
        name: &str,
        read: impl FnOnce(&Self, Value) -> Result<T, ApiError>,
    ) -> Result<Member<T>, ApiError> {
        match self.take(name) {
            Member::Absent => Ok(Member::Absent),
            Member::Null => Ok(Member::Null),
            Member::Given(value) => read(self, value).map(Member::Given),
        }
    }

    pub fn take_string(&mut self, name: &str) -> Result<Member<String>, ApiError> {
        self.take_with(name, |this, value| match value {
            Value::String(value) => Ok(value),
            other => Err(this.wrong_type(name, "a string", &other)),
        })
    }

    pub fn take_bool(&mut self, name: &str) -> Result<Member<bool>, ApiError> {
        self.take_with(name, |this, value| match value {
            Value::Bool(value) => Ok(value),
            other => Err(this.wrong_type(name, "true or false", &other)),
        })
    }

    /// An integer within `range`; `1.5`, `"1"` and out-of-range values are rejected.
    pub fn take_integer(
        &mut self,
        name: &str,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<Member<i64>, ApiError> {
        let expected = format!("an integer from {} to {}", range.start(), range.end());
        self.take_with(name, |this, value| match value {
            // JSON has one number type: 13.0 is the integer 13 (as JSON Schema's "integer"
            // says), 13.5 is not an integer.
            Value::Number(number) => match number.as_i64().or_else(|| {
                number
                    .as_f64()
                    .filter(|value| value.fract() == 0.0 && value.abs() < 1e15)
                    .map(|value| value as i64)
            }) {
                Some(value) if range.contains(&value) => Ok(value),
                _ => {
                    let field = this.path_of(name);
                    Err(ApiError::bad_request(
                        field.clone(),
                        format!("{field} must be {expected}, not {number}"),
                    ))
                }
            },
            other => Err(this.wrong_type(name, &expected, &other)),
        })
    }

    pub fn take_object(&mut self, name: &str) -> Result<Member<JsonObject>, ApiError> {
        self.take_with(name, |this, value| match value {
            Value::Object(members) => Ok(JsonObject {
                path: this.path_of(name),
                members,
            }),
            other => Err(this.wrong_type(name, "an object", &other)),
        })
    }

    /// An array of objects, each read as an object at `name[i]`.
    pub fn take_objects(&mut self, name: &str) -> Result<Member<Vec<JsonObject>>, ApiError> {
        self.take_with(name, |this, value| match value {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(index, item)| {
                    let path = format!("{}[{index}]", this.path_of(name));
                    match item {
                        Value::Object(members) => Ok(JsonObject { path, members }),
                        other => Err(ApiError::bad_request(
                            path.clone(),
                            format!("{path} must be an object, not {}", kind_of(&other)),
                        )),
                    }
                })
                .collect(),
            other => Err(this.wrong_type(name, "an array of objects", &other)),
        })
    }

    /// The object's members as JSON, for a member handed over as it is given.
    pub fn into_json(self) -> Value {
        Value::Object(self.members)
    }

    /// Rejects the first member (in name order, so the answer is stable) nobody took.
    pub fn finish(self) -> Result<(), ApiError> {
        match self.members.keys().next() {
            None => Ok(()),
            Some(unknown) => {
                let field = echoed(&self.path_of(unknown));
                Err(ApiError::bad_request(
                    field.clone(),
                    format!("Unknown member {field}"),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dns_labels_follow_the_contract_pattern() {
        for good in ["a", "0", "my-agent", "a-b-c", "9lives", &"a".repeat(63)] {
            assert!(is_dns_label(good), "{good}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "My-agent",
            "my_agent",
            "my.agent",
            "my agent",
            "agént",
            &"a".repeat(64),
        ] {
            assert!(!is_dns_label(bad), "{bad}");
        }
    }

    #[test]
    fn image_references_follow_the_oci_grammar() {
        let digest = "a".repeat(64);
        for good in [
            "ghcr.io/acme/agent:1.0".to_owned(),
            "agent".to_owned(),
            "acme/agent".to_owned(),
            "localhost:5000/agent:latest".to_owned(),
            "registry.example.com:5000/team/sub/agent:v1.2.3-rc_1".to_owned(),
            format!("ghcr.io/acme/agent@sha256:{digest}"),
            format!("ghcr.io/acme/agent:1.0@sha256:{digest}"),
            // Over the 255-character name limit of many registries, within the contract's 512.
            format!("ghcr.io/acme/{}:1.0", "a".repeat(300)),
            format!("ghcr.io/acme/{}@sha256:{digest}", "a".repeat(300)),
        ] {
            assert_eq!(check_image_reference(&good), Ok(()), "{good}");
        }
        for bad in [
            "".to_owned(),
            "ghcr.io/Acme/agent:1.0".to_owned(),
            "ghcr.io/acme/agent:".to_owned(),
            "ghcr.io/acme/agent:tag with space".to_owned(),
            "ghcr.io/acme/agent:tåg".to_owned(),
            "https://ghcr.io/acme/agent".to_owned(),
            "ghcr.io//agent".to_owned(),
            format!("ghcr.io/acme/agent@sha256:{}", "a".repeat(63)),
            format!("ghcr.io/acme/agent@sha256:{}", "A".repeat(64)),
            format!("ghcr.io/acme/agent@sha512:{}", "a".repeat(128)),
            format!("ghcr.io/acme/agent:{}", "t".repeat(129)),
            format!("ghcr.io/{}", "a".repeat(512)),
            format!("ghcr.io/acme/{}@sha256:{}", "a".repeat(300), "A".repeat(64)),
            format!(
                "ghcr.io/acme/{}@sha512:{}",
                "a".repeat(300),
                "a".repeat(128)
            ),
            format!("ghcr.io/acme/{}//b", "a".repeat(300)),
        ] {
            assert!(check_image_reference(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn image_reference_errors_name_the_fault() {
        let digest = "a".repeat(64);
        let lowercase = Err("repository path must be lowercase");
        let sha256 = Err("digest must be sha256: followed by 64 lowercase hex digits");
        for (image, expected) in [
            ("ghcr.io/Acme/agent:1.0".to_owned(), lowercase),
            (format!("localhost:5000/Agent@sha256:{digest}"), lowercase),
            (format!("ghcr.io/acme/{}:1.0", "A".repeat(300)), lowercase),
            (format!("acme/agent@sha256:{}", "A".repeat(64)), sha256),
            (format!("acme/agent:1@sha512:{digest}{digest}"), sha256),
            ("acme/agent@sha256:abc".to_owned(), sha256),
            ("a".repeat(513), Err("must be at most 512 characters")),
        ] {
            assert_eq!(check_image_reference(&image), expected, "{image}");
        }
        // Capitals in the registry are allowed; a fault elsewhere is not blamed on case.
        let grammar = check_image_reference("Ghcr.io/acme/agent:").unwrap_err();
        assert!(
            grammar.starts_with("must be a container image reference"),
            "{grammar}"
        );
        assert_eq!(check_image_reference("Ghcr.io/acme/agent:1.0"), Ok(()));
    }

    #[test]
    fn reader_names_the_nested_path_of_wrong_types_and_unknown_members() {
        let mut root =
            JsonObject::root(json!({"autoScaling": {"maxAgents": "5", "x": 1}})).unwrap();
        let mut nested = root.take_object("autoScaling").unwrap().given().unwrap();
        let error = nested.take_integer("maxAgents", 1..=50).unwrap_err();
        assert_eq!(error.field(), Some("autoScaling.maxAgents"));
        let error = nested.finish().unwrap_err();
        assert_eq!(error.field(), Some("autoScaling.x"));
        assert!(root.finish().is_ok());
    }

    #[test]
    fn reader_tells_null_from_absent_and_rejects_fractions() {
        let mut root =
            JsonObject::root(json!({"a": null, "b": 1.5, "c": 7, "d": 13.0, "e": 1e300})).unwrap();
        assert_eq!(root.take_string("a").unwrap(), Member::Null);
        assert_eq!(root.take_string("z").unwrap(), Member::Absent);
        assert_eq!(
            root.take_integer("b", 0..=50).unwrap_err().field(),
            Some("b")
        );
        assert_eq!(
            root.take_integer("c", 0..=5).unwrap_err().field(),
            Some("c")
        );
        assert_eq!(
            root.take_integer("d", 0..=50).unwrap(),
            Member::Given(13),
            "13.0 is 13 in JSON"
        );
        assert_eq!(
            root.take_integer("e", 0..=50).unwrap_err().field(),
            Some("e")
        );
    }

    #[test]
    fn member_changes_apply_to_a_current_value_or_restore_the_default() {
        assert_eq!(Member::Absent.apply(3, 0), 3);
        assert_eq!(Member::Null.apply(3, 0), 0);
        assert_eq!(Member::Given(7).apply(3, 0), 7);
        assert_eq!(Member::Given(7).map(|v| v * 2).given(), Some(14));
        assert_eq!(Member::<u8>::Null.given(), None);
    }

    #[test]
    fn an_unknown_member_is_named_cut_to_64_characters() {
        let long = "m".repeat(60_000);
        let error = JsonObject::root(json!({ long: 1 }))
            .unwrap()
            .finish()
            .unwrap_err();
        assert_eq!(error.field().unwrap().chars().count(), 65);
        assert!(error.to_string().len() < 200, "{}", error.to_string().len());
    }

    #[test]
    fn reader_rejects_a_body_that_is_not_an_object() {
        for body in [json!([]), json!("x"), json!(1), json!(null)] {
            let error = JsonObject::root(body).unwrap_err();
            assert_eq!(error.status().as_u16(), 400);
            assert_eq!(error.field(), None);
        }
    }
}
