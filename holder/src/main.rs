//! The holder (src/lib.rs): serves `HOLDER_PORT` on every address of the replica's network
//! namespace to requests carrying `HOLDER_TOKEN` (required), and hands its one session to the
//! agent at `HOLDER_AGENT_ADDR` (127.0.0.1:8080 by default), checking it every
//! `HOLDER_CHECK_SECONDS` while it holds one (`HOLDER_CHECK_MISSES` unanswered end it). It
//! never exits by itself; SIGTERM (the replica's stop) exits 0 at once.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use std::time::Duration;

use agent_holder::{
    CHECK_MISSES_ENV, CHECK_SECONDS_ENV, Checks, DEFAULT_AGENT_ADDR, HOLDER_PORT, TOKEN_ENV, Token,
    server,
};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    logs();
    let agent = std::env::var("HOLDER_AGENT_ADDR").unwrap_or_else(|_| DEFAULT_AGENT_ADDR.into());
    let Ok(agent) = agent.parse::<SocketAddr>() else {
        tracing::error!(%agent, "HOLDER_AGENT_ADDR is not an address");
        return ExitCode::FAILURE;
    };
    let token = match std::env::var(TOKEN_ENV) {
        Ok(token) if !token.is_empty() => Token::new(token),
        _ => {
            tracing::error!("{TOKEN_ENV} is not set: the holder answers no one without it");
            return ExitCode::FAILURE;
        }
    };
    let Some(checks) = checks() else {
        tracing::error!("{CHECK_SECONDS_ENV} and {CHECK_MISSES_ENV} are whole positive numbers");
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
    tracing::info!(port = HOLDER_PORT, %agent, ?checks, "holder serving");
    tokio::select! {
        () = server::serve(listener, server::Holder::new(agent, token, checks)) => {}
        _ = terminate.recv() => tracing::info!("SIGTERM: the holder exits"),
    }
    ExitCode::SUCCESS
}

/// The checks of a busy agent, from the environment (the defaults for what it does not set).
fn checks() -> Option<Checks> {
    let number = |name: &str| match std::env::var(name) {
        Ok(text) => text.parse::<u32>().ok().filter(|n| *n > 0).map(Some),
        Err(_) => Some(None),
    };
    let defaults = Checks::default();
    Some(Checks {
        every: number(CHECK_SECONDS_ENV)?.map_or(defaults.every, |s| Duration::from_secs(s.into())),
        misses: number(CHECK_MISSES_ENV)?.unwrap_or(defaults.misses),
    })
}

/// JSON lines as the data plane and the functions write them (shared/src/telemetry.rs,
/// `json_lines`: the event's fields at the top, no target, no time: the log driver stamps each
/// line), at `RUST_LOG`'s levels, INFO for whatever it does not name.
fn logs() {
    let directives = std::env::var("RUST_LOG").unwrap_or_default();
    // An empty text parses as a directive that turns everything off.
    let targets: Targets = match directives.trim() {
        "" => Targets::new(),
        directives => directives.parse().unwrap_or_default(),
    };
    let targets = match targets.default_level() {
        Some(_) => targets,
        None => targets.with_default(LevelFilter::INFO),
    };
    let lines = tracing_subscriber::fmt::layer()
        .with_target(false)
        .without_time()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false);
    // try_init: a subscriber that cannot be installed is no reason not to serve.
    let _ = tracing_subscriber::registry()
        .with(targets)
        .with(lines)
        .try_init();
}
