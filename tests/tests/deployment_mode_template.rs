//! The engine template.yaml's functions name in every manifest they make (contract section 12:
//! `spec.deploymentMode` is `ecs-fargate` on AWS).

use integration_tests::template::{resources_of_type, template};

#[test]
fn every_function_of_the_deployed_stack_names_ecs_fargate_as_its_deployment_mode() {
    let template = template();
    let global = &template["Globals"]["Function"]["Environment"]["Variables"]["DEPLOYMENT_MODE"];
    let functions = resources_of_type(&template, "AWS::Serverless::Function");
    assert!(functions.len() >= 14, "{}", functions.len());
    for (name, function) in functions {
        let own = &function["Properties"]["Environment"]["Variables"]["DEPLOYMENT_MODE"];
        // SAM merges the global variables into each function's, its own value winning.
        let mode = if own.is_null() { global } else { own };
        assert_eq!(mode.as_str(), Some("ecs-fargate"), "{name}");
    }
}
