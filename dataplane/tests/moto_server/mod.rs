//! moto's server of a test's own (scripts/local.sh), the one way every suite starts it (the
//! ECS suites through ecs_moto, which adds the stack's network and cluster), and the SDKs'
//! configuration for it. Its Docker is pointed nowhere: a Lambda function moto would run (a log
//! group's subscription delivering lines) then fails at once, and moto goes on; its ECS runs no
//! container anyway.

use std::path::PathBuf;
use std::process::Command;

use aws_config::SdkConfig;
use aws_sdk_sqs::config::{Credentials, Region, SharedCredentialsProvider};
use aws_sdk_sqs::types::QueueAttributeName;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(command: &mut Command) -> String {
    let output = command
        .current_dir(workspace())
        .output()
        .unwrap_or_else(|err| panic!("{command:?}: {err}"));
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// moto's server, stopped when dropped.
pub struct MotoServer {
    endpoint: String,
    pid: String,
}

impl MotoServer {
    pub fn start() -> Self {
        let local_sh = workspace().join("scripts/local.sh");
        let port = run(Command::new(&local_sh).arg("free-port"));
        let pid = run(Command::new(&local_sh)
            .args(["moto-start", &port])
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock"));
        MotoServer {
            endpoint: format!("http://127.0.0.1:{port}"),
            pid,
        }
    }

    /// The SDKs' configuration for this server.
    pub fn sdk_config(&self) -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "local", "local", None, None, "moto",
            )))
            .endpoint_url(&self.endpoint)
            .http_client(shared::aws::http_client(shared::aws::Trust::System))
            .build()
    }

    /// Runs `script` with moto's Python (boto3 at hand), the endpoint as `sys.argv[1]`; what
    /// it printed. For what the data plane never calls (IAM, Lambda).
    pub fn python(&self, script: &str) -> String {
        let python = workspace().join(".local/moto-venv/bin/python");
        run(Command::new(python).args(["-c", script, &self.endpoint]))
    }

    /// What a stack gives the ECS engine (scripts/moto-ecs-fixture.py: a VPC, a subnet, the
    /// tasks' security group, `cluster`; tasks kept RUNNING until stopped): its JSON.
    #[allow(dead_code)] // the ECS suites use it, the reports suite does not
    pub fn ecs_fixture(&self, cluster: &str) -> serde_json::Value {
        let python = workspace().join(".local/moto-venv/bin/python");
        let fixture = workspace().join("scripts/moto-ecs-fixture.py");
        let printed = run(Command::new(python)
            .arg(fixture)
            .args([&self.endpoint, cluster]));
        serde_json::from_str(&printed).unwrap()
    }

    /// The server's endpoint (what a process is given as `AWS_ENDPOINT_URL`).
    #[allow(dead_code)] // the service binary's suite uses it
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A Lambda function (a role and an empty zip; moto never runs it), its ARN.
    pub fn lambda_function(&self, name: &str) -> String {
        self.python(&format!(
            r#"
import boto3, io, sys, zipfile
kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1",
          aws_access_key_id="local", aws_secret_access_key="local")
zipped = io.BytesIO()
with zipfile.ZipFile(zipped, "w") as z:
    z.writestr("bootstrap", "")
role = boto3.client("iam", **kw).create_role(
    RoleName="{name}-role", AssumeRolePolicyDocument="{{}}")["Role"]["Arn"]
function = boto3.client("lambda", **kw).create_function(
    FunctionName="{name}", Runtime="provided.al2023", Role=role, Handler="bootstrap",
    Code={{"ZipFile": zipped.getvalue()}})
print(function["FunctionArn"])
"#
        ))
    }

    /// The queue's messages, visible or being handled.
    // The inbox's and the binary's suites count queues; the others that include this module do not.
    #[allow(dead_code)]
    pub async fn messages_in(sqs: &aws_sdk_sqs::Client, queue_url: &str) -> usize {
        let attributes = sqs
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap_or_default();
        attributes
            .values()
            .map(|count| count.parse::<usize>().unwrap())
            .sum()
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.pid]).status();
    }
}
