//! The operator command on DynamoDB Local (`scripts/with-dynamodb.sh` gives its address): a
//! public key it issues starts sessions until the command revokes it, by the key itself or by
//! account and key id, and a revoked key is refused by the one check every route runs
//! (`shared::auth::authenticate`); the account's other keys are untouched.

use std::process::Command;

use shared::auth::{ApiKey, CallerKind, KeyKind, authenticate};
use shared::config::{DYNAMODB_ENDPOINT, TableNames};
use shared::store::dynamodb::DynamoStore;
use support::tables;

mod support;

/// `agent-hosting-admin ARGS` on `tables`: its stdout, once it succeeded.
fn admin(tables: &TableNames, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_agent-hosting-admin"))
        .args(["--agents-table", &tables.agents])
        .args(["--accounts-table", &tables.accounts])
        .args(["--logs-table", &tables.logs])
        .args(args)
        .output()
        .expect("the operator command runs");
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The key `issue-key` printed (its last line).
fn issued(stdout: &str) -> ApiKey {
    ApiKey::parse(stdout.lines().last().expect("a key").trim()).expect("a well-formed key")
}

/// Whether `key` passes the check every route runs, and as which kind.
async fn accepted(store: &DynamoStore, key: &ApiKey) -> Option<KeyKind> {
    let mut headers = http::HeaderMap::new();
    let bearer = format!("Bearer {}", key.expose());
    headers.insert("authorization", bearer.parse().unwrap());
    let caller = authenticate(&headers, store).await.unwrap();
    match caller?.kind {
        CallerKind::Key(kind) => Some(kind),
        CallerKind::Person { .. } => None,
    }
}

#[tokio::test]
async fn a_public_key_the_command_revokes_is_refused_and_the_accounts_other_keys_are_not() {
    let endpoint = std::env::var(DYNAMODB_ENDPOINT)
        .expect("DYNAMODB_ENDPOINT: run under scripts/with-dynamodb.sh");
    let tables = tables("admin");
    admin(&tables, &["create-tables"]);
    let issue = |kind: &'static str| {
        let args = ["issue-key", "acme", "--create-account", "--kind", kind];
        issued(&admin(&tables, &args))
    };
    let (leaked, listed, private) = (issue("public"), issue("public"), issue("private"));
    let client = shared::aws::dynamodb_client(Some(&endpoint)).unwrap();
    let store = DynamoStore::new(client, tables.clone());
    for (key, kind) in [(&leaked, KeyKind::Public), (&listed, KeyKind::Public)] {
        assert_eq!(
            accepted(&store, key).await,
            Some(kind),
            "issued and working"
        );
    }

    // By the key itself (one found leaked), then by account and key id.
    admin(&tables, &["revoke-key", "--key", leaked.expose()]);
    assert_eq!(accepted(&store, &leaked).await, None, "revoked by --key");
    assert_eq!(accepted(&store, &listed).await, Some(KeyKind::Public));
    let key_id = listed.hash().key_id().to_owned();
    admin(&tables, &["revoke-key", "acme", &key_id]);
    assert_eq!(accepted(&store, &listed).await, None, "revoked by its id");

    assert_eq!(accepted(&store, &private).await, Some(KeyKind::Private));
    let keys = admin(&tables, &["list-keys", "acme"]);
    let revoked: Vec<&str> = keys
        .lines()
        .filter(|line| line.contains("revoked"))
        .collect();
    assert_eq!(revoked.len(), 2, "{keys}");
    assert!(
        revoked.iter().all(|line| line.contains("\tpublic\t")),
        "{keys}"
    );
}
