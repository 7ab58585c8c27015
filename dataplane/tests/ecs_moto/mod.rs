//! moto's server of a test's own (moto_server's start and SDK configuration), with what a stack
//! gives the ECS engine: a VPC, subnet, security group and cluster (scripts/moto-ecs-fixture.py).

// The ECS suites use a part of it (not the Lambda function the reports suite makes).
#[allow(dead_code)]
#[path = "../moto_server/mod.rs"]
mod moto_server;

use std::time::Duration;

use data_plane::ecs::{EcsClients, EcsConfig, EcsEngine};
use moto_server::MotoServer;

/// moto's server of the test's own, with the network and cluster a stack gives the engine;
/// stopped when dropped.
pub struct Moto {
    server: MotoServer,
    subnet: String,
    security_group: String,
}

impl Moto {
    pub fn start() -> Self {
        let server = MotoServer::start();
        let fixture = server.ecs_fixture("agent-hosting");
        Moto {
            server,
            subnet: fixture["subnet"].as_str().unwrap().to_owned(),
            security_group: fixture["securityGroup"].as_str().unwrap().to_owned(),
        }
    }

    pub fn clients(&self) -> EcsClients {
        EcsClients::new(&self.server.sdk_config())
    }

    pub fn config(&self) -> EcsConfig {
        EcsConfig {
            cluster: "agent-hosting".into(),
            subnets: vec![self.subnet.clone()],
            security_groups: vec![self.security_group.clone()],
            assign_public_ip: false,
            execution_role_arn: "arn:aws:iam::123456789012:role/agent-hosting-execution".into(),
            holder_image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/holder:abc".into(),
            secrets_prefix: "agent-hosting/test-stack/".into(),
            secrets_kms_key: None,
            region: "us-east-1".into(),
            platform_log_group: "/agent-hosting/platform/holders".into(),
            replica_log_group: "/agent-hosting-platform/stack/replicas".into(),
            poll: Duration::from_millis(50),
            start_timeout: Duration::from_secs(10),
        }
    }

    pub fn engine(&self) -> EcsEngine {
        EcsEngine::new(self.clients(), self.config())
    }
}
