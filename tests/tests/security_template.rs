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
