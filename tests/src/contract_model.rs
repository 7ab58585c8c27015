//! The contract's answer to a request, worked out from the request alone and from what the
//! account holds: an independent reading of contract sections 1 to 4 and 10 (literal values, the
//! contract's order of checks), never the service's own code. The generated-requests test gives
//! each generated request the answer this model expects.
//!
//! Where the contract names a member or parameter, the model gives every one a request breaks
//! (the service names one of them: which is its choice).

use std::collections::{BTreeSet, HashMap, HashSet};

use container_image_dist_ref::ImgRef;
use http::HeaderMap;
use serde_json::{Map, Value};

/// One answer the contract allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This status, with no `field` (a success, or an error about the request as a whole).
    Status(u16),
    /// A 400 naming one of these members or parameters.
    Invalid(BTreeSet<String>),
}

impl Answer {
    fn invalid(fields: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Answer::Invalid(fields.into_iter().map(Into::into).collect())
    }

    /// Whether an answer of `status` naming `field` is this one.
    pub fn matches(&self, status: u16, field: Option<&str>) -> bool {
        match self {
            Answer::Status(expected) => status == *expected && field.is_none(),
            Answer::Invalid(fields) => status == 400 && field.is_some_and(|f| fields.contains(f)),
        }
    }
}

/// A name as an error echoes it: at most 64 characters, then `…`.
fn echoed(name: &str) -> String {
    match name.char_indices().nth(64) {
        None => name.to_owned(),
        Some((cut, _)) => format!("{}…", &name[..cut]),
    }
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, 1 to 63 characters (contract section 3).
pub fn is_name(value: &str) -> bool {
    let bytes = value.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&bytes.len())
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
}

/// An image reference the contract takes, by `container_image_dist_ref` (an independent parser,
/// which its authors test against distribution/reference, the registries' Go package) with the
/// contract's narrowings: the only digest is sha256 with 64 lowercase hex digits, and no IPv6
/// literal registries. `None` where that oracle cannot tell: it applies the registries'
/// 255-character name limit, which the contract does not (its one bound is 512).
pub fn image_verdict(image: &str) -> Option<bool> {
    if image.len() > 512 || !image.is_ascii() {
        return Some(false);
    }
    if image.len() > 255 {
        return None;
    }
    let Ok(reference) = ImgRef::new(image) else {
        return Some(false);
    };
    let sha256 = |digest: &str| {
        digest.strip_prefix("sha256:").is_some_and(|hex| {
            hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
    };
    let ipv6 = reference
        .domain()
        .is_some_and(|domain| domain.to_str().starts_with('['));
    // distribution's tag is `[\w][\w.-]{0,127}`; container_image_dist_ref 0.3.0 lets a
    // 129-character tag through when a '/' comes before it (an off-by-one, found by
    // tests/tests/image_reference.rs).
    let tag_in_grammar = reference.tag().is_none_or(|tag| tag.len() <= 128);
    Some(
        reference
            .digest()
            .is_none_or(|digest| sha256(digest.to_str()))
            && !ipv6
            && tag_in_grammar,
    )
}

/// A JSON number that is an integer (JSON has one number type: 13.0 is 13), within `range`.
fn integer_in(value: &Value, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
    let number = value.as_number()?;
    let integer = number.as_i64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
            .map(|f| f as i64)
    })?;
    range.contains(&integer).then_some(integer)
}

/// The members of a create body (contract section 3).
pub const CREATE_MEMBERS: &[&str] = &[
    "serviceName",
    "image",
    "nodeType",
    "imagePullSecretSet",
    "secretSet",
    "autoScaling",
    "enableNoise",
    "noiseViva",
    "agentProfile",
    "enableManagedKeys",
    // Section 11: seconds a session may last.
    "maxSessionDuration",
    // Section 10: the anchor's member, of updates; a create accepts it and always deploys.
    "forceRedeploy",
];

/// What a create body breaks, member by member (contract section 3): the fields, and whether
/// the image is one the model cannot judge.
struct BodyFaults {
    fields: BTreeSet<String>,
    image_unknown: bool,
}

fn create_body_faults(members: &Map<String, Value>) -> BodyFaults {
    let mut fields = BTreeSet::new();
    let mut image_unknown = false;
    let given = |name: &str| members.get(name).filter(|value| !value.is_null());
    let string_rule = |name: &str, rule: &dyn Fn(&str) -> bool| {
        given(name).is_some_and(|value| !value.as_str().is_some_and(rule))
    };
    // Required.
    match given("serviceName") {
        None => {
            fields.insert("serviceName".to_owned());
        }
        Some(value) if !value.as_str().is_some_and(is_name) => {
            fields.insert("serviceName".to_owned());
        }
        Some(_) => {}
    }
    match given("image").map(|value| value.as_str().map(image_verdict)) {
        None | Some(None) | Some(Some(Some(false))) => {
            fields.insert("image".to_owned());
        }
        Some(Some(None)) => image_unknown = true,
        Some(Some(Some(true))) => {}
    }
    for (name, bad) in [
        ("nodeType", string_rule("nodeType", &|v| v == "arm")),
        (
            "imagePullSecretSet",
            string_rule("imagePullSecretSet", &is_name),
        ),
        ("secretSet", string_rule("secretSet", &is_name)),
        (
            "agentProfile",
            string_rule("agentProfile", &|v| v == "agent-1x" || v == "agent-2x"),
        ),
        (
            "enableNoise",
            given("enableNoise").is_some_and(|v| !v.is_boolean()),
        ),
        (
            "enableManagedKeys",
            given("enableManagedKeys").is_some_and(|v| !v.is_boolean()),
        ),
        (
            "forceRedeploy",
            given("forceRedeploy").is_some_and(|v| !v.is_boolean()),
        ),
        (
            "maxSessionDuration",
            given("maxSessionDuration").is_some_and(|v| integer_in(v, 60..=14_400).is_none()),
        ),
    ] {
        if bad {
            fields.insert(name.to_owned());
        }
    }
    // A set is of one kind, so the two members never name one set: decided by the body alone.
    if let (Some(Value::String(secret)), Some(Value::String(pull))) =
        (given("secretSet"), given("imagePullSecretSet"))
        && secret == pull
        && is_name(secret)
    {
        fields.insert("secretSet".to_owned());
        fields.insert("imagePullSecretSet".to_owned());
    }
    match given("autoScaling") {
        None => {}
        Some(Value::Object(scaling)) => {
            let bound = |name: &str, range, default| match scaling.get(name) {
                None | Some(Value::Null) => Ok(default),
                Some(value) => integer_in(value, range).ok_or(()),
            };
            let min = bound("minAgents", 0..=50, 0);
            let max = bound("maxAgents", 1..=50, 50);
            if min.is_err() {
                fields.insert("autoScaling.minAgents".to_owned());
            }
            if max.is_err() {
                fields.insert("autoScaling.maxAgents".to_owned());
            }
            if let (Ok(min), Ok(max)) = (min, max)
                && max < min
            {
                fields.insert("autoScaling.minAgents".to_owned());
                fields.insert("autoScaling.maxAgents".to_owned());
            }
            for name in scaling.keys() {
                if name != "minAgents" && name != "maxAgents" {
                    fields.insert(echoed(&format!("autoScaling.{name}")));
                }
            }
        }
        Some(_) => {
            fields.insert("autoScaling".to_owned());
        }
    }
    match given("noiseViva") {
        None => {}
        Some(Value::Object(noise)) => {
            let filter_ok = match noise.get("audioFilter") {
                None | Some(Value::Null) => true,
                Some(value) => matches!(value.as_str(), Some("tel" | "pro")),
            };
            if !filter_ok {
                fields.insert("noiseViva.audioFilter".to_owned());
            }
            for name in noise.keys().filter(|name| *name != "audioFilter") {
                fields.insert(echoed(&format!("noiseViva.{name}")));
            }
        }
        Some(_) => {
            fields.insert("noiseViva".to_owned());
        }
    }
    for name in members
        .keys()
        .filter(|name| !CREATE_MEMBERS.contains(&name.as_str()))
    {
        fields.insert(echoed(name));
    }
    BodyFaults {
        fields,
        image_unknown,
    }
}

/// Whether a Content-Type names JSON: `application/json` or `application/*+json`, any case,
/// parameters allowed.
fn is_json_media_type(value: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(value) else {
        return false;
    };
    if !text
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return false;
    }
    let media = text
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

/// Whether the request carries exactly the one credential the account was given.
pub fn authorized(headers: &HeaderMap, valid: &str) -> bool {
    let values: Vec<&[u8]> = headers
        .get_all("authorization")
        .iter()
        .map(|value| value.as_bytes())
        .collect();
    let [value] = values.as_slice() else {
        return false;
    };
    value.len() == valid.len()
        && value[..7].eq_ignore_ascii_case(b"Bearer ")
        && value[7..] == valid.as_bytes()[7..]
}

/// What a secret set holds (contract section 10): keys, or a registry's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    Secret,
    ImagePull,
}

/// What one account holds, as far as creates are concerned.
#[derive(Debug, Default)]
pub struct Account {
    names: HashSet<String>,
    /// The account's secret sets by name.
    sets: HashMap<String, SetKind>,
    /// Idempotency-Key → the body of the request it first answered.
    keys: HashMap<Vec<u8>, Value>,
}

/// An answer a create may get, and what it does to the account if it is the one given.
#[derive(Debug, Clone)]
pub struct CreateOutcome {
    pub answer: Answer,
    /// The agent and key it records.
    created: Option<(String, Option<Vec<u8>>, Value)>,
    /// Whether the answer replays the first answer to its key.
    pub replayed: bool,
}

impl CreateOutcome {
    fn of(answer: Answer) -> Self {
        CreateOutcome {
            answer,
            created: None,
            replayed: false,
        }
    }
}

impl Account {
    pub fn agents(&self) -> usize {
        self.names.len()
    }

    pub fn keys(&self) -> usize {
        self.keys.len()
    }

    /// The account holds a set of this name and kind.
    pub fn hold_set(&mut self, name: &str, kind: SetKind) {
        self.sets.insert(name.to_owned(), kind);
    }

    /// The members of a body whose set the account does not hold with the member's kind
    /// (contract section 10).
    fn missing_sets(&self, members: &Map<String, Value>) -> BTreeSet<String> {
        [
            ("secretSet", SetKind::Secret),
            ("imagePullSecretSet", SetKind::ImagePull),
        ]
        .into_iter()
        .filter(|(member, kind)| {
            members
                .get(*member)
                .and_then(Value::as_str)
                .is_some_and(|name| self.sets.get(name) != Some(kind))
        })
        .map(|(member, _)| member.to_owned())
        .collect()
    }

    /// The answers `POST /v1/agents` with these parts may get (one, but where the model cannot
    /// judge the image: then it may be refused for the image or taken).
    pub fn expect_create(
        &self,
        valid_authorization: &str,
        method: &str,
        headers: &HeaderMap,
        body: &[u8],
        duplicate: Option<&str>,
    ) -> Vec<CreateOutcome> {
        let only = |answer| vec![CreateOutcome::of(answer)];
        if !authorized(headers, valid_authorization) {
            return only(Answer::Status(401));
        }
        if method != "POST" {
            return only(Answer::Status(405));
        }
        let keys: Vec<&[u8]> = headers
            .get_all("idempotency-key")
            .iter()
            .map(|value| value.as_bytes())
            .collect();
        let key = match keys.as_slice() {
            [] => None,
            [key]
                if (1..=255).contains(&key.len())
                    && key.iter().all(|b| (b'!'..=b'~').contains(b)) =>
            {
                Some(key.to_vec())
            }
            _ => return only(Answer::invalid(["Idempotency-Key"])),
        };
        if body.len() > 64 * 1024 {
            return only(Answer::Status(413));
        }
        let content_types: Vec<&[u8]> = headers
            .get_all("content-type")
            .iter()
            .map(|value| value.as_bytes())
            .collect();
        match content_types.as_slice() {
            [] => {}
            [value] if is_json_media_type(value) => {}
            _ => return only(Answer::Status(415)),
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return only(Answer::Status(400));
        }
        let Ok(parsed) = serde_json::from_slice::<Value>(body) else {
            return only(Answer::Status(400));
        };
        if let Some(path) = duplicate {
            return only(Answer::invalid([echoed(path)]));
        }
        let Value::Object(members) = &parsed else {
            return only(Answer::Status(400));
        };
        let faults = create_body_faults(members);
        if !faults.fields.is_empty() {
            return only(Answer::Invalid(faults.fields));
        }
        let name = members["serviceName"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let missing_sets = self.missing_sets(members);
        let taken = match key.as_ref().and_then(|key| self.keys.get(key)) {
            Some(first) if *first == parsed => CreateOutcome {
                answer: Answer::Status(201),
                created: None,
                replayed: true,
            },
            Some(_) => CreateOutcome::of(Answer::Status(422)),
            None if !missing_sets.is_empty() => CreateOutcome::of(Answer::Invalid(missing_sets)),
            None if self.names.contains(&name) => CreateOutcome::of(Answer::Status(409)),
            None => CreateOutcome {
                answer: Answer::Status(201),
                created: Some((name, key, parsed)),
                replayed: false,
            },
        };
        let mut outcomes = vec![taken];
        if faults.image_unknown {
            outcomes.push(CreateOutcome::of(Answer::invalid(["image"])));
        }
        outcomes
    }

    /// What the answer given did to the account.
    pub fn apply(&mut self, outcome: &CreateOutcome) {
        if let Some((name, key, body)) = &outcome.created {
            self.names.insert(name.clone());
            if let Some(key) = key {
                self.keys.insert(key.clone(), body.clone());
            }
        }
    }
}

/// The answer `GET /v1/agents/{agent}/logs` with these query parameters gets (contract section
/// 4), for an account whose only agent is `existing`; `cursor` values are never ones the
/// service made.
pub fn expect_logs(
    authorized: bool,
    method: &str,
    agent: &str,
    existing: &str,
    params: &[(String, String)],
) -> Answer {
    if !authorized {
        return Answer::Status(401);
    }
    if method != "GET" {
        return Answer::Status(405);
    }
    if !is_name(agent) {
        return Answer::Status(404);
    }
    const KNOWN: &[&str] = &[
        "limit",
        "offset",
        "order",
        "startTime",
        "endTime",
        "deploymentId",
        "sessionId",
        "query",
        "cursor",
    ];
    let mut faults = BTreeSet::new();
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (name, value) in params {
        if !KNOWN.contains(&name.as_str()) {
            faults.insert(echoed(name));
        } else if seen.insert(name, value).is_some() {
            faults.insert(name.clone());
        }
    }
    // An empty value is an absent parameter.
    let get = |name: &str| seen.get(name).copied().filter(|value| !value.is_empty());
    let integer = |name: &str, range: std::ops::RangeInclusive<i64>| -> Result<Option<i64>, ()> {
        match get(name) {
            None => Ok(None),
            Some(text) => text
                .parse::<i64>()
                .ok()
                .filter(|n| range.contains(n))
                .map(Some)
                .ok_or(()),
        }
    };
    let limit = integer("limit", 1..=1000);
    let offset = integer("offset", 0..=10_000);
    if limit.is_err() {
        faults.insert("limit".to_owned());
    }
    if offset.is_err() {
        faults.insert("offset".to_owned());
    }
    if let (Ok(limit), Ok(offset)) = (limit, offset)
        && offset.unwrap_or(0) + limit.unwrap_or(10) > 10_000
    {
        faults.insert("offset".to_owned());
    }
    if get("order").is_some_and(|order| order != "asc" && order != "desc") {
        faults.insert("order".to_owned());
    }
    let start = integer("startTime", 0..=253_402_300_799);
    let end = integer("endTime", 0..=253_402_300_799);
    if start.is_err() {
        faults.insert("startTime".to_owned());
    }
    if end.is_err() {
        faults.insert("endTime".to_owned());
    }
    if let (Ok(Some(start)), Ok(Some(end))) = (start, end)
        && end <= start
    {
        faults.insert("endTime".to_owned());
    }
    for (name, longest) in [("deploymentId", 256), ("sessionId", 256), ("query", 256)] {
        if get(name).is_some_and(|value| value.chars().count() > longest) {
            faults.insert(name.to_owned());
        }
    }
    if !faults.is_empty() {
        return Answer::Invalid(faults);
    }
    if agent != existing {
        return Answer::Status(404);
    }
    if get("cursor").is_some() {
        return Answer::invalid(["cursor"]);
    }
    Answer::Status(200)
}
