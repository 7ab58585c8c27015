//! template.yaml's people (docs/people.md, contract section 13) as a security review reads it:
//! who may sign in and how, whose tokens the functions accept, what self sign-up's trigger and
//! the keys function may touch.

use integration_tests::template::{
    function_grants, get_att, reference, resources_of_type, strings, sub, template,
};
use serde_yaml::Value as Yaml;

/// People (contract section 13, docs/people.md): the operator invites them (no one signs up by
/// themselves unless the stack's SelfSignUp says so), with e-mail addresses as names, a password
/// policy, and TOTP as the one optional second factor; the pool outlives the stack, as the
/// tables do.
#[test]
fn people_are_invited_by_the_operator_with_strong_passwords_and_optional_totp() {
    let template = template();
    let pool = &template["Resources"]["PeoplePool"];
    assert_eq!(pool["Type"].as_str(), Some("AWS::Cognito::UserPool"));
    assert_eq!(pool["DeletionPolicy"].as_str(), Some("Retain"));
    let pool = &pool["Properties"];
    let (condition, on, off) = if_of(&pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"])
        .expect("AllowAdminCreateUserOnly: an !If of SelfSignUpOn");
    assert_eq!(
        (condition, on.as_bool(), off.as_bool()),
        ("SelfSignUpOn", Some(false), Some(true))
    );
    assert_eq!(strings(&pool["UsernameAttributes"]), ["email"]);
    assert_eq!(
        pool["UsernameConfiguration"]["CaseSensitive"].as_bool(),
        Some(false)
    );
    let password = &pool["Policies"]["PasswordPolicy"];
    assert!(password["MinimumLength"].as_u64().unwrap() >= 12);
    for rule in ["RequireUppercase", "RequireLowercase", "RequireNumbers"] {
        assert_eq!(password[rule].as_bool(), Some(true), "{rule}");
    }
    assert_eq!(pool["MfaConfiguration"].as_str(), Some("OPTIONAL"));
    assert_eq!(strings(&pool["EnabledMfas"]), ["SOFTWARE_TOKEN_MFA"]);
    assert_eq!(pool["DeletionProtection"].as_str(), Some("ACTIVE"));
}

/// The console's client lives in a browser: no secret, password sign-in and refresh only (no
/// flow that hands a token to an admin credential), access tokens of 15 minutes.
#[test]
fn the_consoles_client_has_no_secret_two_flows_and_short_lived_tokens() {
    let template = template();
    let client = &template["Resources"]["PeopleClient"];
    assert_eq!(
        client["Type"].as_str(),
        Some("AWS::Cognito::UserPoolClient")
    );
    let client = &client["Properties"];
    assert_eq!(reference(&client["UserPoolId"]), Some("PeoplePool"));
    assert_eq!(client["GenerateSecret"].as_bool(), Some(false));
    assert_eq!(
        strings(&client["ExplicitAuthFlows"]),
        ["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
    );
    assert_eq!(
        client["PreventUserExistenceErrors"].as_str(),
        Some("ENABLED")
    );
    assert_eq!(client["EnableTokenRevocation"].as_bool(), Some(true));
    let units = &client["TokenValidityUnits"];
    for (validity, unit, most) in [
        ("AccessTokenValidity", "AccessToken", 15),
        ("IdTokenValidity", "IdToken", 15),
    ] {
        assert_eq!(units[unit].as_str(), Some("minutes"), "{unit}");
        assert!(client[validity].as_u64().unwrap() <= most, "{validity}");
    }
    assert_eq!(units["RefreshToken"].as_str(), Some("hours"));
    assert!(client["RefreshTokenValidity"].as_u64().unwrap() <= 12);
}

/// Every function checks a person's token against this stack's pool and client (the
/// authorizer, and each function reached without it), and none points elsewhere.
#[test]
fn every_function_checks_tokens_of_the_stacks_own_pool_and_client() {
    let template = template();
    let people = &template["Globals"]["Function"]["Environment"]["Variables"];
    let issuer = sub(&people["PEOPLE_ISSUER"]).expect("PEOPLE_ISSUER: a !Sub");
    assert_eq!(
        issuer,
        "https://cognito-idp.${AWS::Region}.amazonaws.com/${PeoplePool}"
    );
    assert_eq!(
        sub(&people["PEOPLE_JWKS_URL"]),
        Some(format!("{issuer}/.well-known/jwks.json").as_str())
    );
    assert_eq!(reference(&people["PEOPLE_CLIENT_ID"]), Some("PeopleClient"));
    for (name, function) in resources_of_type(&template, "AWS::Serverless::Function") {
        let variables = &function["Properties"]["Environment"]["Variables"];
        for variable in ["PEOPLE_ISSUER", "PEOPLE_CLIENT_ID", "PEOPLE_JWKS_URL"] {
            // The pool's own trigger checks no token, and naming the pool would be a cycle.
            if name == "PeopleSignupFunction" {
                assert_eq!(variables[variable].as_str(), Some(""), "{name}: {variable}");
            } else {
                assert!(variables[variable].is_null(), "{name} overrides {variable}");
            }
        }
    }
    for output in ["PeoplePoolId", "PeopleClientId"] {
        assert!(
            !template["Outputs"][output]["Value"].is_null(),
            "output {output}"
        );
    }
}

/// A person is tied to an account by an item of the accounts table, which the authorizer
/// already reads: tokens add no permission to it (only outbound HTTPS to the pool's keys).
#[test]
fn the_authorizer_may_only_read_items_of_the_accounts_table() {
    assert_eq!(
        accounts_table_actions("AuthorizerFunction"),
        ["dynamodb:GetItem"]
    );
}

/// SelfSignUp (docs/people.md) is off unless the stack's parameter says "true"; then the pool lets
/// anyone sign up and calls its post-confirmation trigger, which gives each person an account.
#[test]
fn self_sign_up_is_off_by_default_and_on_calls_the_pools_trigger() {
    let template = template();
    let parameter = &template["Parameters"]["SelfSignUp"];
    assert_eq!(parameter["Default"].as_str(), Some("false"));
    assert_eq!(strings(&parameter["AllowedValues"]), ["true", "false"]);
    let condition = &template["Conditions"]["SelfSignUpOn"];
    let Yaml::Tagged(equals) = condition else {
        panic!("SelfSignUpOn: an !Equals, got {condition:?}")
    };
    assert_eq!(equals.tag, "!Equals");
    assert_eq!(reference(&equals.value[0]), Some("SelfSignUp"));
    assert_eq!(equals.value[1].as_str(), Some("true"));

    let pool = &template["Resources"]["PeoplePool"]["Properties"];
    let (condition, on, off) = if_of(&pool["LambdaConfig"]["PostConfirmation"])
        .expect("PostConfirmation: an !If of SelfSignUpOn");
    assert_eq!(condition, "SelfSignUpOn");
    assert_eq!(get_att(on), Some("PeopleSignupFunction.Arn"));
    assert_eq!(reference(off), Some("AWS::NoValue"));
    // What the console's config.json says (scripts/console.sh), so that it offers sign-up.
    assert_eq!(
        reference(&template["Outputs"]["SelfSignUp"]["Value"]),
        Some("SelfSignUp")
    );
}

/// The trigger, its log group and the pool's permission to invoke it exist only when SelfSignUp
/// is on (a stack without it has no function that makes accounts), and only this stack's pool,
/// in this account, may invoke it.
#[test]
fn the_sign_up_trigger_exists_only_under_self_sign_up_and_only_the_pool_invokes_it() {
    let template = template();
    let function = &template["Resources"]["PeopleSignupFunction"];
    assert_eq!(
        function["Metadata"]["BuildProperties"]["Binary"].as_str(),
        Some("people-signup")
    );
    let mut conditional = Vec::new();
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        let name = name.as_str().unwrap();
        let text = serde_yaml::to_string(resource).unwrap();
        if name == "PeoplePool" || !text.contains("PeopleSignupFunction") {
            continue;
        }
        assert_eq!(
            resource["Condition"].as_str(),
            Some("SelfSignUpOn"),
            "{name}"
        );
        conditional.push(name);
    }
    assert_eq!(function["Condition"].as_str(), Some("SelfSignUpOn"));
    conditional.sort_unstable();
    assert_eq!(
        conditional,
        [
            "PeopleSignupFunctionLogGroup",
            "PeopleSignupInvokePermission"
        ]
    );
    let log_group = &template["Resources"]["PeopleSignupFunctionLogGroup"]["Properties"];
    assert_eq!(log_group["RetentionInDays"].as_u64(), Some(90));

    let permission = &template["Resources"]["PeopleSignupInvokePermission"];
    assert_eq!(permission["Type"].as_str(), Some("AWS::Lambda::Permission"));
    let permission = &permission["Properties"];
    assert_eq!(
        get_att(&permission["FunctionName"]),
        Some("PeopleSignupFunction.Arn")
    );
    assert_eq!(permission["Action"].as_str(), Some("lambda:InvokeFunction"));
    assert_eq!(
        permission["Principal"].as_str(),
        Some("cognito-idp.amazonaws.com")
    );
    assert_eq!(get_att(&permission["SourceArn"]), Some("PeoplePool.Arn"));
    assert_eq!(
        reference(&permission["SourceAccount"]),
        Some("AWS::AccountId")
    );
}

/// The trigger reads and writes the accounts table only, with what making an account and tying
/// a person to it take (reads, and transactions of conditional puts): no update, delete, query
/// or scan, no other table.
#[test]
fn the_sign_up_trigger_may_only_read_and_put_items_of_the_accounts_table() {
    assert_eq!(
        accounts_table_actions("PeopleSignupFunction"),
        ["dynamodb:GetItem", "dynamodb:PutItem"]
    );
}

/// The actions of a function whose one statement is on the accounts table and nothing else.
fn accounts_table_actions(function: &str) -> Vec<String> {
    let template = template();
    let (_, mut grants) = function_grants(&template)
        .into_iter()
        .find(|(name, _)| *name == function)
        .expect(function);
    assert_eq!(grants.len(), 1, "{function}: {grants:?}");
    let grant = grants.remove(0);
    let resources: Vec<_> = grant.resources.iter().map(|r| get_att(r)).collect();
    assert_eq!(resources, [Some("AccountsTable.Arn")], "{function}");
    grant.actions
}

/// A CloudFormation `!If [CONDITION, WHEN_TRUE, WHEN_FALSE]`: its three parts.
fn if_of(value: &Yaml) -> Option<(&str, &Yaml, &Yaml)> {
    let Yaml::Tagged(tagged) = value else {
        return None;
    };
    match (tagged.tag == "!If", tagged.value.as_sequence()?.as_slice()) {
        (true, [condition, on, off]) => Some((condition.as_str()?, on, off)),
        _ => None,
    }
}

/// The keys routes (design console section 3) read and write the accounts table only, with the
/// four actions a list, an issue (a transaction of a put and the live-key count's update) and a
/// revocation need: no delete, no scan, no other table.
#[test]
fn the_keys_function_may_only_read_and_write_items_of_the_accounts_table() {
    assert_eq!(
        accounts_table_actions("KeysFunction"),
        [
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem"
        ]
    );
}
