//! dev-gateway: the local gateway in front of cargo lambda watch (dev_data_plane::gateway).
//! Started by `make run` and the e2e watch stack (scripts/stack.sh).

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use dev_data_plane::gateway::console::Console;
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
    /// The console's built files (console/dist), served under /console/.
    #[arg(long, requires = "console_config")]
    console: Option<std::path::PathBuf>,
    /// The console's config.json, served as /console/config.json.
    #[arg(long, requires = "console")]
    console_config: Option<std::path::PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    shared::telemetry::init();
    let cli = Cli::parse();
    let gateway = match std::fs::read_to_string(&cli.template)
        .map_err(|error| error.to_string())
        .and_then(|text| Gateway::new(&text, &cli.upstream).map_err(|error| error.to_string()))
    {
        Ok(gateway) => gateway,
        Err(error) => {
            tracing::error!(%error, template = cli.template, "no gateway");
            return ExitCode::FAILURE;
        }
    };
    let gateway = match (&cli.console, &cli.console_config) {
        (Some(dir), Some(config)) => match Console::new(dir, config) {
            Ok(console) => gateway.with_console(console),
            Err(error) => {
                tracing::error!(%error, console = %dir.display(), config = %config.display(), "no console");
                return ExitCode::FAILURE;
            }
        },
        _ => gateway,
    };
    let gateway = Arc::new(gateway);
    let served = match TcpListener::bind(&cli.listen).await {
        Ok(listener) => gateway.serve(listener).await,
        Err(error) => Err(error),
    };
    if let Err(error) = served {
        tracing::error!(%error, listen = cli.listen, "the gateway stopped");
    }
    ExitCode::FAILURE
}
