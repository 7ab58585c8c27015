//! dev-gateway: the local gateway in front of cargo lambda watch (dev_data_plane::gateway).
//! Started by `make run` and the e2e watch stack (scripts/stack.sh).

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use dev_data_plane::gateway::proxy::Gateway;
use tokio::net::TcpListener;

#[derive(Parser)]
#[command(
    name = "dev-gateway",
    about = "The local gateway in front of cargo lambda watch"
)]
struct Cli {
    /// Where clients reach the API.
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: String,
    /// cargo lambda watch's address.
    #[arg(long)]
    upstream: String,
    #[arg(long, default_value = "template.yaml")]
    template: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    shared::telemetry::init();
    let cli = Cli::parse();
    let gateway = match std::fs::read_to_string(&cli.template)
        .map_err(|error| error.to_string())
        .and_then(|text| Gateway::new(&text, &cli.upstream).map_err(|error| error.to_string()))
    {
        Ok(gateway) => Arc::new(gateway),
        Err(error) => {
            tracing::error!(%error, template = cli.template, "no gateway");
            return ExitCode::FAILURE;
        }
    };
    let served = match TcpListener::bind(&cli.listen).await {
        Ok(listener) => gateway.serve(listener).await,
        Err(error) => Err(error),
    };
    if let Err(error) = served {
        tracing::error!(%error, listen = cli.listen, "the gateway stopped");
    }
    ExitCode::FAILURE
}
