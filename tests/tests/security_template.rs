//! template.yaml as a platform's security review reads it (docs/security.md): what checkov's
//! answered checks no longer watch is asserted here, so that a new resource cannot slip past.

use integration_tests::template::{function_grants, reference, resources_of_type, template};
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
