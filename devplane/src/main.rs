//! dev-data-plane: see lib.rs. Started by `make run` and `make sam-local` (scripts/stack.sh).

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use dev_data_plane::cluster::{self, Scheduled};
use dev_data_plane::pipes::{self, Rule};
use dev_data_plane::stream::{self, BoxError, StreamReader};
use serde_json::Value;

/// How the stack names the functions its Invoke API serves.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Names {
    /// sam local start-lambda: the template's logical ids.
    Logical,
    /// cargo lambda watch: the binaries.
    Binary,
}

#[derive(Parser)]
#[command(
    name = "dev-data-plane",
    about = "A simulated data plane for local runs"
)]
struct Cli {
    #[arg(long, env = "DYNAMODB_ENDPOINT")]
    endpoint: String,
    #[arg(long, env = "AGENTS_TABLE", default_value = "agents")]
    agents_table: String,
    /// Lambda's Invoke API of the stack (cargo lambda watch's port, or sam's start-lambda).
    #[arg(long)]
    invoke_url: String,
    #[arg(long, value_enum)]
    function_names: Names,
    /// How long a requested deployment takes to be ready.
    #[arg(long, default_value_t = 2000)]
    ready_after_ms: u64,
    #[arg(long, default_value = "template.yaml")]
    template: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dev data plane: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), BoxError> {
    let (pipes, rules) = pipes::from_template(&std::fs::read_to_string(&cli.template)?)?;
    let streams = stream::LocalStreams::new(&cli.endpoint);
    let mut reader = loop {
        match StreamReader::open(streams.clone(), &cli.agents_table).await {
            Ok(reader) => break reader,
            Err(error) => {
                eprintln!(
                    "dev data plane: waiting for the {} table's stream ({error})",
                    cli.agents_table
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    };
    println!(
        "dev data plane (a simulation): {} pipes on {}'s stream, reports to {} after {} ms",
        pipes.len(),
        cli.agents_table,
        cli.invoke_url,
        cli.ready_after_ms
    );
    let http = reqwest::Client::new();
    let ready_after = Duration::from_millis(cli.ready_after_ms);
    loop {
        let records = match reader.poll().await {
            Ok(records) => records,
            Err(error) => {
                // The store restarting, say: the records are still there when it is back.
                eprintln!("dev data plane: reading the stream: {error}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        for record in records {
            for pipe in &pipes {
                let Some(event) = pipes::publish(pipe, &record)? else {
                    continue;
                };
                let detail = &event["detail"];
                println!(
                    "dev data plane: {} {}/{} deployment {}",
                    event["detail-type"].as_str().unwrap_or_default(),
                    detail["namespace"].as_str().unwrap_or_default(),
                    detail["agentName"].as_str().unwrap_or_default(),
                    detail["deploymentId"].as_str().unwrap_or_default()
                );
                for scheduled in cluster::respond(&event, ready_after) {
                    let (http, rules, url) = (http.clone(), rules.clone(), cli.invoke_url.clone());
                    let names = cli.function_names;
                    tokio::spawn(async move {
                        if let Err(error) = send(&http, &rules, &url, names, scheduled).await {
                            eprintln!("dev data plane: a report was not delivered: {error}");
                        }
                    });
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Puts a report on the (simulated) bus: each rule it matches invokes its function.
async fn send(
    http: &reqwest::Client,
    rules: &[Rule],
    invoke_url: &str,
    names: Names,
    mut scheduled: Scheduled,
) -> Result<(), BoxError> {
    tokio::time::sleep(scheduled.after).await;
    scheduled.report.observed_at = time::OffsetDateTime::now_utc();
    let event = cluster::report_event(&scheduled.report);
    for rule in rules {
        if !pipes::matches(&rule.pattern, &event)? {
            continue;
        }
        let function = match names {
            Names::Logical => &rule.function,
            Names::Binary => &rule.binary,
        };
        let response = http
            .post(format!(
                "{invoke_url}/2015-03-31/functions/{function}/invocations"
            ))
            .json(&event)
            .send()
            .await?;
        let status = response.status();
        let outcome: Value = response.json().await.unwrap_or(Value::Null);
        println!(
            "dev data plane: reported {:?} for {}/{} deployment {}: {status} {outcome}",
            scheduled.report.state,
            scheduled.report.namespace,
            scheduled.report.agent,
            scheduled.report.deployment_id
        );
    }
    Ok(())
}
