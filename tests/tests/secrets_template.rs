//! Secret values as template.yaml protects them (contract section 10): the API functions can
//! make data keys and never decrypt one; the key rotates and outlives the stack.

use integration_tests::template::{function_grants, template};

#[test]
fn no_function_may_decrypt_and_only_the_put_makes_data_keys() {
    let template = template();
    let functions = function_grants(&template);
    assert!(functions.len() >= 14, "{functions:?}");
    for (name, grants) in &functions {
        for action in grants.iter().flat_map(|grant| &grant.actions) {
            let kms = action.to_ascii_lowercase();
            assert!(
                !(kms == "kms:*" || kms.starts_with("kms:decrypt") || kms == "kms:reencryptfrom"),
                "{name} may {action}: the API never decrypts a secret value"
            );
            if kms.starts_with("kms:") {
                assert_eq!(
                    (*name, action.as_str()),
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
