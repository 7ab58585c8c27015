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
            "GatewayKeyNotRequestedMetricFilter",
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
/// or scan, no other table; and it may invoke the gateway-keys function, that one alone.
#[test]
fn the_sign_up_trigger_may_only_read_and_put_items_of_the_accounts_table() {
    let template = template();
    let (_, grants) = function_grants(&template)
        .into_iter()
        .find(|(name, _)| *name == "PeopleSignupFunction")
        .unwrap();
    assert_eq!(grants.len(), 2, "{grants:?}");
    let resources: Vec<_> = grants[0].resources.iter().map(|r| get_att(r)).collect();
    assert_eq!(resources, [Some("AccountsTable.Arn")]);
    assert_eq!(grants[0].actions, ["dynamodb:GetItem", "dynamodb:PutItem"]);
    assert_eq!(grants[1].actions, ["lambda:InvokeFunction"]);
    let resources: Vec<_> = grants[1].resources.iter().map(|r| sub(r)).collect();
    assert_eq!(
        resources,
        [Some(
            "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${AWS::StackName}-gateway-keys"
        )]
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

/// The gateway-keys function's literal name: the one the trigger's environment and policy use.
const GATEWAY_KEYS_FUNCTION_NAME: &str = "${AWS::StackName}-gateway-keys";

/// Self sign-up's gateway key (docs/people.md): the function that makes it exists only under
/// SelfSignUp, as everything of it does; the trigger names it by the same literal name it is
/// given (no reference: a cycle, below); it reads the stack's API, stage and default plan, as
/// the operator command does; a request it still fails on after Lambda's two retries lands in
/// an encrypted queue whose depth alarms; so does the trigger's failure to ask.
#[test]
fn the_gateway_keys_function_is_named_literally_exists_under_self_sign_up_and_alarms_on_failure() {
    let template = template();
    let resources = &template["Resources"];
    let function = &resources["GatewayKeysFunction"];
    assert_eq!(
        function["Metadata"]["BuildProperties"]["Binary"].as_str(),
        Some("gateway-keys")
    );
    let properties = &function["Properties"];
    assert_eq!(
        sub(&properties["FunctionName"]),
        Some(GATEWAY_KEYS_FUNCTION_NAME)
    );
    let trigger = &resources["PeopleSignupFunction"]["Properties"];
    assert_eq!(
        sub(&trigger["Environment"]["Variables"]["GATEWAY_KEYS_FUNCTION"]),
        Some(GATEWAY_KEYS_FUNCTION_NAME)
    );
    let variables = &properties["Environment"]["Variables"];
    assert_eq!(reference(&variables["REST_API_ID"]), Some("Api"));
    assert_eq!(reference(&variables["API_STAGE"]), Some("Api.Stage"));
    assert_eq!(
        reference(&variables["ACCOUNTS_USAGE_PLAN_ID"]),
        Some("AccountsUsagePlan")
    );

    let mut conditional = Vec::new();
    for (name, resource) in resources.as_mapping().unwrap() {
        let name = name.as_str().unwrap();
        let text = serde_yaml::to_string(resource).unwrap();
        // (GatewayKeyMissing* are the gateway's own, for every account.)
        let ours = ["GatewayKeys", "GatewayKeyNotRequested"];
        if ours.iter().any(|prefix| name.starts_with(prefix)) || text.contains("GatewayKeys") {
            assert_eq!(
                resource["Condition"].as_str(),
                Some("SelfSignUpOn"),
                "{name}"
            );
            conditional.push(name);
        }
    }
    conditional.sort_unstable();
    assert_eq!(
        conditional,
        [
            "GatewayKeyNotRequestedAlarm",
            "GatewayKeyNotRequestedMetricFilter",
            "GatewayKeysFailureQueue",
            "GatewayKeysFailuresAlarm",
            "GatewayKeysFunction",
            "GatewayKeysFunctionLogGroup",
        ]
    );
    assert_eq!(
        resources["GatewayKeysFunctionLogGroup"]["Properties"]["RetentionInDays"].as_u64(),
        Some(90)
    );

    let invoke = &properties["EventInvokeConfig"];
    assert_eq!(invoke["MaximumRetryAttempts"].as_u64(), Some(2));
    let failure = &invoke["DestinationConfig"]["OnFailure"];
    assert_eq!(failure["Type"].as_str(), Some("SQS"));
    assert_eq!(
        get_att(&failure["Destination"]),
        Some("GatewayKeysFailureQueue.Arn")
    );
    let queue = &resources["GatewayKeysFailureQueue"]["Properties"];
    assert_eq!(queue["SqsManagedSseEnabled"].as_bool(), Some(true));
    let alarm = &resources["GatewayKeysFailuresAlarm"]["Properties"];
    assert_eq!(
        alarm["MetricName"].as_str(),
        Some("ApproximateNumberOfMessagesVisible")
    );
    assert_eq!(
        get_att(&alarm["Dimensions"][0]["Value"]),
        Some("GatewayKeysFailureQueue.QueueName")
    );
    assert_eq!(alarm["Threshold"].as_u64(), Some(0));
    assert_eq!(
        reference(&alarm["AlarmActions"][0]),
        Some("OperatorAlarmsTopic")
    );

    // The trigger's log line when it could not ask: counted, and alarmed on.
    let filter = &resources["GatewayKeyNotRequestedMetricFilter"]["Properties"];
    assert_eq!(
        reference(&filter["LogGroupName"]),
        Some("PeopleSignupFunctionLogGroup")
    );
    assert_eq!(
        filter["FilterPattern"].as_str(),
        Some(format!("{{ $.message = \"{}\" }}", people_signup::KEY_NOT_REQUESTED).as_str())
    );
    let metric = filter["MetricTransformations"][0]["MetricName"].as_str();
    let alarm = &resources["GatewayKeyNotRequestedAlarm"]["Properties"];
    assert_eq!(alarm["MetricName"].as_str(), metric);
    assert_eq!(
        reference(&alarm["AlarmActions"][0]),
        Some("OperatorAlarmsTopic")
    );
}

/// The gateway-keys function may do what `Gateway::ensure_account` does and nothing more: find a
/// key by name and the plans it is in (GET), make a key and put it in the default plan (POST on
/// that plan's keys alone). No PATCH, DELETE or PUT; no other plan. (tests/tests/gateway_keys.rs
/// checks each request the function sends is one of these.)
#[test]
fn the_gateway_keys_function_may_only_find_and_make_keys_and_put_them_in_the_default_plan() {
    let template = template();
    let (_, grants) = function_grants(&template)
        .into_iter()
        .find(|(name, _)| *name == "GatewayKeysFunction")
        .unwrap();
    let grants: Vec<(Vec<String>, Vec<Option<&str>>)> = grants
        .iter()
        .map(|grant| {
            (
                grant.actions.clone(),
                grant.resources.iter().map(|r| sub(r)).collect(),
            )
        })
        .collect();
    assert_eq!(
        grants,
        [
            (
                vec!["apigateway:GET".to_owned()],
                vec![
                    Some("arn:${AWS::Partition}:apigateway:${AWS::Region}::/apikeys"),
                    Some("arn:${AWS::Partition}:apigateway:${AWS::Region}::/usageplans"),
                ]
            ),
            (
                vec!["apigateway:POST".to_owned()],
                vec![
                    Some("arn:${AWS::Partition}:apigateway:${AWS::Region}::/apikeys"),
                    Some(
                        "arn:${AWS::Partition}:apigateway:${AWS::Region}::/usageplans/${AccountsUsagePlan}/keys"
                    ),
                ]
            ),
        ]
    );
}

/// What each resource depends on: `!Ref`, `!GetAtt`, `${...}` of `!Sub`, `DependsOn`, and for a
/// function the Globals' environment it does not override (the PEOPLE_* variables name the pool).
fn dependencies(template: &Yaml) -> std::collections::BTreeMap<String, Vec<String>> {
    fn collect(value: &Yaml, into: &mut Vec<String>) {
        match value {
            Yaml::Tagged(tagged) => {
                let name: Option<Vec<String>> = if tagged.tag == "!Ref" || tagged.tag == "!GetAtt" {
                    tagged.value.as_str().map(|v| vec![v.to_owned()])
                } else if tagged.tag == "!Sub" {
                    tagged.value.as_str().map(|text| {
                        text.split("${")
                            .skip(1)
                            .filter_map(|part| part.split('}').next())
                            .map(str::to_owned)
                            .collect()
                    })
                } else {
                    None
                };
                for name in name.unwrap_or_default() {
                    into.push(name.split('.').next().unwrap().to_owned());
                }
                collect(&tagged.value, into);
            }
            Yaml::Sequence(list) => list.iter().for_each(|v| collect(v, into)),
            Yaml::Mapping(map) => map.values().for_each(|v| collect(v, into)),
            _ => {}
        }
    }
    let resources = template["Resources"].as_mapping().unwrap();
    let globals = template["Globals"]["Function"]["Environment"]["Variables"]
        .as_mapping()
        .unwrap();
    let mut graph = std::collections::BTreeMap::new();
    for (name, resource) in resources {
        let mut on = Vec::new();
        collect(resource, &mut on);
        on.extend(strings(&resource["DependsOn"]));
        if resource["Type"].as_str() == Some("AWS::Serverless::Function") {
            let own = &resource["Properties"]["Environment"]["Variables"];
            for (variable, value) in globals {
                if own[variable.as_str().unwrap()].is_null() {
                    collect(value, &mut on);
                }
            }
        }
        on.retain(|other| resources.contains_key(other.as_str()));
        graph.insert(name.as_str().unwrap().to_owned(), on);
    }
    graph
}

/// No resource depends on itself through others (CloudFormation refuses a cycle): in particular
/// pool -> trigger -> gateway-keys function -> API -> authorizer -> pool is broken by the
/// trigger naming the function by a literal name.
#[test]
fn the_trigger_names_the_gateway_keys_function_without_a_cycle() {
    let template = template();
    let graph = dependencies(&template);
    assert!(graph["PeoplePool"].contains(&"PeopleSignupFunction".to_owned()));
    assert!(graph["GatewayKeysFunction"].contains(&"Api".to_owned()));
    assert!(
        !graph["PeopleSignupFunction"].contains(&"GatewayKeysFunction".to_owned()),
        "the trigger names the function by a literal name"
    );
    fn visit<'a>(
        graph: &'a std::collections::BTreeMap<String, Vec<String>>,
        node: &'a str,
        path: &mut Vec<&'a str>,
        done: &mut std::collections::BTreeSet<&'a str>,
    ) {
        if done.contains(node) {
            return;
        }
        assert!(!path.contains(&node), "a cycle: {path:?} -> {node}");
        path.push(node);
        for next in &graph[node] {
            visit(graph, next, path, done);
        }
        path.pop();
        done.insert(node);
    }
    let mut done = std::collections::BTreeSet::new();
    for node in graph.keys() {
        visit(&graph, node, &mut Vec::new(), &mut done);
    }

    // The check sees the cycle a reference would make.
    let mut referenced = template.clone();
    referenced["Resources"]["PeopleSignupFunction"]["Properties"]["Environment"]["Variables"]["GATEWAY_KEYS_FUNCTION"] =
        serde_yaml::from_str("!Ref GatewayKeysFunction").unwrap();
    let graph = dependencies(&referenced);
    let cycle = std::panic::catch_unwind(|| {
        let mut done = std::collections::BTreeSet::new();
        visit(&graph, "PeoplePool", &mut Vec::new(), &mut done);
    });
    assert!(cycle.is_err(), "a !Ref of the function is a cycle");
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

/// The keys routes (docs/api.md, "Keys") read and write the accounts table only, with the
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
