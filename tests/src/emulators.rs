//! Servers a test starts for itself, through scripts/local.sh (which installs them on first
//! use), and stops when dropped: moto's server for SQS, KMS and API Gateway, and a DynamoDB Local that keeps its data
//! on disk so that it can be killed and started again.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::bounded::{Bound, Try, until_blocking};
use crate::workspace;

fn local_sh(args: &[&str]) -> String {
    let output = Command::new(workspace().join("scripts/local.sh"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("scripts/local.sh {args:?}: {e}"));
    assert!(
        output.status.success(),
        "scripts/local.sh {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn kill(pid: &str, signal: &str) {
    let _ = Command::new("kill").args([signal, pid]).status();
}

/// moto's server on a free port.
pub struct Moto {
    pub endpoint: String,
    pid: String,
}

impl Moto {
    pub fn start() -> Self {
        let port = local_sh(&["free-port"]);
        let pid = local_sh(&["moto-start", &port]);
        Moto {
            endpoint: format!("http://127.0.0.1:{port}"),
            pid,
        }
    }

    /// An SQS client of the emulator (any credentials do).
    pub fn sqs(&self) -> aws_sdk_sqs::Client {
        let config = aws_sdk_sqs::config::Builder::new()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .region(aws_sdk_sqs::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                "local", "local", None, None, "moto",
            ))
            .endpoint_url(&self.endpoint)
            .http_client(shared::aws::http_client(shared::aws::Trust::System))
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }
}

impl Moto {
    /// An API Gateway (REST APIs, keys, usage plans) client of the emulator.
    pub fn apigateway(&self) -> aws_sdk_apigateway::Client {
        let config = aws_sdk_apigateway::config::Builder::new()
            .behavior_version(aws_sdk_apigateway::config::BehaviorVersion::latest())
            .region(aws_sdk_apigateway::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_apigateway::config::Credentials::new(
                "local", "local", None, None, "moto",
            ))
            .endpoint_url(&self.endpoint)
            .http_client(shared::aws::http_client(shared::aws::Trust::System))
            .build();
        aws_sdk_apigateway::Client::from_conf(config)
    }
}

impl Moto {
    /// A KMS client of the emulator, built as the functions build theirs.
    pub fn kms(&self) -> aws_sdk_kms::Client {
        shared::aws::kms_client(Some(&self.endpoint)).expect("a KMS client for moto")
    }

    /// A new symmetric KMS key of the emulator: its id.
    pub async fn kms_key(&self) -> String {
        let created = self
            .kms()
            .create_key()
            .send()
            .await
            .expect("CreateKey on moto");
        created.key_metadata.expect("key metadata").key_id
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        kill(&self.pid, "-TERM");
    }
}

/// A DynamoDB Local of the test's own, its data in a directory of its own.
pub struct DiskDynamoDb {
    pub endpoint: String,
    port: String,
    data_dir: PathBuf,
    pid: Option<String>,
}

impl DiskDynamoDb {
    pub fn start() -> Self {
        let port = local_sh(&["free-port"]);
        let data_dir =
            std::env::temp_dir().join(format!("dynamodb-{}", uuid::Uuid::new_v4().simple()));
        let mut db = DiskDynamoDb {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            data_dir,
            pid: None,
        };
        db.restart();
        db
    }

    /// Kills it at once (SIGKILL: no clean shutdown, as a crash).
    pub fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            kill(&pid, "-KILL");
            let address = format!("127.0.0.1:{}", self.port);
            let bound = Bound::new(600, Duration::from_secs(30));
            until_blocking("a killed DynamoDB Local's port to be free", bound, || {
                match std::net::TcpStream::connect(&address) {
                    Ok(_) => Try::Again {
                        why: format!("{address} still accepts"),
                        wait: Duration::from_millis(50),
                    },
                    Err(_) => Try::Done(()),
                }
            });
        }
    }

    /// Starts it (again) on the same port and data.
    pub fn restart(&mut self) {
        self.kill();
        let data_dir = self.data_dir.to_string_lossy().into_owned();
        self.pid = Some(local_sh(&["dynamodb-start", &self.port, &data_dir]));
    }
}

impl Drop for DiskDynamoDb {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}
