//! agent-hosting-admin: the operator's command. Creates the tables on a local endpoint (from the
//! same definitions template.yaml is checked against), creates accounts, and issues, lists and
//! revokes API keys on any endpoint: DynamoDB Local or AWS (with the usual AWS credentials),
//! replays the ingest function's failure queue (replay.rs), and upgrades a store the first slice
//! wrote (`migrate-first-slice`). Given the stack's REST API, stage and default usage plan, it
//! also keeps each account's gateway key and limits (gateway.rs): made with the account, listed
//! with its keys, removed with it, changed by `set-limits` and `reset-limits`.
//!
//! Informational lines go to stderr; stdout carries only the result (for an issued key: the key
//! alone, on the last line), so scripts can capture it.

use std::process::ExitCode;

use agent_hosting_admin::accounts;
use agent_hosting_admin::error::AdminError;
use agent_hosting_admin::gateway::{AccountGateway, Gateway, Limits, Plan};
use agent_hosting_admin::people;
use clap::{Parser, Subcommand};
use shared::account::{self, AccountError, AccountStore};
use shared::auth::{ApiKey, KeyKind};
use shared::config::{
    ACCOUNTS_TABLE, ACCOUNTS_USAGE_PLAN_ID, AGENTS_TABLE, API_STAGE, APIGATEWAY_ENDPOINT,
    DYNAMODB_ENDPOINT, LOGS_TABLE, REST_API_ID, TableNames,
};
use shared::store::dynamodb::DynamoStore;
use shared::store::tables;

#[derive(Parser)]
#[command(name = "agent-hosting-admin", version, about)]
struct Cli {
    /// DynamoDB endpoint (DynamoDB Local); AWS's own endpoint when absent.
    #[arg(long, env = DYNAMODB_ENDPOINT, global = true)]
    endpoint: Option<String>,
    /// Name of the agents table (on AWS: the stack's AgentsTableName output).
    #[arg(long, env = AGENTS_TABLE, default_value = "agents", global = true)]
    agents_table: String,
    /// Name of the accounts table (on AWS: the stack's AccountsTableName output).
    #[arg(long, env = ACCOUNTS_TABLE, default_value = "accounts", global = true)]
    accounts_table: String,
    /// Name of the logs table (on AWS: the stack's LogsTableName output).
    #[arg(long, env = LOGS_TABLE, default_value = "logs", global = true)]
    logs_table: String,
    /// The stack's REST API (its RestApiId output): with --api-stage and --accounts-usage-plan,
    /// accounts get their gateway key and limits.
    #[arg(long, env = REST_API_ID, global = true)]
    rest_api_id: Option<String>,
    /// The REST API's stage (the stack's ApiStage output).
    #[arg(long, env = API_STAGE, global = true)]
    api_stage: Option<String>,
    /// The default per-account usage plan (the stack's AccountsUsagePlanId output).
    #[arg(long, env = ACCOUNTS_USAGE_PLAN_ID, global = true)]
    accounts_usage_plan: Option<String>,
    /// An API Gateway endpoint other than AWS's (an emulator).
    #[arg(long, env = APIGATEWAY_ENDPOINT, global = true)]
    apigateway_endpoint: Option<String>,
    /// The stack's user pool (its PeoplePoolId output), for the people commands.
    #[arg(long, env = "PEOPLE_POOL_ID", global = true)]
    people_pool_id: Option<String>,
    /// A Cognito endpoint other than AWS's (moto, locally).
    #[arg(long, env = "COGNITO_ENDPOINT", global = true)]
    cognito_endpoint: Option<String>,
    /// Change accounts on AWS without their gateway keys (their requests are refused at the
    /// gateway until `sync-gateway` runs).
    #[arg(long, global = true)]
    no_gateway: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create the tables on a local endpoint (on AWS, template.yaml creates them).
    CreateTables,
    /// Create an account with a new unique namespace (or show the existing one).
    CreateAccount {
        account: String,
        /// Use this namespace instead of a generated one (it must be free).
        #[arg(long)]
        namespace: Option<String>,
    },
    /// Issue a new API key for an account and print it (shown once; only its hash is stored).
    IssueKey {
        account: String,
        /// Create the account first when it does not exist.
        #[arg(long)]
        create_account: bool,
        /// With --create-account: the namespace of a new account.
        #[arg(long, requires = "create_account")]
        namespace: Option<String>,
        /// private (every route) or public (only session starts: a key to ship in a web or
        /// mobile client).
        #[arg(long, default_value = "private")]
        kind: KeyKind,
    },
    /// List an account's keys (ids and dates, never the keys), and its gateway key and limits.
    ListKeys { account: String },
    /// Give an account limits of its own at the gateway (requests a second, and at once).
    SetLimits {
        account: String,
        #[arg(long)]
        rate: u32,
        #[arg(long)]
        burst: u32,
    },
    /// Put an account back under the stack's default per-account limits.
    ResetLimits { account: String },
    /// Delete an account without agents: its keys, its gateway key and plan, the account (its
    /// namespace is never given to another account).
    DeleteAccount { account: String },
    /// Make the gateway key of every account that has none (after the REST API is first
    /// deployed, or after accounts were made with --no-gateway).
    SyncGateway,
    /// Revoke a key by account and key id, or by the key itself (--key).
    RevokeKey {
        #[arg(required_unless_present = "key")]
        account: Option<String>,
        #[arg(required_unless_present = "key")]
        key_id: Option<String>,
        /// The key itself, e.g. one found leaked.
        #[arg(long, conflicts_with_all = ["account", "key_id"])]
        key: Option<String>,
    },
    /// Invite a person to an account's console (docs/people.md): Cognito e-mails them a
    /// temporary password, or, with --password, sends nothing and sets that one. Prints
    /// "invited EMAIL to ACCOUNT (person SUB)".
    InvitePerson {
        account: String,
        email: String,
        /// Create the account first when it does not exist.
        #[arg(long)]
        create_account: bool,
        /// With --create-account: the namespace of a new account.
        #[arg(long, requires = "create_account")]
        namespace: Option<String>,
        /// Set this (permanent) password and send no e-mail: for local stacks and tests.
        #[arg(long)]
        password: Option<String>,
    },
    /// List an account's people: sub, e-mail, since when.
    ListPeople { account: String },
    /// Remove a person: their tokens are refused from then on (within 60 seconds on AWS), and
    /// their user is deleted from the pool.
    RemovePerson { email: String },
    /// Replay the ingest function's failure queue into the logs table: each batch stored is
    /// deleted from the queue; what cannot be replayed stays there and is listed.
    ReplayIngestFailures {
        /// The queue's URL (the stack's IngestLogsFailureQueueUrl output).
        queue_url: String,
        /// An SQS endpoint other than AWS's (an emulator).
        #[arg(long, env = "SQS_ENDPOINT")]
        sqs_endpoint: Option<String>,
        /// The stack's LogRetentionDays: replayed lines expire as ingested ones do.
        #[arg(long, env = shared::config::LOG_RETENTION_DAYS, default_value_t = shared::config::DEFAULT_LOG_RETENTION_DAYS)]
        retention_days: u32,
        /// Stop after this many messages.
        #[arg(long, default_value_t = 10_000)]
        max_messages: usize,
    },
    /// Upgrade the agents (and their log lines) of a store the first slice wrote, before agents
    /// had versions and a deployment history, to this version's layout; idempotent (docs/operations.md,
    /// Upgrading).
    MigrateFirstSlice,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), AdminError> {
    let gateway = gateway(&cli).await?;
    let without_gateway = cli.endpoint.is_some() || cli.no_gateway;
    let client = client(cli.endpoint.as_deref()).await?;
    let tables = TableNames {
        agents: cli.agents_table,
        accounts: cli.accounts_table,
        logs: cli.logs_table,
    };
    let store = DynamoStore::new(client.clone(), tables.clone());
    match cli.command {
        Command::CreateTables => {
            if cli.endpoint.is_none() {
                return Err(AdminError::Usage(
                    "create-tables is for a local endpoint (--endpoint or DYNAMODB_ENDPOINT); \
                     on AWS, deploy template.yaml",
                ));
            }
            for (name, created) in tables::create_all(&client, &tables).await? {
                eprintln!(
                    "table {name}: {}",
                    if created { "created" } else { "exists" }
                );
            }
        }
        Command::CreateAccount { account, namespace } => {
            let gateway = account_gateway(gateway.as_ref(), without_gateway)?;
            let account = ensured_account(&store, &account, namespace.as_deref()).await?;
            ensure_gateway_key(gateway, &account.account_id).await?;
            println!("{}", account.namespace);
        }
        Command::IssueKey {
            account,
            create_account,
            namespace,
            kind,
        } => {
            let gateway = account_gateway(gateway.as_ref(), without_gateway)?;
            if create_account {
                ensured_account(&store, &account, namespace.as_deref()).await?;
            }
            let (key, record) = account::issue_key(&store, &account, kind).await?;
            ensure_gateway_key(gateway, &account).await?;
            eprintln!(
                "issued {} key {} for account {} (namespace {}); it is shown once, store it now",
                kind.as_str(),
                record.key_id,
                record.account_id,
                record.namespace
            );
            println!("{}", key.expose());
        }
        Command::ListKeys { account } => {
            if let Some(gateway) = &gateway {
                println!("{}", describe(gateway.describe(&account).await?.as_ref()));
            }
            for key in store.list_keys(&account).await? {
                println!(
                    "{}\t{}\tcreated {}\t{}",
                    key.key_id,
                    key.kind.as_str(),
                    key.created_at,
                    key.revoked_at
                        .map_or("active".to_owned(), |at| format!("revoked {at}"))
                );
            }
        }
        Command::InvitePerson {
            account,
            email,
            create_account,
            namespace,
            password,
        } => {
            let pool = pool(&cli.people_pool_id, cli.cognito_endpoint.as_deref()).await?;
            let gateway = account_gateway(gateway.as_ref(), without_gateway)?;
            if create_account {
                ensured_account(&store, &account, namespace.as_deref()).await?;
                ensure_gateway_key(gateway, &account).await?;
            }
            let person =
                people::invite_person(&store, &pool, &account, &email, password.as_deref()).await?;
            println!(
                "invited {} to {} (person {})",
                person.email, person.account_id, person.person_id
            );
        }
        Command::ListPeople { account } => {
            for person in store.list_people(&account).await? {
                println!(
                    "{}\t{}\tsince {}",
                    person.person_id, person.email, person.created_at
                );
            }
        }
        Command::RemovePerson { email } => {
            let pool = pool(&cli.people_pool_id, cli.cognito_endpoint.as_deref()).await?;
            let person_id = people::remove_person(&store, &pool, &email).await?;
            println!("removed {email} (person {person_id})");
        }
        Command::RevokeKey {
            account,
            key_id,
            key,
        } => {
            match (key, account, key_id) {
                (Some(key), _, _) => {
                    account::revoke_key_text(&store, &ApiKey::parse(key.trim())?).await?;
                }
                (None, Some(account), Some(key_id)) => {
                    account::revoke_key(&store, &account, &key_id).await?;
                }
                _ => return Err(AdminError::Usage("give ACCOUNT KEY_ID or --key KEY")),
            }
            eprintln!("revoked; the gateway's authorizer cache forgets it within 60 seconds");
        }
        Command::SetLimits {
            account,
            rate,
            burst,
        } => {
            store
                .get_account(&account)
                .await?
                .ok_or_else(|| AccountError::NoAccount(account.clone()))?;
            let gateway = required(gateway)?;
            let state = gateway.set_limits(&account, Limits { rate, burst }).await?;
            println!("{}", describe(Some(&state)));
        }
        Command::ResetLimits { account } => {
            let state = required(gateway)?.reset_limits(&account).await?;
            println!("{}", describe(Some(&state)));
        }
        Command::DeleteAccount { account } => {
            let gateway = account_gateway(gateway.as_ref(), without_gateway)?;
            if accounts::delete_account(&store, gateway, &account).await? {
                println!("deleted account {account}");
            } else {
                println!("no account {account} (nor anything of it at the gateway)");
            }
        }
        Command::SyncGateway => {
            let gateway = required(gateway)?;
            for (account, state) in accounts::sync_gateway(&store, &gateway).await? {
                println!("{account}\t{}", describe(Some(&state)));
            }
        }
        Command::ReplayIngestFailures {
            queue_url,
            sqs_endpoint,
            retention_days,
            max_messages,
        } => {
            let sqs = sqs_client(sqs_endpoint.as_deref()).await;
            let report = agent_hosting_admin::replay::replay_ingest_failures(
                &sqs,
                &queue_url,
                &store,
                &store,
                retention_days,
                max_messages,
                300,
            )
            .await?;
            println!(
                "replayed {} batches: {} lines stored, {} dropped (unknown agent {}, unknown deployment {}, unrecognised source {}, bad line {}, duplicate {})",
                report.replayed,
                report.ingested.stored,
                report.ingested.dropped_unknown_agent
                    + report.ingested.dropped_unknown_deployment
                    + report.ingested.dropped_unrecognised_source
                    + report.ingested.dropped_bad_line
                    + report.ingested.dropped_duplicate,
                report.ingested.dropped_unknown_agent,
                report.ingested.dropped_unknown_deployment,
                report.ingested.dropped_unrecognised_source,
                report.ingested.dropped_bad_line,
                report.ingested.dropped_duplicate,
            );
            for (message_id, reason) in &report.not_replayed {
                println!("not replayed, left in the queue: {message_id}: {reason}");
            }
            if !report.not_replayed.is_empty() {
                return Err(AdminError::Incomplete(format!(
                    "{} messages could not be replayed",
                    report.not_replayed.len()
                )));
            }
        }
        Command::MigrateFirstSlice => {
            let report = store.migrate_first_slice().await?;
            for agent in &report.migrated {
                println!("migrated {agent}");
            }
            for (agent, why) in &report.refused {
                println!("not migrated, left as it was: {agent}: {why}");
            }
            println!(
                "{} agents migrated, {} log lines copied, {} left as they were",
                report.migrated.len(),
                report.lines_copied,
                report.refused.len()
            );
            if !report.refused.is_empty() {
                return Err(AdminError::Incomplete(format!(
                    "{} agents were not migrated",
                    report.refused.len()
                )));
            }
        }
    }
    Ok(())
}

/// The stack's gateway, when its three names are given.
async fn gateway(cli: &Cli) -> Result<Option<Gateway>, AdminError> {
    match (&cli.rest_api_id, &cli.api_stage, &cli.accounts_usage_plan) {
        (Some(api), Some(stage), Some(plan)) => {
            let config = operator_sdk_config().await;
            let mut apigateway = aws_sdk_apigateway::config::Builder::from(&config);
            if let Some(endpoint) = &cli.apigateway_endpoint {
                apigateway = apigateway.endpoint_url(endpoint);
            }
            Ok(Some(Gateway::new(
                aws_sdk_apigateway::Client::from_conf(apigateway.build()),
                api.clone(),
                stage.clone(),
                plan.clone(),
            )))
        }
        (None, None, None) => Ok(None),
        _ => Err(AdminError::Usage(
            "give all three of --rest-api-id, --api-stage and --accounts-usage-plan",
        )),
    }
}

fn required(gateway: Option<Gateway>) -> Result<Gateway, AdminError> {
    gateway.ok_or(AdminError::Usage(
        "this command needs the stack's gateway: --rest-api-id, --api-stage, \
         --accounts-usage-plan",
    ))
}

/// The gateway an account change is made at. On AWS (no DynamoDB endpoint) it must be given,
/// unless --no-gateway: an account without its gateway key is refused there. Locally (DynamoDB
/// Local, no gateway in front) there is none.
fn account_gateway(
    gateway: Option<&Gateway>,
    without_gateway: bool,
) -> Result<Option<&Gateway>, AdminError> {
    match gateway {
        None if !without_gateway => Err(AdminError::Usage(
            "on AWS, give the stack's gateway (--rest-api-id, --api-stage, --accounts-usage-plan \
             or REST_API_ID, API_STAGE, ACCOUNTS_USAGE_PLAN_ID from its outputs), or \
             --no-gateway",
        )),
        gateway => Ok(gateway),
    }
}

/// The account, made (with `namespace`, else a generated one) when absent; said on stderr.
async fn ensured_account(
    store: &DynamoStore,
    account_id: &str,
    namespace: Option<&str>,
) -> Result<account::Account, AdminError> {
    let account = account::ensure_account(store, account_id, namespace).await?;
    eprintln!(
        "account {} namespace {}",
        account.account_id, account.namespace
    );
    Ok(account)
}

async fn ensure_gateway_key(gateway: Option<&Gateway>, account: &str) -> Result<(), AdminError> {
    if let Some(gateway) = gateway {
        let state = gateway.ensure_account(account).await?;
        eprintln!("{}", describe(Some(&state)));
    }
    Ok(())
}

/// One line about an account's gateway key and limits.
fn describe(state: Option<&AccountGateway>) -> String {
    match state {
        None => "gateway: no key (agent-hosting-admin sync-gateway makes it)".to_owned(),
        Some(AccountGateway { key_id, plan: None }) => {
            format!("gateway key {key_id}: in no usage plan (sync-gateway puts it in the default)")
        }
        Some(AccountGateway {
            key_id,
            plan: Some(Plan::Default),
        }) => format!("gateway key {key_id}: default limits"),
        Some(AccountGateway {
            key_id,
            plan: Some(Plan::Own { plan_id, limits }),
        }) => format!(
            "gateway key {key_id}: own limits, rate {} burst {} (plan {plan_id})",
            limits.rate, limits.burst
        ),
    }
}

/// The SDK's default chains (the operator's profiles, assumed roles, exported credentials), with
/// the functions' HTTP client and time bounds.
async fn operator_sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(shared::aws::http_client(shared::aws::Trust::System))
        .retry_config(shared::aws::retry_config())
        .timeout_config(shared::aws::timeout_config())
        .load()
        .await
}

/// The stack's user pool through the SDK's default chains, or an emulator's endpoint.
async fn pool(
    pool_id: &Option<String>,
    endpoint: Option<&str>,
) -> Result<people::Pool, AdminError> {
    let pool_id = pool_id.clone().ok_or(AdminError::Usage(
        "give the stack's user pool: --people-pool-id or PEOPLE_POOL_ID (its PeoplePoolId output)",
    ))?;
    let config = operator_sdk_config().await;
    let mut cognito = aws_sdk_cognitoidentityprovider::config::Builder::from(&config);
    if let Some(endpoint) = endpoint {
        cognito = cognito.endpoint_url(endpoint);
    }
    Ok(people::Pool::new(
        aws_sdk_cognitoidentityprovider::Client::from_conf(cognito.build()),
        pool_id,
    ))
}

/// SQS through the SDK's default chains, or an emulator's endpoint.
async fn sqs_client(endpoint: Option<&str>) -> aws_sdk_sqs::Client {
    let config = operator_sdk_config().await;
    let mut sqs = aws_sdk_sqs::config::Builder::from(&config);
    if let Some(endpoint) = endpoint {
        sqs = sqs.endpoint_url(endpoint);
    }
    aws_sdk_sqs::Client::from_conf(sqs.build())
}

/// DynamoDB Local through the functions' own client; AWS through the SDK's default chains, so
/// the operator's profiles, assumed roles and exported credentials all work. (SSO and
/// credential_process profiles are not built in, to keep them out of the functions' binaries:
/// `eval "$(aws configure export-credentials --profile NAME --format env)"` first.)
async fn client(endpoint: Option<&str>) -> Result<aws_sdk_dynamodb::Client, AdminError> {
    if endpoint.is_some() {
        return Ok(shared::aws::dynamodb_client(endpoint)?);
    }
    Ok(aws_sdk_dynamodb::Client::new(&operator_sdk_config().await))
}
