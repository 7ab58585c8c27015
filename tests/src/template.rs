//! template.yaml as the template tests read it: serde_yaml's view, where CloudFormation's short
//! forms (`!Ref`, `!GetAtt`) are tagged values.

use serde_yaml::Value as Yaml;

pub fn template() -> Yaml {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A CloudFormation `!Ref NAME`, as serde_yaml reads the short form.
pub fn reference(value: &Yaml) -> Option<&str> {
    match value {
        Yaml::Tagged(tagged) if tagged.tag == "!Ref" => tagged.value.as_str(),
        _ => None,
    }
}

/// A CloudFormation `!GetAtt NAME.ATTRIBUTE`, as serde_yaml reads the short form.
pub fn get_att(value: &Yaml) -> Option<&str> {
    match value {
        Yaml::Tagged(tagged) if tagged.tag == "!GetAtt" => tagged.value.as_str(),
        _ => None,
    }
}

/// A CloudFormation `!Sub TEXT` (the one-argument form): its text.
pub fn sub(value: &Yaml) -> Option<&str> {
    match value {
        Yaml::Tagged(tagged) if tagged.tag == "!Sub" => tagged.value.as_str(),
        _ => None,
    }
}

/// The statements of an `AWS::IAM::Role`'s inline policies (not its trust policy).
pub fn role_statements<'a>(template: &'a Yaml, role: &str) -> Vec<&'a Yaml> {
    let resource = &template["Resources"][role];
    assert_eq!(resource["Type"].as_str(), Some("AWS::IAM::Role"), "{role}");
    resource["Properties"]["Policies"]
        .as_sequence()
        .into_iter()
        .flatten()
        .flat_map(|policy| policy["PolicyDocument"]["Statement"].as_sequence())
        .flatten()
        .collect()
}

/// A statement's `Resource`, one or a list, as a list.
pub fn statement_resources(statement: &Yaml) -> Vec<&Yaml> {
    match &statement["Resource"] {
        Yaml::Sequence(list) => list.iter().collect(),
        Yaml::Null => Vec::new(),
        one => vec![one],
    }
}

/// The resources of one type, by logical name.
pub fn resources_of_type<'a>(template: &'a Yaml, kind: &str) -> Vec<(&'a str, &'a Yaml)> {
    template["Resources"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, resource)| resource["Type"].as_str() == Some(kind))
        .map(|(name, resource)| (name.as_str().unwrap(), resource))
        .collect()
}

/// One statement of a function's inline policies: its actions and its resources.
#[derive(Debug)]
pub struct Grant<'a> {
    pub actions: Vec<String>,
    pub resources: Vec<&'a Yaml>,
}

/// Every statement of each function's inline policies, by function. SAM's KMS policy templates
/// (e.g. KMSDecryptPolicy), which grant actions by name only, are refused.
pub fn function_grants(template: &Yaml) -> Vec<(&str, Vec<Grant<'_>>)> {
    resources_of_type(template, "AWS::Serverless::Function")
        .into_iter()
        .map(|(name, function)| {
            let mut grants = Vec::new();
            for policy in function["Properties"]["Policies"]
                .as_sequence()
                .into_iter()
                .flatten()
            {
                if let Some(template_policy) = policy.as_mapping().and_then(|m| m.keys().next()) {
                    let policy_name = template_policy.as_str().unwrap_or_default();
                    assert!(
                        policy_name == "Statement" || !policy_name.starts_with("KMS"),
                        "{name}: a SAM KMS policy template"
                    );
                }
                for statement in policy["Statement"].as_sequence().into_iter().flatten() {
                    grants.push(Grant {
                        actions: strings(&statement["Action"]),
                        resources: match &statement["Resource"] {
                            Yaml::Sequence(list) => list.iter().collect(),
                            Yaml::Null => Vec::new(),
                            one => vec![one],
                        },
                    });
                }
            }
            (name, grants)
        })
        .collect()
}

/// A string or a list of strings (an `Action`, say), as a list.
pub fn strings(value: &Yaml) -> Vec<String> {
    match value {
        Yaml::String(one) => vec![one.clone()],
        Yaml::Sequence(list) => list
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// The filters of the event source mappings (their `FilterCriteria`), by mapping: each pattern
/// as JSON, numbered within its mapping (`{Mapping}-{i}`).
pub fn stream_filters(template: &Yaml) -> Vec<(String, serde_json::Value)> {
    let mut filters = Vec::new();
    for (name, mapping) in resources_of_type(template, "AWS::Lambda::EventSourceMapping") {
        let declared = mapping["Properties"]["FilterCriteria"]["Filters"]
            .as_sequence()
            .unwrap_or_else(|| panic!("{name}: no filters"));
        for (i, filter) in declared.iter().enumerate() {
            let pattern = filter["Pattern"].as_str().expect("a filter's Pattern");
            let pattern = serde_json::from_str(pattern).unwrap_or_else(|e| panic!("{name}: {e}"));
            filters.push((format!("{name}-{i}"), pattern));
        }
    }
    filters
}

/// The patterns of the EventBridge rules on the agents bus (`AgentEventsBus`), by rule.
pub fn rule_patterns(template: &Yaml) -> Vec<(String, serde_json::Value)> {
    resources_of_type(template, "AWS::Events::Rule")
        .into_iter()
        .filter(|(_, rule)| !rule["Properties"]["EventPattern"].is_null())
        .filter(|(_, rule)| {
            reference(&rule["Properties"]["EventBusName"]) == Some("AgentEventsBus")
        })
        .map(|(name, rule)| {
            let pattern = serde_json::to_value(&rule["Properties"]["EventPattern"]).unwrap();
            (name.to_owned(), pattern)
        })
        .collect()
}

/// One rule's pattern as JSON, each `!GetAtt NAME.Arn` in it replaced by the ARN `arns` gives
/// NAME (any other short form, or a name `arns` lacks, fails the test).
pub fn rule_pattern(template: &Yaml, rule: &str, arns: &[(&str, &str)]) -> serde_json::Value {
    fn resolve(value: &Yaml, arns: &[(&str, &str)]) -> serde_json::Value {
        match value {
            Yaml::Tagged(_) => {
                let target = get_att(value).unwrap_or_else(|| panic!("not a !GetAtt: {value:?}"));
                let name = target.strip_suffix(".Arn").expect("a !GetAtt of an Arn");
                let (_, arn) = arns
                    .iter()
                    .find(|(n, _)| *n == name)
                    .expect("an ARN for it");
                serde_json::Value::String((*arn).to_owned())
            }
            Yaml::Sequence(list) => list.iter().map(|v| resolve(v, arns)).collect(),
            Yaml::Mapping(map) => map
                .iter()
                .map(|(k, v)| (k.as_str().unwrap().to_owned(), resolve(v, arns)))
                .collect(),
            plain => serde_json::to_value(plain).unwrap(),
        }
    }
    let pattern = &template["Resources"][rule]["Properties"]["EventPattern"];
    assert!(!pattern.is_null(), "{rule}: no pattern");
    resolve(pattern, arns)
}
