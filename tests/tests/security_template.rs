//! template.yaml as a platform's security review reads it (docs/security.md): what checkov's
//! answered checks no longer watch is asserted here, so that a new resource cannot slip past.

use integration_tests::template::{
    function_grants, get_att, reference, resources_of_type, strings, sub, template,
};
use serde_yaml::Value as Yaml;

const PAGED_FUNCTIONS: [&str; 5] = [
    "AgentLogsFunction",
    "ListAgentsFunction",
    "ListDeploymentsFunction",
    "ListSecretSetsFunction",
    "ListSessionsFunction",
];

#[test]
fn no_secret_is_resolved_into_the_configuration_and_only_the_paged_functions_read_one() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    assert!(
        !text.contains("{{resolve:"),
        "a dynamic reference puts its value in the resource's configuration"
    );

    let template = template();
    for (name, grants) in function_grants(&template) {
        let readers: Vec<_> = grants
            .iter()
            .filter(|grant| {
                grant
                    .actions
                    .iter()
                    .any(|a| a.starts_with("secretsmanager:"))
            })
            .collect();
        if !PAGED_FUNCTIONS.contains(&name) {
            assert!(readers.is_empty(), "{name} may read secrets: {readers:?}");
            continue;
        }
        assert_eq!(readers.len(), 1, "{name}");
        assert_eq!(
            readers[0].actions,
            ["secretsmanager:GetSecretValue"],
            "{name}"
        );
        let resources: Vec<_> = readers[0].resources.iter().map(|r| reference(r)).collect();
        assert_eq!(resources, [Some("CursorSecret")], "{name}");
        let variables = &template["Resources"][name]["Properties"]["Environment"]["Variables"];
        assert_eq!(
            reference(&variables["CURSOR_SECRET_ID"]),
            Some("CursorSecret")
        );
    }
}

#[test]
fn every_queue_and_topic_is_encrypted_at_rest() {
    let template = template();
    let queues = resources_of_type(&template, "AWS::SQS::Queue");
    assert!(queues.len() >= 3);
    for (name, queue) in queues {
        let properties = &queue["Properties"];
        assert!(
            properties["SqsManagedSseEnabled"].as_bool() == Some(true)
                || !properties["KmsMasterKeyId"].is_null(),
            "{name} is not encrypted"
        );
    }
    let topics = resources_of_type(&template, "AWS::SNS::Topic");
    assert!(!topics.is_empty());
    for (name, topic) in topics {
        let key = reference(&topic["Properties"]["KmsMasterKeyId"])
            .unwrap_or_else(|| panic!("{name} has no key of the stack"));
        let key = &template["Resources"][key]["Properties"];
        assert_eq!(key["EnableKeyRotation"].as_bool(), Some(true), "{name}");
        let publishers: Vec<_> = key["KeyPolicy"]["Statement"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|statement| statement["Principal"]["Service"].as_str())
            .collect();
        assert_eq!(publishers, ["cloudwatch.amazonaws.com"], "{name}");
    }
}

#[test]
fn the_ingest_function_cannot_take_the_apis_concurrency() {
    let template = template();
    let ingest = &template["Resources"]["IngestLogsFunction"]["Properties"];
    let reserved = match &ingest["ReservedConcurrentExecutions"] {
        Yaml::Tagged(tagged) if tagged.tag == "!If" => tagged.value[1].clone(),
        other => panic!("not reserved from a parameter: {other:?}"),
    };
    assert_eq!(reference(&reserved), Some("IngestConcurrencyLimit"));
    let limit = &template["Parameters"]["IngestConcurrencyLimit"];
    assert!(limit["Default"].as_u64().unwrap() > 0);
    // Throttled batches wait in Lambda's queue of asynchronous events, then go to the failure
    // queue: none is dropped.
    let on_failure = &ingest["EventInvokeConfig"]["DestinationConfig"]["OnFailure"];
    assert_eq!(on_failure["Type"].as_str(), Some("SQS"));
}

#[test]
fn requests_are_traced_through_the_gateway_into_every_function() {
    let template = template();
    assert_eq!(
        template["Globals"]["Function"]["Tracing"].as_str(),
        Some("Active")
    );
    let api = &template["Resources"]["Api"]["Properties"];
    assert_eq!(api["TracingEnabled"].as_bool(), Some(true));
}

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

/// The console's files: a private bucket (no public access of any kind, no ACL, encrypted,
/// TLS only) that only this stack's distribution reads, through OAC, and only under console/.
#[test]
fn the_consoles_bucket_is_private_and_read_only_by_the_stacks_distribution() {
    let template = template();
    let bucket = &template["Resources"]["ConsoleBucket"]["Properties"];
    let block = &bucket["PublicAccessBlockConfiguration"];
    for setting in [
        "BlockPublicAcls",
        "BlockPublicPolicy",
        "IgnorePublicAcls",
        "RestrictPublicBuckets",
    ] {
        assert_eq!(block[setting].as_bool(), Some(true), "{setting}");
    }
    assert_eq!(
        bucket["OwnershipControls"]["Rules"][0]["ObjectOwnership"].as_str(),
        Some("BucketOwnerEnforced")
    );
    assert!(
        !bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
            ["ServerSideEncryptionByDefault"]["SSEAlgorithm"]
            .is_null()
    );
    // Website hosting would serve the files publicly, around OAC.
    assert!(bucket["WebsiteConfiguration"].is_null());

    let policy = &template["Resources"]["ConsoleBucketPolicy"]["Properties"];
    assert_eq!(reference(&policy["Bucket"]), Some("ConsoleBucket"));
    let statements = policy["PolicyDocument"]["Statement"].as_sequence().unwrap();
    let allows: Vec<_> = statements
        .iter()
        .filter(|s| s["Effect"].as_str() == Some("Allow"))
        .collect();
    assert_eq!(allows.len(), 1, "{allows:?}");
    let read = allows[0];
    assert_eq!(
        read["Principal"]["Service"].as_str(),
        Some("cloudfront.amazonaws.com")
    );
    assert_eq!(strings(&read["Action"]), ["s3:GetObject"]);
    assert_eq!(
        sub(&read["Resource"]),
        Some("${ConsoleBucket.Arn}/console/*")
    );
    let source = sub(&read["Condition"]["StringEquals"]["AWS:SourceArn"]).unwrap();
    assert!(
        source.ends_with(":distribution/${ConsoleDistribution}"),
        "{source}"
    );
    let tls_only = statements
        .iter()
        .find(|s| s["Effect"].as_str() == Some("Deny"))
        .expect("a TLS-only statement");
    assert_eq!(
        tls_only["Condition"]["Bool"]["aws:SecureTransport"].as_str(),
        Some("false")
    );

    let distribution = &template["Resources"]["ConsoleDistribution"]["Properties"];
    let origins = distribution["DistributionConfig"]["Origins"]
        .as_sequence()
        .unwrap();
    let console = origins
        .iter()
        .find(|o| get_att(&o["DomainName"]) == Some("ConsoleBucket.RegionalDomainName"))
        .expect("the bucket's origin");
    assert_eq!(
        get_att(&console["OriginAccessControlId"]),
        Some("ConsoleOriginAccessControl.Id")
    );
    // OAC, not the legacy origin access identity.
    assert_eq!(
        console["S3OriginConfig"]["OriginAccessIdentity"].as_str(),
        Some("")
    );
    let oac = &template["Resources"]["ConsoleOriginAccessControl"]["Properties"]["OriginAccessControlConfig"];
    assert_eq!(oac["SigningBehavior"].as_str(), Some("always"));
    assert_eq!(oac["SigningProtocol"].as_str(), Some("sigv4"));
}

/// The console's pages run only their own scripts and styles, send requests only to their own
/// origin and Cognito's, are never framed, and reach the viewer over HTTPS only.
#[test]
fn the_consoles_pages_are_sent_with_a_strict_content_security_policy() {
    let template = template();
    let headers = &template["Resources"]["ConsoleHeadersPolicy"]["Properties"]["ResponseHeadersPolicyConfig"]
        ["SecurityHeadersConfig"];
    let csp = sub(&headers["ContentSecurityPolicy"]["ContentSecurityPolicy"]).unwrap();
    let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self' https://cognito-idp.${AWS::Region}.amazonaws.com",
        "frame-ancestors 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "require-trusted-types-for 'script'",
    ] {
        assert!(directives.contains(&directive), "{directive}: {csp}");
    }
    assert!(!csp.contains("unsafe-"), "{csp}");
    assert!(!csp.contains('*'), "{csp}");
    assert!(!csp.contains("data:"), "{csp}");
    assert_eq!(
        headers["ContentSecurityPolicy"]["Override"].as_bool(),
        Some(true)
    );
    assert_eq!(
        headers["FrameOptions"]["FrameOption"].as_str(),
        Some("DENY")
    );
    assert_eq!(
        headers["ReferrerPolicy"]["ReferrerPolicy"].as_str(),
        Some("no-referrer")
    );
    assert!(headers["ContentTypeOptions"]["Override"].as_bool() == Some(true));
    assert!(
        headers["StrictTransportSecurity"]["AccessControlMaxAgeSec"]
            .as_u64()
            .unwrap()
            >= 31_536_000
    );

    let config = &template["Resources"]["ConsoleDistribution"]["Properties"]["DistributionConfig"];
    let console = &config["DefaultCacheBehavior"];
    assert_eq!(
        reference(&console["ResponseHeadersPolicyId"]),
        Some("ConsoleHeadersPolicy")
    );
    assert_eq!(
        console["ViewerProtocolPolicy"].as_str(),
        Some("redirect-to-https")
    );
    assert_eq!(
        get_att(&console["FunctionAssociations"][0]["FunctionARN"]),
        Some("ConsoleIndexFunction.FunctionMetadata.FunctionARN")
    );
}

/// The API through the console's origin: every method, never cached (each answer is one
/// account's), with the caller's Authorization passed on to the authorizer, over HTTPS to the
/// stage's regional address.
#[test]
fn the_consoles_origin_forwards_v1_to_the_api_uncached_with_the_callers_credential() {
    const CACHING_DISABLED: &str = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad";
    const ALL_VIEWER_EXCEPT_HOST_HEADER: &str = "b689b0a8-53d0-40ab-baf2-68738e2966ac";
    let template = template();
    let config = &template["Resources"]["ConsoleDistribution"]["Properties"]["DistributionConfig"];
    let behaviours = config["CacheBehaviors"].as_sequence().unwrap();
    let api = behaviours
        .iter()
        .find(|b| b["PathPattern"].as_str() == Some("/v1/*"))
        .expect("a /v1/* behaviour");
    assert_eq!(api["CachePolicyId"].as_str(), Some(CACHING_DISABLED));
    assert_eq!(
        api["OriginRequestPolicyId"].as_str(),
        Some(ALL_VIEWER_EXCEPT_HOST_HEADER)
    );
    assert_eq!(api["ViewerProtocolPolicy"].as_str(), Some("https-only"));
    let methods = strings(&api["AllowedMethods"]);
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"] {
        assert!(methods.iter().any(|m| m == method), "{method}");
    }
    let origin_id = api["TargetOriginId"].as_str().unwrap();
    let origin = config["Origins"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|o| o["Id"].as_str() == Some(origin_id))
        .unwrap();
    assert_eq!(
        sub(&origin["DomainName"]),
        Some("${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}")
    );
    assert_eq!(sub(&origin["OriginPath"]), Some("/${Stage}"));
    let custom = &origin["CustomOriginConfig"];
    assert_eq!(custom["OriginProtocolPolicy"].as_str(), Some("https-only"));
    assert_eq!(strings(&custom["OriginSSLProtocols"]), ["TLSv1.2"]);
    for output in ["ConsoleUrl", "ConsoleBucketName", "ConsoleDistributionId"] {
        assert!(
            !template["Outputs"][output]["Value"].is_null(),
            "output {output}"
        );
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
