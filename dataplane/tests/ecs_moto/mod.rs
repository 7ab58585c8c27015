//! moto's server of a test's own (scripts/local.sh), with what a stack gives the ECS engine:
//! a VPC, subnet, security group and cluster (scripts/moto-ecs-fixture.py).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use aws_sdk_ecs::config::{Credentials, Region, SharedCredentialsProvider};
use data_plane::ecs::{EcsClients, EcsConfig, EcsEngine};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(program: &PathBuf, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(workspace())
        .output()
        .unwrap_or_else(|err| panic!("{program:?} {args:?}: {err}"));
    assert!(
        output.status.success(),
        "{program:?} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// moto's server of the test's own, with the network and cluster a stack gives the engine.
pub struct Moto {
    endpoint: String,
    pid: String,
    subnet: String,
    security_group: String,
}

impl Moto {
    pub fn start() -> Self {
        let local_sh = workspace().join("scripts/local.sh");
        let port = run(&local_sh, &["free-port"]);
        let pid = run(&local_sh, &["moto-start", &port]);
        let endpoint = format!("http://127.0.0.1:{port}");
        let python = workspace().join(".local/moto-venv/bin/python");
        let fixture = workspace().join("scripts/moto-ecs-fixture.py");
        let fixture = run(
            &python,
            &[&fixture.to_string_lossy(), &endpoint, "agent-hosting"],
        );
        let fixture: serde_json::Value = serde_json::from_str(&fixture).unwrap();
        Moto {
            endpoint,
            pid,
            subnet: fixture["subnet"].as_str().unwrap().to_owned(),
            security_group: fixture["securityGroup"].as_str().unwrap().to_owned(),
        }
    }

    pub fn clients(&self) -> EcsClients {
        let config = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "local", "local", None, None, "moto",
            )))
            .endpoint_url(&self.endpoint)
            .http_client(shared::aws::http_client(shared::aws::Trust::System))
            .build();
        EcsClients::new(&config)
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

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.pid]).status();
    }
}
