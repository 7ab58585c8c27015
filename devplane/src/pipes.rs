//! template.yaml's EventBridge pipes and rules, run locally: what AWS does with them, for the
//! subset of EventBridge's event patterns and Pipes' input templates the template uses. Anything
//! outside that subset is an error here, never a silent difference from AWS.
//!
//! - Event patterns (filter criteria, rules): objects nest; a list of values matches when the
//!   event's value (or any element of an event list) equals one of them; matchers `prefix`,
//!   `suffix`, `equals-ignore-case`, `exists` and `anything-but` (a value or a list).
//! - Input templates: `<$.a.b.c>` (dot paths, `[n]` indices). Inside a JSON string the value is
//!   inserted as text (escaped, so the result is always JSON: AWS does not escape, and the
//!   template only quotes ids); outside, as JSON (a string quoted, an object as an object).
//!   A path the record does not have is an error (on AWS it breaks the event's JSON).

use serde_json::{Map, Value};

/// What a pipe publishes, read from template.yaml.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipe {
    pub name: String,
    /// Filter patterns, any of which lets a record through.
    pub filters: Vec<Value>,
    pub source: String,
    pub detail_type: String,
    pub input_template: String,
}

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
pub enum PipeError {
    #[error("template.yaml: {0}")]
    Template(String),
    #[error("event pattern: {0}")]
    Pattern(String),
    #[error("input template: {0}")]
    Input(String),
}

fn template_error(what: impl Into<String>) -> PipeError {
    PipeError::Template(what.into())
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

fn yaml_to_json(value: &serde_yaml::Value) -> Result<Value, PipeError> {
    serde_json::to_value(value).map_err(|error| template_error(error.to_string()))
}

/// The pipes and rules template.yaml declares (its text).
pub fn from_template(text: &str) -> Result<(Vec<Pipe>, Vec<Rule>), PipeError> {
    let template: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|error| template_error(error.to_string()))?;
    let resources = template["Resources"]
        .as_mapping()
        .ok_or_else(|| template_error("no Resources"))?;
    let (mut pipes, mut rules) = (Vec::new(), Vec::new());
    for (name, resource) in resources {
        let name = name.as_str().unwrap_or_default().to_owned();
        let properties = &resource["Properties"];
        match resource["Type"].as_str() {
            Some("AWS::Pipes::Pipe") => {
                let filters = properties["SourceParameters"]["FilterCriteria"]["Filters"]
                    .as_sequence()
                    .ok_or_else(|| template_error(format!("{name}: no filters")))?
                    .iter()
                    .map(|filter| {
                        let pattern = filter["Pattern"]
                            .as_str()
                            .ok_or_else(|| template_error(format!("{name}: a filter's Pattern")))?;
                        serde_json::from_str(pattern)
                            .map_err(|error| template_error(format!("{name}: {error}")))
                    })
                    .collect::<Result<Vec<Value>, _>>()?;
                let target = &properties["TargetParameters"];
                let bus = &target["EventBridgeEventBusParameters"];
                let text = |value: &serde_yaml::Value, what: &str| {
                    value
                        .as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| template_error(format!("{name}: {what}")))
                };
                pipes.push(Pipe {
                    source: text(&bus["Source"], "Source")?,
                    detail_type: text(&bus["DetailType"], "DetailType")?,
                    input_template: text(&target["InputTemplate"], "InputTemplate")?,
                    filters,
                    name,
                });
            }
            Some("AWS::Events::Rule") => {
                let targets = properties["Targets"]
                    .as_sequence()
                    .ok_or_else(|| template_error(format!("{name}: no Targets")))?;
                for target in targets {
                    let function = get_att_target(&target["Arn"])
                        .ok_or_else(|| template_error(format!("{name}: a target's Arn")))?;
                    let binary = resources
                        .get(function.as_str())
                        .and_then(|f| f["Metadata"]["BuildProperties"]["Binary"].as_str())
                        .ok_or_else(|| template_error(format!("{name}: {function}'s binary")))?
                        .to_owned();
                    rules.push(Rule {
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
    Ok((pipes, rules))
}

/// Whether `event` matches an EventBridge event pattern.
pub fn matches(pattern: &Value, event: &Value) -> Result<bool, PipeError> {
    let Value::Object(fields) = pattern else {
        return Err(PipeError::Pattern(format!(
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
                return Err(PipeError::Pattern(format!(
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
fn matches_value(expected: &Value, actual: Option<&Value>) -> Result<bool, PipeError> {
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
            return Err(PipeError::Pattern(format!(
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
            return Err(PipeError::Pattern(format!(
                "matcher {other}: {argument} is not supported here"
            )));
        }
    })
}

/// The value at a `$.a.b[0].c` path of `record`.
fn at_path<'a>(record: &'a Value, path: &str) -> Result<&'a Value, PipeError> {
    let rest = path
        .strip_prefix('$')
        .ok_or_else(|| PipeError::Input(format!("<{path}>: a path starts with $")))?;
    let mut value = record;
    for step in rest.split('.').skip(1) {
        let (name, indices) = match step.find('[') {
            Some(open) => (&step[..open], &step[open..]),
            None => (step, ""),
        };
        if !name.is_empty() {
            value = value
                .get(name)
                .ok_or_else(|| PipeError::Input(format!("<{path}>: no {name} in the record")))?;
        }
        for index in indices.split('[').skip(1) {
            let index: usize = index
                .strip_suffix(']')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| PipeError::Input(format!("<{path}>: index {index}")))?;
            value = value
                .get(index)
                .ok_or_else(|| PipeError::Input(format!("<{path}>: no item {index}")))?;
        }
    }
    Ok(value)
}

/// A pipe's input template applied to one source record: the event's `detail`.
pub fn render(template: &str, record: &Value) -> Result<Value, PipeError> {
    let mut out = String::with_capacity(template.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        if c == '<' && rest[1..].starts_with('$') {
            let end = rest
                .find('>')
                .ok_or_else(|| PipeError::Input(format!("unclosed placeholder in {template}")))?;
            let value = at_path(record, &rest[1..end])?;
            if in_string {
                let text = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                let quoted = Value::String(text).to_string();
                out.push_str(&quoted[1..quoted.len() - 1]);
            } else {
                out.push_str(&value.to_string());
            }
            rest = &rest[end + 1..];
            continue;
        }
        match c {
            '\\' if in_string => escaped = !escaped,
            '"' if !escaped => in_string = !in_string,
            _ => escaped = false,
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    serde_json::from_str(&out).map_err(|error| {
        PipeError::Input(format!("the rendered detail is not JSON ({error}): {out}"))
    })
}

/// The event a pipe publishes for a record it lets through (EventBridge's envelope).
pub fn event(pipe: &Pipe, detail: Value, account: &str, region: &str) -> Value {
    let mut event = Map::new();
    event.insert("version".into(), "0".into());
    event.insert("id".into(), uuid::Uuid::new_v4().to_string().into());
    event.insert("detail-type".into(), pipe.detail_type.clone().into());
    event.insert("source".into(), pipe.source.clone().into());
    event.insert("account".into(), account.into());
    event.insert(
        "time".into(),
        shared::timestamp::now_rfc3339_millis().into(),
    );
    event.insert("region".into(), region.into());
    event.insert("resources".into(), Value::Array(Vec::new()));
    event.insert("detail".into(), detail);
    Value::Object(event)
}

/// What `pipe` publishes for `record`: nothing when no filter lets it through.
pub fn publish(pipe: &Pipe, record: &Value) -> Result<Option<Value>, PipeError> {
    for filter in &pipe.filters {
        if matches(filter, record)? {
            let detail = render(&pipe.input_template, record)?;
            return Ok(Some(event(pipe, detail, "000000000000", "us-east-1")));
        }
    }
    Ok(None)
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
    fn templates_insert_text_in_strings_and_json_outside() {
        let record =
            json!({"a": {"S": "ns-1"}, "m": {"M": {"k": {"S": "v \"q\""}}}, "l": [{"S": "x"}]});
        let detail = render(r#"{"ns": "<$.a.S>", "copy": <$.a.S>, "map": <$.m.M>, "first": "<$.l[0].S>", "p": "pre-<$.a.S>"}"#, &record).unwrap();
        assert_eq!(
            detail,
            json!({"ns": "ns-1", "copy": "ns-1", "map": {"k": {"S": "v \"q\""}}, "first": "x", "p": "pre-ns-1"})
        );
        assert!(
            render(r#"{"x": "<$.missing.S>"}"#, &record).is_err(),
            "a missing path is an error"
        );
        assert!(render(r#"{"x": "<$.a.S"}"#, &record).is_err());
    }

    #[test]
    fn the_templates_pipes_and_rules_are_read() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .unwrap();
        let (pipes, rules) = from_template(&text).unwrap();
        let mut kinds: Vec<&str> = pipes.iter().map(|pipe| pipe.detail_type.as_str()).collect();
        kinds.sort_unstable();
        assert_eq!(
            kinds,
            [
                "Agent Deleted",
                "Deployment Requested",
                "Session Requested",
                "Session Stop Requested"
            ]
        );
        assert!(pipes.iter().all(|pipe| pipe.source == "agent-hosting"));
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
            for kind in ["Deployment Status", "Session Status"] {
                let report = json!({"source": "agent-hosting.data-plane", "detail-type": kind});
                let own = rule
                    .binary
                    .starts_with(&kind.to_lowercase().replace(' ', "-"));
                assert_eq!(matches(&rule.pattern, &report).unwrap(), own, "{kind}");
            }
        }
    }
}
