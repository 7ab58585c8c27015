//! The operator's people commands on DynamoDB Local (`scripts/with-dynamodb.sh`) and a moto of
//! their own (Cognito user pools): a person invited to an account is tied to it and signs in
//! with the password given; one account's person cannot be invited to another (nor their
//! password changed); a password the pool's policy refuses leaves no user behind; a removed
//! person is in neither the account nor the pool.

use std::process::{Command, Output};

use shared::config::TableNames;
use support::tables;

mod support;

/// moto's server on a free port, stopped when dropped.
struct Moto {
    pid: String,
    endpoint: String,
}

impl Moto {
    fn start() -> Self {
        let local = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/local.sh");
        let port = run(Command::new(local).arg("free-port"));
        let pid = run(Command::new(local).args(["moto-start", port.trim()]));
        Moto {
            pid: pid.trim().to_owned(),
            endpoint: format!("http://127.0.0.1:{}", port.trim()),
        }
    }

    /// One call of its Cognito user pools (JSON protocol), the answer as JSON; null when
    /// Cognito refused it.
    fn cognito(&self, action: &str, body: serde_json::Value) -> serde_json::Value {
        let answer = Command::new("curl")
            .args([
            "-sf",
            &format!("{}/", self.endpoint),
            "-H",
            &format!("X-Amz-Target: AWSCognitoIdentityProviderService.{action}"),
            "-H",
            "Content-Type: application/x-amz-json-1.1",
            "-H",
            "Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/cognito-idp/aws4_request, SignedHeaders=host, Signature=0",
            "-d",
            &body.to_string(),
            ])
            .output()
            .expect("curl runs");
        serde_json::from_slice(&answer.stdout).unwrap_or(serde_json::Value::Null)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(&self.pid).status();
    }
}

fn run(command: &mut Command) -> String {
    let output = command.output().expect("runs");
    assert!(output.status.success(), "{command:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// `agent-hosting-admin ARGS` on `tables` and the pool.
fn admin(tables: &TableNames, moto: &Moto, pool: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agent-hosting-admin"))
        .args(["--agents-table", &tables.agents])
        .args(["--accounts-table", &tables.accounts])
        .args(["--logs-table", &tables.logs])
        .env("COGNITO_ENDPOINT", &moto.endpoint)
        .env("PEOPLE_POOL_ID", pool)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .args(args)
        .output()
        .expect("the operator command runs")
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_person_invited_belongs_to_one_account_signs_in_and_is_removed_from_both() {
    std::env::var(shared::config::DYNAMODB_ENDPOINT)
        .expect("DYNAMODB_ENDPOINT: run under scripts/with-dynamodb.sh");
    let moto = Moto::start();
    let pool = moto.cognito(
        "CreateUserPool",
        serde_json::json!({"PoolName": "people-test", "UsernameAttributes": ["email"],
            "Policies": {"PasswordPolicy": {"MinimumLength": 12, "RequireUppercase": true,
                "RequireLowercase": true, "RequireNumbers": true, "RequireSymbols": false}}}),
    )["UserPool"]["Id"]
        .as_str()
        .unwrap()
        .to_owned();
    let client = moto.cognito(
        "CreateUserPoolClient",
        serde_json::json!({"UserPoolId": pool, "ClientName": "console",
            "ExplicitAuthFlows": ["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]}),
    )["UserPoolClient"]["ClientId"]
        .as_str()
        .unwrap()
        .to_owned();
    let signs_in = |email: &str, password: &str| {
        let answer = moto.cognito(
            "InitiateAuth",
            serde_json::json!({"ClientId": client, "AuthFlow": "USER_PASSWORD_AUTH",
                "AuthParameters": {"USERNAME": email, "PASSWORD": password}}),
        );
        answer["AuthenticationResult"]["AccessToken"].is_string()
    };
    let tables = tables("people");
    let admin = |args: &[&str]| admin(&tables, &moto, &pool, args);
    ok(admin(&["create-tables"]));

    let password = "Correct-Horse-9";
    let invited = ok(admin(&[
        "invite-person",
        "acme",
        "ada@example.test",
        "--create-account",
        "--password",
        password,
    ]));
    let sub = invited
        .trim()
        .strip_prefix("invited ada@example.test to acme (person ")
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{invited}"))
        .to_owned();
    assert!(signs_in("ada@example.test", password));
    // Again: nothing changes.
    assert_eq!(
        ok(admin(&["invite-person", "acme", "ada@example.test"])),
        invited
    );
    let listed = ok(admin(&["list-people", "acme"]));
    assert!(listed.starts_with(&format!("{sub}\tada@example.test\tsince ")));

    // Another account cannot take her, nor change her password.
    ok(admin(&["create-account", "globex"]));
    let refused = admin(&[
        "invite-person",
        "globex",
        "ada@example.test",
        "--password",
        "Another-Pass-77",
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a person belongs to one account"));
    assert!(signs_in("ada@example.test", password));
    assert_eq!(ok(admin(&["list-people", "globex"])), "");

    // A password the policy refuses: no user is left behind, no person.
    let weak = admin(&[
        "invite-person",
        "acme",
        "bob@example.test",
        "--password",
        "short",
    ]);
    assert!(!weak.status.success());
    assert!(String::from_utf8_lossy(&weak.stderr).contains("InvalidPasswordException"));
    assert!(
        moto.cognito(
            "AdminGetUser",
            serde_json::json!({"UserPoolId": pool, "Username": "bob@example.test"})
        )
        .is_null()
    );
    assert_eq!(ok(admin(&["list-people", "acme"])), listed);

    // Removed: from the account, then from the pool.
    assert_eq!(
        ok(admin(&["remove-person", "ada@example.test"])).trim(),
        format!("removed ada@example.test (person {sub})")
    );
    assert_eq!(ok(admin(&["list-people", "acme"])), "");
    assert!(!signs_in("ada@example.test", password));
    assert!(
        !admin(&["remove-person", "ada@example.test"])
            .status
            .success()
    );
}
