//! Structured logs: JSON in Lambda (`AWS_LAMBDA_LOG_FORMAT=JSON`, set by the template), plain
//! text in a terminal; level from `AWS_LAMBDA_LOG_LEVEL` or `RUST_LOG`.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub fn init() {
    let directives = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_default();
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let layer = tracing_subscriber::fmt::layer()
        .with_target(false)
        // CloudWatch adds its own timestamp.
        .without_time();
    let registry = tracing_subscriber::registry().with(filter(&directives));
    // try_init: a second call (tests) is harmless.
    let _ = if json {
        registry
            .with(
                layer
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false),
            )
            .try_init()
    } else {
        registry.with(layer.with_ansi(false)).try_init()
    };
}

/// A level (Lambda's `TRACE` to `FATAL`, any case) or `RUST_LOG`-style `target=level`
/// directives; INFO when empty or unreadable.
pub fn filter(directives: &str) -> Targets {
    let directives: Vec<&str> = directives
        .split(',')
        .map(str::trim)
        .filter(|directive| !directive.is_empty())
        // Lambda's advanced logging controls also offer FATAL, which tracing calls ERROR.
        .map(|directive| match directive.eq_ignore_ascii_case("fatal") {
            true => "error",
            false => directive,
        })
        .collect();
    let targets: Targets = match directives.is_empty() {
        true => Targets::new(),
        // LevelFilter parses levels in any case.
        false => directives.join(",").parse().unwrap_or_default(),
    };
    // Directives that name no level for everything else (or do not parse) leave it at INFO.
    match targets.default_level() {
        Some(_) => targets,
        None => targets.with_default(LevelFilter::INFO),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn lambda_levels_and_rust_log_directives() {
        let enabled = |directives: &str, target: &str, level: Level| {
            filter(directives).would_enable(target, &level)
        };
        assert!(enabled("", "create_agent", Level::INFO));
        assert!(!enabled("", "create_agent", Level::DEBUG));
        assert!(enabled("DEBUG", "aws_smithy_runtime", Level::DEBUG));
        assert!(!enabled("WARN", "create_agent", Level::INFO));
        assert!(enabled("FATAL", "create_agent", Level::ERROR));
        assert!(!enabled("FATAL", "create_agent", Level::WARN));
        assert!(enabled(
            "info,aws_smithy_runtime=trace",
            "aws_smithy_runtime",
            Level::TRACE
        ));
        assert!(!enabled(
            "info,aws_smithy_runtime=trace",
            "shared",
            Level::DEBUG
        ));
        assert!(enabled("not a level!", "create_agent", Level::INFO));
        assert!(!enabled("not a level!", "create_agent", Level::DEBUG));
    }
}
