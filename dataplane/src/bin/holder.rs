//! The holder (src/holder/): serves `HOLDER_PORT` on every address of the replica's network
//! namespace and hands its one session to the agent at `HOLDER_AGENT_ADDR` (127.0.0.1:8080 by
//! default). It never exits by itself; SIGTERM (the replica's stop) exits 0 at once.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use data_plane::holder::{DEFAULT_AGENT_ADDR, HOLDER_PORT, server};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    shared::telemetry::init();
    let agent = std::env::var("HOLDER_AGENT_ADDR").unwrap_or_else(|_| DEFAULT_AGENT_ADDR.into());
    let Ok(agent) = agent.parse::<SocketAddr>() else {
        tracing::error!(%agent, "HOLDER_AGENT_ADDR is not an address");
        return ExitCode::FAILURE;
    };
    let listener = match TcpListener::bind((Ipv4Addr::UNSPECIFIED, HOLDER_PORT)).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(port = HOLDER_PORT, %error, "binding the holder's port failed");
            return ExitCode::FAILURE;
        }
    };
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(terminate) => terminate,
        Err(error) => {
            tracing::error!(%error, "SIGTERM cannot be handled");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(port = HOLDER_PORT, %agent, "holder serving");
    tokio::select! {
        () = server::serve(listener, server::Holder::new(agent)) => {}
        _ = terminate.recv() => tracing::info!("SIGTERM: the holder exits"),
    }
    ExitCode::SUCCESS
}
