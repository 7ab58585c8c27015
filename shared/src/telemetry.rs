//! Structured logs: JSON in Lambda (`AWS_LAMBDA_LOG_FORMAT=JSON`, set by the template), plain
//! text in a terminal; level from `AWS_LAMBDA_LOG_LEVEL` or `RUST_LOG`.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned());
    let filter =
        EnvFilter::try_new(level.to_lowercase()).unwrap_or_else(|_| EnvFilter::new("info"));
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        // CloudWatch adds its own timestamp.
        .without_time();
    // try_init: a second call (tests) is harmless.
    let _ = if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
}
