//! Secret values as template.yaml protects them (contract section 10): the API functions can
//! make data keys and never decrypt one; the key rotates and outlives the stack.

use integration_tests::template::{function_grants, template};
use serde_yaml::Value as Yaml;

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

/// The roles the template declares for a data plane, the only holders of kms:Decrypt on the
/// secrets key: the ECS data plane's task role (with DataPlane=ecs-fargate; its statement's
/// key and encryption context: tests/tests/data_plane_template.rs). A data plane brought by
/// its operator (DataPlane=none) is granted Decrypt outside this stack (docs/secrets.md).
const DATA_PLANE_ROLES: &[&str] = &["DataPlaneTaskRole"];

/// Whether an IAM action pattern (`*` and `?` wildcards, any case) covers `action`.
fn covers(pattern: &str, action: &str) -> bool {
    fn matches(pattern: &[u8], text: &[u8]) -> bool {
        match (pattern.split_first(), text.split_first()) {
            (None, _) => text.is_empty(),
            (Some((b'*', rest)), _) => {
                matches(rest, text) || (!text.is_empty() && matches(pattern, &text[1..]))
            }
            (Some((&p, rest)), Some((&t, tail))) => (p == b'?' || p == t) && matches(rest, tail),
            (Some(_), None) => false,
        }
    }
    let (pattern, action) = (pattern.to_ascii_lowercase(), action.to_ascii_lowercase());
    matches(pattern.as_bytes(), action.as_bytes())
}

fn strings(value: &Yaml) -> Vec<&str> {
    match value {
        Yaml::String(one) => vec![one.as_str()],
        Yaml::Sequence(list) => list.iter().filter_map(Yaml::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether a policy statement allows kms:Decrypt (by `Action`, or by a `NotAction` that leaves
/// it out).
fn allows_decrypt(statement: &Yaml) -> bool {
    let decrypt = |patterns: &[&str]| patterns.iter().any(|p| covers(p, "kms:Decrypt"));
    statement["Effect"].as_str() == Some("Allow")
        && match &statement["NotAction"] {
            Yaml::Null => decrypt(&strings(&statement["Action"])),
            not => !decrypt(&strings(not)),
        }
}

/// Whether a key policy statement only hands the key to the account's IAM (its root), which
/// decides through the roles' own policies.
fn to_the_accounts_iam(statement: &Yaml) -> bool {
    let root = "arn:${AWS::Partition}:iam::${AWS::AccountId}:root";
    match &statement["Principal"]["AWS"] {
        Yaml::Tagged(sub) => sub.tag == "!Sub" && sub.value.as_str() == Some(root),
        _ => false,
    }
}

/// Every statement of every policy document under `value` (a role's inline policies, a
/// function's, a managed or standalone policy, a key policy; not a trust policy, which grants
/// nothing), and the SAM policy templates and managed policy ARNs it names.
fn policy_parts<'a>(value: &'a Yaml, statements: &mut Vec<&'a Yaml>, named: &mut Vec<String>) {
    match value {
        Yaml::Mapping(map) => {
            for (key, inner) in map {
                let key = key.as_str().unwrap_or_default();
                match key {
                    "AssumeRolePolicyDocument" => {}
                    "Statement" => statements.extend(inner.as_sequence().into_iter().flatten()),
                    "ManagedPolicyArns" => {
                        named.extend(strings(inner).iter().map(|s| s.to_string()))
                    }
                    _ if key.ends_with("Policy") && key.starts_with("KMS") => {
                        named.push(key.into())
                    }
                    _ => policy_parts(inner, statements, named),
                }
            }
        }
        Yaml::Sequence(list) => list.iter().for_each(|v| policy_parts(v, statements, named)),
        Yaml::Tagged(tagged) => policy_parts(&tagged.value, statements, named),
        _ => {}
    }
}

/// The resources of `template` that may decrypt with the secrets key: identity policies
/// allowing kms:Decrypt on any resource, SAM's KMS decrypt templates, and statements of the
/// secrets key's own policy allowing it to anyone but the account's IAM. Other keys' policies
/// govern those keys only.
fn decrypt_holders(template: &Yaml) -> Vec<String> {
    let mut holders = Vec::new();
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        let name = name.as_str().unwrap();
        let (mut statements, mut named) = (Vec::new(), Vec::new());
        policy_parts(&resource["Properties"], &mut statements, &mut named);
        let key_policy = resource["Type"].as_str() == Some("AWS::KMS::Key");
        let holds = match key_policy {
            true if name != "SecretsKey" => false,
            true => statements
                .iter()
                .any(|s| allows_decrypt(s) && !to_the_accounts_iam(s)),
            false => {
                statements.iter().any(|s| allows_decrypt(s))
                    || named.iter().any(|policy| {
                        let policy = policy.to_ascii_lowercase();
                        policy.contains("kmsdecrypt")
                            || policy.contains("administrator")
                            || policy.contains("poweruser")
                            || policy.contains("kms")
                    })
            }
        };
        if holds {
            holders.push(name.to_owned());
        }
    }
    holders
}

#[test]
fn only_a_data_plane_role_may_decrypt_a_secret_value_and_no_other_role_or_policy() {
    let template = template();
    assert_eq!(
        decrypt_holders(&template),
        DATA_PLANE_ROLES,
        "kms:Decrypt is the data plane's alone (contract section 10)"
    );
}

#[test]
fn the_decrypt_check_sees_every_kind_of_policy_the_template_can_hold() {
    let base = template();
    let holders = decrypt_holders(&base);
    // `template` with `value` (YAML) added at `path` (a list's items by index) and what the
    // check finds of it beyond the template's own holders.
    let added = |path: &[&str], value: &str| {
        let mut template = base.clone();
        let mut at = &mut template["Resources"];
        for step in path {
            at = match step.parse::<usize>() {
                Ok(index) => &mut at[index],
                Err(_) => &mut at[*step],
            };
        }
        let value: Yaml = serde_yaml::from_str(value).unwrap();
        match at {
            Yaml::Sequence(list) => list.push(value),
            slot => *slot = value,
        }
        let mut found = decrypt_holders(&template);
        found.retain(|holder| !holders.contains(holder));
        found
    };
    let role = "ApiGatewayLoggingRole";
    let inline = |action: &str| {
        format!(
            "[{{PolicyName: p, PolicyDocument: {{Statement: [{{Effect: Allow, {action}, Resource: '*'}}]}}}}]"
        )
    };
    // A role that is no function's, by name, by wildcard and by NotAction; not by a Deny.
    for (action, holds) in [
        ("Action: 'kms:Decrypt'", true),
        ("Action: 'kms:*crypt'", true),
        ("Action: ['kms:Encrypt', '*']", true),
        ("NotAction: 's3:*'", true),
        ("NotAction: 'kms:*'", false),
        ("Action: 'kms:GenerateDataKey'", false),
    ] {
        let found = added(&[role, "Properties", "Policies"], &inline(action));
        assert_eq!(found.len(), usize::from(holds), "{action}: {found:?}");
    }
    assert_eq!(
        added(
            &[role, "Properties", "ManagedPolicyArns"],
            "arn:aws:iam::aws:policy/AWSKeyManagementServicePowerUser"
        ),
        [role]
    );
    let standalone = "{Type: 'AWS::IAM::Policy', Properties: {PolicyName: p, Roles: [r], \
        PolicyDocument: {Statement: [{Effect: Allow, Action: 'kms:Decrypt', Resource: '*'}]}}}";
    assert_eq!(added(&["Standalone"], standalone), ["Standalone"]);
    // A function's own policy, and SAM's decrypt template.
    let function = ["GetSecretSetFunction", "Properties", "Policies"];
    assert_eq!(
        added(&function, "{KMSDecryptPolicy: {KeyId: k}}"),
        ["GetSecretSetFunction"]
    );
    let statement = [&function[..], &["0", "Statement"]].concat();
    let decrypt = "{Effect: Allow, Action: 'kms:Decrypt', Resource: '*'}";
    assert_eq!(added(&statement, decrypt), ["GetSecretSetFunction"]);
    // The secrets key's own policy handing Decrypt to anyone but the account's IAM.
    let key = ["SecretsKey", "Properties", "KeyPolicy", "Statement"];
    let to_a_service = "{Effect: Allow, Principal: {Service: 'lambda.amazonaws.com'}, \
        Action: 'kms:Decrypt', Resource: '*'}";
    assert_eq!(added(&key, to_a_service), ["SecretsKey"]);
}
