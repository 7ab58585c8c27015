//! template.yaml's EventBridge rules, judged by EventBridge's own matching (moto's, through
//! integration_tests::ruled_bus), not by the data plane's matcher (devplane/src/rules.rs) that
//! runs them locally: each of the data plane's reports reaches its own status function, and
//! nothing the control plane publishes reaches either (its events reach the data plane's inbox).

use integration_tests::emulators::Moto;
use integration_tests::ruled_bus::RuledBus;
use integration_tests::template;
use serde_json::json;
use serde_yaml::Value as Yaml;

/// The function (or queue) a rule's first target names (`!GetAtt Function.Arn`).
fn target_function(template: &Yaml, rule: &str) -> String {
    let arn = &template["Resources"][rule]["Properties"]["Targets"][0]["Arn"];
    match arn {
        Yaml::Tagged(tagged) if tagged.tag == "!GetAtt" => {
            let target = tagged.value.as_str().unwrap();
            target.split('.').next().unwrap().to_owned()
        }
        other => panic!("{rule}: a target that is not !GetAtt: {other:?}"),
    }
}

#[tokio::test]
async fn each_data_plane_report_reaches_its_own_status_function_and_nothing_else_does() {
    let template = template::template();
    let rules = template::rule_patterns(&template);
    let moto = Moto::start();
    let bus = RuledBus::new(&moto, "agent-events", &rules).await;
    let detail = json!({"namespace": "acme-1", "agent": "bot", "deploymentId": "d-1"});

    let cases = [
        (
            "agent-hosting.data-plane",
            "Deployment Status",
            vec!["DeploymentStatusFunction"],
        ),
        (
            "agent-hosting.data-plane",
            "Session Status",
            vec!["SessionStatusFunction"],
        ),
        // The control plane's own events (contract section 7) are the data plane's to hear:
        // its inbox, no function.
        (
            "agent-hosting",
            "Deployment Requested",
            vec!["DataPlaneInbox"],
        ),
        ("agent-hosting", "Agent Deleted", vec!["DataPlaneInbox"]),
        ("agent-hosting", "Session Requested", vec!["DataPlaneInbox"]),
        (
            "agent-hosting",
            "Session Stop Requested",
            vec!["DataPlaneInbox"],
        ),
        // A report's name from anyone but the data plane is no report.
        ("agent-hosting", "Deployment Status", vec![]),
        ("someone-else", "Session Status", vec![]),
        ("agent-hosting.data-plane", "deployment status", vec![]),
    ];
    for (source, detail_type, expected) in cases {
        let reached: Vec<String> = bus
            .reached(source, detail_type, &detail)
            .await
            .iter()
            .map(|rule| target_function(&template, rule))
            .collect();
        assert_eq!(reached, expected, "{source} {detail_type}");
    }
}
