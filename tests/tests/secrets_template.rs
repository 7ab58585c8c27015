//! Secret values as template.yaml protects them (contract section 10): the API functions can
//! make data keys and never decrypt one; the key rotates and outlives the stack.

use serde_yaml::Value as Yaml;

fn template() -> Yaml {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every action a function's inline policies allow, by function.
fn function_actions(template: &Yaml) -> Vec<(String, Vec<String>)> {
    let resources = template["Resources"].as_mapping().unwrap();
    let mut functions = Vec::new();
    for (name, resource) in resources {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let mut actions = Vec::new();
        for policy in resource["Properties"]["Policies"]
            .as_sequence()
            .into_iter()
            .flatten()
        {
            for statement in policy["Statement"].as_sequence().into_iter().flatten() {
                match &statement["Action"] {
                    Yaml::String(action) => actions.push(action.clone()),
                    Yaml::Sequence(list) => {
                        actions.extend(list.iter().filter_map(|a| a.as_str().map(str::to_owned)))
                    }
                    _ => {}
                }
            }
            if let Some(template_policy) = policy.as_mapping().and_then(|m| m.keys().next()) {
                // SAM policy templates (e.g. KMSDecryptPolicy) grant actions by name.
                let name = template_policy.as_str().unwrap_or_default();
                assert!(
                    name == "Statement" || !name.starts_with("KMS"),
                    "{name}: a SAM KMS policy template"
                );
            }
        }
        functions.push((name.as_str().unwrap().to_owned(), actions));
    }
    functions
}

#[test]
fn no_function_may_decrypt_and_only_the_put_makes_data_keys() {
    let template = template();
    let functions = function_actions(&template);
    assert!(functions.len() >= 14, "{functions:?}");
    for (name, actions) in &functions {
        for action in actions {
            let kms = action.to_ascii_lowercase();
            assert!(
                !(kms == "kms:*" || kms.starts_with("kms:decrypt") || kms == "kms:reencryptfrom"),
                "{name} may {action}: the API never decrypts a secret value"
            );
            if kms.starts_with("kms:") {
                assert_eq!(
                    (name.as_str(), action.as_str()),
                    ("PutSecretSetFunction", "kms:GenerateDataKey"),
                    "only the PUT makes data keys"
                );
            }
        }
    }
}

#[test]
fn the_secrets_key_rotates_and_is_kept_when_the_stack_goes() {
    let template = template();
    let key = &template["Resources"]["SecretsKey"];
    assert_eq!(key["Type"].as_str(), Some("AWS::KMS::Key"));
    assert_eq!(key["Properties"]["EnableKeyRotation"].as_bool(), Some(true));
    assert_eq!(key["DeletionPolicy"].as_str(), Some("Retain"));
    assert_eq!(key["UpdateReplacePolicy"].as_str(), Some("Retain"));
}
