//! The data plane on AWS as template.yaml declares it (issue 33; docs/security.md): who may
//! decrypt and read secrets, what replicas can reach and hold, what the service is told, and
//! how its inbox is fed and watched. (That no other role or function may decrypt:
//! tests/tests/secrets_template.rs.)

use std::collections::BTreeSet;

use integration_tests::emulators::Moto;
use integration_tests::ruled_bus::RuledBus;
use integration_tests::template::{
    get_att, reference, role_statements, rule_pattern, rule_patterns, statement_resources, strings,
    sub, template,
};
use serde_json::json;
use serde_yaml::Value as Yaml;

/// Where the data plane writes each deployment's secrets and the replicas' execution role reads.
const SECRETS_PREFIX: &str = "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:agent-hosting/${AWS::StackName}/*";

/// The actions of a statement, lowercased.
fn actions(statement: &Yaml) -> Vec<String> {
    assert!(statement["NotAction"].is_null(), "NotAction: {statement:?}");
    strings(&statement["Action"])
        .iter()
        .map(|a| a.to_ascii_lowercase())
        .collect()
}

/// The statements of `role` that allow any action starting with `prefix` (`*` counts).
fn allowing<'a>(template: &'a Yaml, role: &str, prefix: &str) -> Vec<&'a Yaml> {
    role_statements(template, role)
        .into_iter()
        .filter(|s| {
            actions(s).iter().any(|a| {
                a == "*" || a.starts_with(prefix) || prefix.starts_with(a.trim_end_matches('*'))
            })
        })
        .collect()
}

#[test]
fn the_data_plane_decrypts_only_with_the_secrets_key_and_the_sets_binding() {
    let template = template();
    let decrypting = allowing(&template, "DataPlaneTaskRole", "kms:");
    assert_eq!(decrypting.len(), 1, "{decrypting:?}");
    let statement = decrypting[0];
    assert_eq!(actions(statement), ["kms:decrypt"]);
    let keys: Vec<_> = statement_resources(statement)
        .into_iter()
        .map(get_att)
        .collect();
    assert_eq!(keys, [Some("SecretsKey.Arn")]);
    // shared::secrets::seal::Binding::encryption_context: every key present, so a data key
    // sealed without the binding (or another key's ciphertext) is not this role's to open.
    let context = statement["Condition"]["StringLike"]
        .as_mapping()
        .expect("a StringLike condition on the encryption context");
    let names: BTreeSet<_> = context.keys().filter_map(Yaml::as_str).collect();
    let wanted = [
        "kms:EncryptionContext:namespace",
        "kms:EncryptionContext:secretKey",
        "kms:EncryptionContext:secretSet",
    ];
    assert_eq!(names, BTreeSet::from(wanted));
}

#[test]
fn the_replicas_execution_role_reads_only_the_stacks_secrets_and_holds_no_kms_action() {
    let template = template();
    let role = "ReplicaExecutionRole";
    assert!(
        allowing(&template, role, "kms:").is_empty(),
        "{role} may use KMS"
    );
    let readers = allowing(&template, role, "secretsmanager:");
    assert_eq!(readers.len(), 1, "{readers:?}");
    assert_eq!(actions(readers[0]), ["secretsmanager:getsecretvalue"]);
    let resources: Vec<_> = statement_resources(readers[0])
        .into_iter()
        .map(sub)
        .collect();
    assert_eq!(resources, [Some(SECRETS_PREFIX)]);
    // Nothing on every resource but the registry's login (ECR has no resource for it).
    for statement in role_statements(&template, role) {
        if statement_resources(statement)
            .iter()
            .any(|r| r.as_str() == Some("*"))
        {
            assert_eq!(actions(statement), ["ecr:getauthorizationtoken"]);
        }
    }
    // The prefix the data plane is told to write under is the one this role reads.
    let environment = service_environment(&template);
    let prefix = sub(&environment["REPLICA_SECRETS_PREFIX"]).unwrap();
    assert_eq!(
        SECRETS_PREFIX.split(":secret:").nth(1),
        Some(format!("{prefix}*").as_str())
    );
}

#[test]
fn replicas_have_no_task_role_the_data_plane_may_pass_only_their_execution_role() {
    let template = template();
    let passing = allowing(&template, "DataPlaneTaskRole", "iam:");
    assert_eq!(passing.len(), 1, "{passing:?}");
    assert_eq!(actions(passing[0]), ["iam:passrole"]);
    let roles: Vec<_> = statement_resources(passing[0])
        .into_iter()
        .map(get_att)
        .collect();
    assert_eq!(roles, [Some("ReplicaExecutionRole.Arn")]);
    let to = &passing[0]["Condition"]["StringEquals"]["iam:PassedToService"];
    assert_eq!(to.as_str(), Some("ecs-tasks.amazonaws.com"));
    // The one task role of the stack is the data plane's own; the service is told no role
    // for its replicas but the execution role.
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        let task_role = &resource["Properties"]["TaskRoleArn"];
        if !task_role.is_null() {
            assert_eq!(name.as_str(), Some("DataPlaneTaskDefinition"));
            assert_eq!(get_att(task_role), Some("DataPlaneTaskRole.Arn"));
        }
    }
    let roles: Vec<_> = service_environment(&template)
        .keys()
        .filter_map(Yaml::as_str)
        .filter(|name| name.contains("ROLE"))
        .map(str::to_owned)
        .collect();
    assert_eq!(roles, ["REPLICA_EXECUTION_ROLE_ARN"]);
}

#[test]
fn the_data_plane_runs_stops_and_lists_tasks_only_in_its_cluster() {
    let template = template();
    let mut seen = BTreeSet::new();
    for statement in allowing(&template, "DataPlaneTaskRole", "ecs:") {
        let acts = actions(statement);
        let definitions = [
            "ecs:registertaskdefinition",
            "ecs:describetaskdefinition",
            "ecs:deregistertaskdefinition",
            "ecs:listtaskdefinitions",
        ];
        let cluster = &statement["Condition"]["ArnEquals"]["ecs:cluster"];
        if acts.iter().all(|a| definitions.contains(&a.as_str())) {
            // No resource-level permission exists for these (docs/security.md).
        } else if acts == ["ecs:tagresource"] {
            let on = strings(&statement["Condition"]["StringEquals"]["ecs:CreateAction"]);
            assert_eq!(
                on,
                ["RunTask", "RegisterTaskDefinition"],
                "tags only at creation"
            );
        } else {
            assert_eq!(
                get_att(cluster),
                Some("DataPlaneCluster.Arn"),
                "{acts:?}: any cluster"
            );
        }
        seen.extend(acts);
    }
    for action in [
        "ecs:runtask",
        "ecs:stoptask",
        "ecs:describetasks",
        "ecs:listtasks",
    ] {
        assert!(seen.contains(action), "{action} not granted");
    }
    assert!(!seen.iter().any(|a| a.contains('*')), "{seen:?}");
}

/// The rules that let traffic into `group` (inline or standalone), and every rule anywhere
/// whose source is `group`.
fn ingress(template: &Yaml, group: &str) -> (Vec<Yaml>, Vec<String>) {
    let (mut into, mut from) = (Vec::new(), Vec::new());
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        let name = name.as_str().unwrap();
        let properties = &resource["Properties"];
        let rules: Vec<Yaml> = match resource["Type"].as_str() {
            Some("AWS::EC2::SecurityGroup") => properties["SecurityGroupIngress"]
                .as_sequence()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|mut rule| {
                    rule["GroupId"] = serde_yaml::from_str(&format!("!Ref {name}")).unwrap();
                    rule
                })
                .collect(),
            Some("AWS::EC2::SecurityGroupIngress") => vec![properties.clone()],
            _ => continue,
        };
        for rule in rules {
            let target = reference(&rule["GroupId"])
                .or_else(|| get_att(&rule["GroupId"]).and_then(|g| g.split('.').next()));
            if reference(&rule["SourceSecurityGroupId"]) == Some(group) {
                from.push(name.to_owned());
            }
            if target == Some(group) {
                into.push(rule);
            }
        }
    }
    (into, from)
}

#[test]
fn replicas_admit_only_the_data_plane_on_8080_and_18080_and_never_each_other() {
    let template = template();
    let (into, from) = ingress(&template, "ReplicaSecurityGroup");
    let mut ports = Vec::new();
    for rule in &into {
        assert_eq!(
            reference(&rule["SourceSecurityGroupId"]),
            Some("DataPlaneSecurityGroup"),
            "{rule:?}"
        );
        for open in [
            "CidrIp",
            "CidrIpv6",
            "SourcePrefixListId",
            "SourceSecurityGroupName",
        ] {
            assert!(rule[open].is_null(), "{open}: {rule:?}");
        }
        assert_eq!(rule["IpProtocol"].as_str(), Some("tcp"));
        assert_eq!(
            rule["FromPort"], rule["ToPort"],
            "one port a rule: {rule:?}"
        );
        ports.push(rule["FromPort"].as_u64().unwrap());
    }
    ports.sort();
    assert_eq!(ports, [8080, 18080]);
    // No rule takes traffic from a replica: not the replicas' own group (a task would reach
    // another, of any namespace), not the data plane's.
    assert!(from.is_empty(), "rules admitting replicas: {from:?}");
    let (into_data_plane, _) = ingress(&template, "DataPlaneSecurityGroup");
    assert!(into_data_plane.is_empty(), "{into_data_plane:?}");
}

/// Whether a resource belongs to the data plane: ECS, EC2, a task's role, or named so.
fn of_the_data_plane(name: &str, resource: &Yaml) -> bool {
    let kind = resource["Type"].as_str().unwrap_or_default();
    let trust = serde_yaml::to_string(&resource["Properties"]["AssumeRolePolicyDocument"]).unwrap();
    ["DataPlane", "Replica", "Holder"]
        .iter()
        .any(|p| name.starts_with(p))
        || kind.starts_with("AWS::ECS::")
        || kind.starts_with("AWS::EC2::")
        || trust.contains("ecs-tasks.amazonaws.com")
}

#[test]
fn every_data_plane_resource_and_output_exists_only_with_the_data_plane() {
    let template = template();
    match &template["Conditions"]["WithDataPlane"] {
        Yaml::Tagged(equals) if equals.tag == "!Equals" => {
            assert_eq!(reference(&equals.value[0]), Some("DataPlane"));
            assert_eq!(equals.value[1].as_str(), Some("ecs-fargate"));
        }
        other => panic!("WithDataPlane: {other:?}"),
    }
    let mut found = 0;
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        let name = name.as_str().unwrap();
        if of_the_data_plane(name, resource) {
            assert_eq!(
                resource["Condition"].as_str(),
                Some("WithDataPlane"),
                "{name}"
            );
            found += 1;
        }
    }
    assert!(found >= 20, "{found}");
    for (name, output) in template["Outputs"].as_mapping().unwrap() {
        if name.as_str().unwrap().starts_with("DataPlane") {
            assert_eq!(
                output["Condition"].as_str(),
                Some("WithDataPlane"),
                "{name:?}"
            );
        }
    }
    let allowed: Vec<_> = strings(&template["Parameters"]["DataPlane"]["AllowedValues"]);
    assert_eq!(allowed, ["ecs-fargate", "none"]);
}

/// The service container's environment, by name.
fn service_environment(template: &Yaml) -> serde_yaml::Mapping {
    let definition = &template["Resources"]["DataPlaneTaskDefinition"]["Properties"];
    let containers = definition["ContainerDefinitions"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    containers[0]["Environment"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|pair| (pair["Name"].clone(), pair["Value"].clone()))
        .collect()
}

#[test]
fn the_service_is_told_exactly_what_its_settings_read() {
    let template = template();
    let names: Vec<_> = service_environment(&template)
        .keys()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    // The brief's table (dataplane/src/service/settings.rs), less AWS_REGION, which ECS sets.
    let wanted = [
        "STACK_NAME",
        "AGENTS_TABLE",
        "DATA_PLANE_INBOX_URL",
        "EVENT_BUS_NAME",
        "INGEST_FUNCTION_ARN",
        "LOG_RETENTION_DAYS",
        "ECS_CLUSTER",
        "REPLICA_SUBNETS",
        "REPLICA_SECURITY_GROUP",
        "REPLICA_ASSIGN_PUBLIC_IP",
        "REPLICA_EXECUTION_ROLE_ARN",
        "HOLDER_IMAGE",
        "REPLICA_SECRETS_PREFIX",
        "REPLICA_LOG_GROUP",
        "PLATFORM_LOG_GROUP",
    ];
    assert_eq!(names, wanted);
    let environment = service_environment(&template);
    let by_ref = |name: &str| reference(&environment[name]).map(str::to_owned);
    assert_eq!(
        by_ref("DATA_PLANE_INBOX_URL").as_deref(),
        Some("DataPlaneInbox")
    );
    assert_eq!(
        by_ref("REPLICA_SECURITY_GROUP").as_deref(),
        Some("ReplicaSecurityGroup")
    );
    assert_eq!(
        by_ref("REPLICA_LOG_GROUP").as_deref(),
        Some("ReplicaLogGroup")
    );
    assert_eq!(
        by_ref("PLATFORM_LOG_GROUP").as_deref(),
        Some("HolderLogGroup")
    );
    // The staging group: a day, and outside section 5's /agent-hosting/* (whose groups the
    // ingest function's permission delivers from).
    let staging = &template["Resources"]["ReplicaLogGroup"]["Properties"];
    assert_eq!(staging["RetentionInDays"].as_u64(), Some(1));
    assert!(
        !sub(&staging["LogGroupName"])
            .unwrap()
            .starts_with("/agent-hosting/")
    );
}

#[test]
fn never_two_data_planes_at_once_and_a_stop_lets_hand_overs_finish() {
    let template = template();
    let service = &template["Resources"]["DataPlaneService"]["Properties"];
    assert_eq!(service["DesiredCount"].as_u64(), Some(1));
    let deployment = &service["DeploymentConfiguration"];
    assert_eq!(deployment["MaximumPercent"].as_u64(), Some(100));
    assert_eq!(deployment["MinimumHealthyPercent"].as_u64(), Some(0));
    assert_eq!(
        deployment["DeploymentCircuitBreaker"]["Rollback"].as_bool(),
        Some(true)
    );
    let container =
        &template["Resources"]["DataPlaneTaskDefinition"]["Properties"]["ContainerDefinitions"][0];
    assert_eq!(container["StopTimeout"].as_u64(), Some(120));
    assert_eq!(container["ReadonlyRootFilesystem"].as_bool(), Some(true));
}

#[test]
fn the_inbox_keeps_what_it_cannot_deliver_and_both_are_watched() {
    let template = template();
    let resources = &template["Resources"];
    let redrive = &resources["DataPlaneInbox"]["Properties"]["RedrivePolicy"];
    assert_eq!(redrive["maxReceiveCount"].as_u64(), Some(5));
    let failures = get_att(&redrive["deadLetterTargetArn"])
        .and_then(|arn| arn.strip_suffix(".Arn"))
        .expect("a failure queue of the stack");
    // Both rules keep what they could not deliver in the same failure queue.
    for rule in ["DataPlaneControlRule", "DataPlaneTaskStateRule"] {
        let target = &resources[rule]["Properties"]["Targets"][0];
        assert_eq!(
            get_att(&target["Arn"]),
            Some("DataPlaneInbox.Arn"),
            "{rule}"
        );
        let dead = get_att(&target["DeadLetterConfig"]["Arn"]);
        assert_eq!(dead, Some(format!("{failures}.Arn").as_str()), "{rule}");
    }
    // An alarm to the operators on each: the failure queue not empty; the inbox's oldest
    // event waiting (the data plane down or stuck).
    let watched = |queue: &str, metric: &str| {
        resources.as_mapping().unwrap().values().any(|alarm| {
            let p = &alarm["Properties"];
            alarm["Type"].as_str() == Some("AWS::CloudWatch::Alarm")
                && p["MetricName"].as_str() == Some(metric)
                && get_att(&p["Dimensions"][0]["Value"]) == Some(&format!("{queue}.QueueName"))
                && reference(&p["AlarmActions"][0]) == Some("OperatorAlarmsTopic")
        })
    };
    assert!(watched(failures, "ApproximateNumberOfMessagesVisible"));
    assert!(watched("DataPlaneInbox", "ApproximateAgeOfOldestMessage"));
}

#[tokio::test]
async fn the_inbox_hears_the_control_events_and_this_clusters_task_state_changes_only() {
    let template = template();
    let rules = &template["Resources"];
    assert_eq!(
        reference(&rules["DataPlaneControlRule"]["Properties"]["EventBusName"]),
        Some("AgentEventsBus")
    );
    // ECS publishes on the default bus.
    assert!(rules["DataPlaneTaskStateRule"]["Properties"]["EventBusName"].is_null());
    let cluster = "arn:aws:ecs:us-east-1:123456789012:cluster/agent-hosting-data-plane";
    let task_state = rule_pattern(
        &template,
        "DataPlaneTaskStateRule",
        &[("DataPlaneCluster", cluster)],
    );
    let control: Vec<_> = rule_patterns(&template)
        .into_iter()
        .filter(|(rule, _)| rule == "DataPlaneControlRule")
        .collect();
    assert_eq!(control.len(), 1);

    let moto = Moto::start();
    let agents = RuledBus::new(&moto, "agents", &control).await;
    let detail = json!({"namespace": "acme-1", "agent": "bot", "deploymentId": "d-1"});
    for (source, detail_type, heard) in [
        ("agent-hosting", "Deployment Requested", true),
        ("agent-hosting", "Agent Deleted", true),
        ("agent-hosting", "Session Requested", true),
        ("agent-hosting", "Session Stop Requested", true),
        // Its own reports, and the names from anyone else.
        ("agent-hosting.data-plane", "Deployment Status", false),
        ("agent-hosting.data-plane", "Session Status", false),
        ("someone-else", "Session Requested", false),
    ] {
        let reached = agents.reached(source, detail_type, &detail).await;
        assert_eq!(!reached.is_empty(), heard, "{source} {detail_type}");
    }

    let ecs = RuledBus::new(&moto, "default-bus", &[("TaskState".into(), task_state)]).await;
    let task = |cluster: &str| json!({"clusterArn": cluster, "lastStatus": "STOPPED", "stopCode": "EssentialContainerExited"});
    let other = "arn:aws:ecs:us-east-1:123456789012:cluster/someone-elses";
    for (source, detail_type, detail, heard) in [
        ("aws.ecs", "ECS Task State Change", task(cluster), true),
        ("aws.ecs", "ECS Task State Change", task(other), false),
        (
            "aws.ecs",
            "ECS Container Instance State Change",
            task(cluster),
            false,
        ),
        ("aws.ecs", "ECS Service Action", task(cluster), false),
        ("not-ecs", "ECS Task State Change", task(cluster), false),
    ] {
        let reached = ecs.reached(source, detail_type, &detail).await;
        assert_eq!(
            !reached.is_empty(),
            heard,
            "{source} {detail_type} {detail}"
        );
    }
}
