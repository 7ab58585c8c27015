//! template.yaml's EventBridge rules, run locally: what AWS does with them, for the subset of
//! EventBridge's event patterns the template uses (its rules, and the stream publisher's
//! mapping's filters). Anything outside that subset is an error here, never a silent difference
//! from AWS: objects nest; a list of values matches when the event's value (or any element of
//! an event list) equals one of them; matchers `prefix`, `suffix`, `equals-ignore-case`,
//! `exists` and `anything-but` (a value or a list).

use serde::Serialize;
use serde_json::{Map, Value};
use shared::stream_events::{Published, SOURCE};

/// A rule of the bus: the pattern, and the function it invokes: its logical id (sam's name for
/// it) and its binary (cargo lambda watch's).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub name: String,
    pub pattern: Value,
    pub function: String,
    pub binary: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("template.yaml: {0}")]
    Template(String),
    #[error("event pattern: {0}")]
    Pattern(String),
}

pub(crate) fn template_error(what: impl Into<String>) -> RuleError {
    RuleError::Template(what.into())
}

/// The resources of template.yaml (its text).
pub(crate) fn resources(text: &str) -> Result<serde_yaml::Mapping, RuleError> {
    let template: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|error| template_error(error.to_string()))?;
    match template {
        serde_yaml::Value::Mapping(mut template) => match template.remove("Resources") {
            Some(serde_yaml::Value::Mapping(resources)) => Ok(resources),
            _ => Err(template_error("no Resources")),
        },
        _ => Err(template_error("no Resources")),
    }
}

/// The account and region the simulated bus delivers events from.
pub const ACCOUNT: &str = "000000000000";
pub const REGION: &str = "us-east-1";

/// The stream publisher's event as EventBridge delivers it to a rule's target, sent now.
pub fn as_delivered(event: &Published) -> Value {
    let now = shared::timestamp::now_rfc3339_millis();
    delivered(SOURCE, event.detail_type.as_str(), &event.detail, &now)
}

/// An event as EventBridge delivers it to a rule's target, sent at `time` (RFC 3339).
pub fn delivered(source: &str, detail_type: &str, detail: &impl Serialize, time: &str) -> Value {
    serde_json::json!({
        "version": "0",
        "id": uuid::Uuid::new_v4().to_string(),
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT,
        "time": time,
        "region": REGION,
        "resources": [],
        "detail": detail,
    })
}

/// The logical id a `!GetAtt Id.Arn` (or its long form) names.
fn get_att_target(value: &serde_yaml::Value) -> Option<String> {
    match value {
        serde_yaml::Value::Tagged(tagged) if tagged.tag == "!GetAtt" => tagged
            .value
            .as_str()
            .and_then(|text| text.split('.').next())
            .map(str::to_owned),
        serde_yaml::Value::Mapping(map) => map
            .get("Fn::GetAtt")
            .and_then(|att| att.as_sequence()?.first()?.as_str().map(str::to_owned)),
        _ => None,
    }
}

fn yaml_to_json(value: &serde_yaml::Value) -> Result<Value, RuleError> {
    serde_json::to_value(value).map_err(|error| template_error(error.to_string()))
}

/// What template.yaml declares (its text): its rules, and the filters of the event source
/// mapping that hands the agents table's stream to the publisher.
pub struct Declared {
    pub rules: Vec<Rule>,
    pub stream_filters: Vec<Value>,
}

/// The rules and the stream mapping's filters template.yaml declares (its text).
pub fn from_template(text: &str) -> Result<Declared, RuleError> {
    let resources = resources(text)?;
    let mut declared = Declared {
        rules: Vec::new(),
        stream_filters: Vec::new(),
    };
    for (name, resource) in &resources {
        let name = name.as_str().unwrap_or_default().to_owned();
        let properties = &resource["Properties"];
        match resource["Type"].as_str() {
            Some("AWS::Lambda::EventSourceMapping") => {
                let filters = properties["FilterCriteria"]["Filters"]
                    .as_sequence()
                    .ok_or_else(|| template_error(format!("{name}: no filters")))?;
                for filter in filters {
                    let pattern = filter["Pattern"]
                        .as_str()
                        .ok_or_else(|| template_error(format!("{name}: a filter's Pattern")))?;
                    declared.stream_filters.push(
                        serde_json::from_str(pattern)
                            .map_err(|error| template_error(format!("{name}: {error}")))?,
                    );
                }
            }
            Some("AWS::Events::Rule") => {
                let targets = properties["Targets"]
                    .as_sequence()
                    .ok_or_else(|| template_error(format!("{name}: no Targets")))?;
                for target in targets {
                    let function = get_att_target(&target["Arn"])
                        .ok_or_else(|| template_error(format!("{name}: a target's Arn")))?;
                    // A rule to a queue feeds the data plane on AWS (its inbox); locally the
                    // data plane reads the stream itself, and only functions are delivered to.
                    let kind = resources.get(function.as_str()).map(|f| &f["Type"]);
                    if kind.and_then(|k| k.as_str()) == Some("AWS::SQS::Queue") {
                        continue;
                    }
                    let binary = resources
                        .get(function.as_str())
                        .and_then(|f| f["Metadata"]["BuildProperties"]["Binary"].as_str())
                        .ok_or_else(|| template_error(format!("{name}: {function}'s binary")))?
                        .to_owned();
                    declared.rules.push(Rule {
                        name: name.clone(),
                        pattern: yaml_to_json(&properties["EventPattern"])?,
                        function,
                        binary,
                    });
                }
            }
            _ => {}
        }
    }
    Ok(declared)
}

/// Whether `event` matches an EventBridge event pattern.
pub fn matches(pattern: &Value, event: &Value) -> Result<bool, RuleError> {
    let Value::Object(fields) = pattern else {
        return Err(RuleError::Pattern(format!(
            "a pattern is an object, not {pattern}"
        )));
    };
    for (key, expected) in fields {
        let actual = event.get(key);
        let matched = match expected {
            // EventBridge matches flattened paths: below a member the event lacks, every leaf
            // is absent (so `{"exists": false}` there matches).
            Value::Object(_) => match actual {
                Some(actual @ Value::Object(_)) => matches(expected, actual)?,
                _ => matches(expected, &Value::Object(Map::new()))?,
            },
            Value::Array(values) => {
                let mut any = false;
                for value in values {
                    if matches_value(value, actual)? {
                        any = true;
                        break;
                    }
                }
                any
            }
            other => {
                return Err(RuleError::Pattern(format!(
                    "{key}: a pattern's leaf is a list, not {other}"
                )));
            }
        };
        if !matched {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One element of a pattern's list against the event's value (absent, a value, or a list).
fn matches_value(expected: &Value, actual: Option<&Value>) -> Result<bool, RuleError> {
    let values: Vec<&Value> = match actual {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(value) => vec![value],
    };
    let Value::Object(matcher) = expected else {
        return Ok(values.contains(&expected));
    };
    let (kind, argument) = match matcher.iter().next() {
        Some(entry) if matcher.len() == 1 => entry,
        _ => {
            return Err(RuleError::Pattern(format!(
                "one matcher an object: {expected}"
            )));
        }
    };
    let text = |value: &&Value| value.as_str().map(str::to_owned);
    Ok(match (kind.as_str(), argument) {
        ("exists", Value::Bool(exists)) => actual.is_some() == *exists,
        ("prefix", Value::String(prefix)) => values
            .iter()
            .filter_map(text)
            .any(|v| v.starts_with(prefix)),
        ("suffix", Value::String(suffix)) => {
            values.iter().filter_map(text).any(|v| v.ends_with(suffix))
        }
        ("equals-ignore-case", Value::String(other)) => values
            .iter()
            .filter_map(text)
            .any(|v| v.eq_ignore_ascii_case(other)),
        ("anything-but", Value::Array(excluded)) => {
            !values.is_empty() && values.iter().all(|value| !excluded.contains(value))
        }
        ("anything-but", excluded) if !excluded.is_object() => {
            !values.is_empty() && values.iter().all(|value| *value != excluded)
        }
        (other, argument) => {
            return Err(RuleError::Pattern(format!(
                "matcher {other}: {argument} is not supported here"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns_match_values_lists_and_matchers() {
        let record = json!({"eventName": "INSERT", "dynamodb": {"NewImage": {"kind": {"S": "deployment"}, "tags": ["a", "b"]}}});
        let pattern = |p: Value| matches(&p, &record).unwrap();
        assert!(pattern(json!({"eventName": ["INSERT", "MODIFY"]})));
        assert!(!pattern(json!({"eventName": ["REMOVE"]})));
        assert!(pattern(
            json!({"dynamodb": {"NewImage": {"kind": {"S": ["deployment"]}}}})
        ));
        assert!(!pattern(
            json!({"dynamodb": {"OldImage": {"kind": {"S": ["deployment"]}}}})
        ));
        assert!(pattern(json!({"dynamodb": {"NewImage": {"tags": ["b"]}}})));
        assert!(pattern(json!({"eventName": [{"prefix": "INS"}]})));
        assert!(pattern(json!({"eventName": [{"suffix": "ERT"}]})));
        assert!(pattern(
            json!({"eventName": [{"equals-ignore-case": "insert"}]})
        ));
        assert!(pattern(
            json!({"eventName": [{"anything-but": ["REMOVE"]}]})
        ));
        assert!(!pattern(json!({"eventName": [{"anything-but": "INSERT"}]})));
        assert!(pattern(
            json!({"dynamodb": {"OldImage": [{"exists": false}]}})
        ));
        assert!(!pattern(
            json!({"dynamodb": {"NewImage": [{"exists": false}]}})
        ));
        // Below a member the record lacks, a leaf is absent; anything else there matches nothing.
        assert!(pattern(
            json!({"dynamodb": {"OldImage": {"stopRequestedAt": {"S": [{"exists": false}]}}}})
        ));
        assert!(!pattern(
            json!({"dynamodb": {"OldImage": {"kind": {"S": [{"exists": true}]}}}})
        ));
        assert!(
            matches(&json!({"eventName": [{"numeric": [">", 1]}]}), &record).is_err(),
            "unsupported is an error"
        );
        assert!(
            matches(&json!({"eventName": "INSERT"}), &record).is_err(),
            "a leaf must be a list"
        );
    }

    #[test]
    fn the_template_s_rules_and_stream_filters_are_read() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .unwrap();
        let declared = from_template(&text).unwrap();
        let published: Vec<Value> = shared::stream_events::FILTERS
            .iter()
            .map(|filter| serde_json::from_str(filter).unwrap())
            .collect();
        assert_eq!(
            declared.stream_filters, published,
            "the mapping's filters are the publisher's"
        );
        let rules = declared.rules;
        let mut ruled: Vec<(&str, &str)> = rules
            .iter()
            .map(|rule| (rule.function.as_str(), rule.binary.as_str()))
            .collect();
        ruled.sort_unstable();
        assert_eq!(
            ruled,
            [
                ("DeploymentStatusFunction", "deployment-status"),
                ("SessionStatusFunction", "session-status")
            ]
        );
        for rule in &rules {
            for kind in [
                shared::stream_events::DEPLOYMENT_STATUS,
                shared::stream_events::SESSION_STATUS,
            ] {
                let report = json!({"source": "agent-hosting.data-plane", "detail-type": kind});
                let own = rule
                    .binary
                    .starts_with(&kind.to_lowercase().replace(' ', "-"));
                assert_eq!(matches(&rule.pattern, &report).unwrap(), own, "{kind}");
            }
        }
    }
}
