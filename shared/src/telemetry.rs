//! Structured logs: JSON in Lambda (`AWS_LAMBDA_LOG_FORMAT=JSON`, set by the template), plain
//! text in a terminal; level from `AWS_LAMBDA_LOG_LEVEL` or `RUST_LOG`.

use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{FilterFn, LevelFilter, Targets, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub fn init() {
    init_as(std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json")));
}

/// [`init`] for a process that is not a function (the data plane's service): JSON when `json`.
pub fn init_as(json: bool) {
    let directives = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_default();
    let registry = tracing_subscriber::registry().with(filters(&directives));
    // try_init: a second call (tests) is harmless.
    let _ = if json {
        registry.with(json_lines(std::io::stdout)).try_init()
    } else {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_target(false)
                    .without_time()
                    .with_ansi(false),
            )
            .try_init()
    };
}

/// The lines a function writes in Lambda, to `writer`: one JSON object an event, its fields at
/// the top (`$.message`, `$.level`: what the template's metric filters read), with its current
/// span; no target, and no time (CloudWatch adds its own).
pub fn json_lines<S, W>(writer: W) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt::layer()
        .with_target(false)
        .without_time()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
        .with_writer(writer)
}

/// What a function logs: [`filter`] of `directives`, and never lambda_runtime's raw events ([`without_raw_events`]).
pub fn filters<S: tracing::Subscriber>(directives: &str) -> impl Layer<S> {
    filter(directives).and_then(without_raw_events())
}

/// lambda_runtime logs each event it receives at TRACE, raw: a request's body (a secret value
/// being set) and its headers (the caller's key). No level or directive turns that on.
pub fn without_raw_events() -> FilterFn {
    filter_fn(|metadata| {
        !(metadata.target().starts_with("lambda_runtime") && *metadata.level() == Level::TRACE)
    })
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
    use std::sync::{Arc, Mutex};

    /// What the functions' subscriber at `directives` writes of `emit`.
    fn written(directives: &str, emit: impl FnOnce()) -> String {
        let captured = Arc::new(Mutex::new(Vec::new()));
        let sink = captured.clone();
        let writer = move || Sink(sink.clone());
        let subscriber = tracing_subscriber::registry()
            .with(filters(directives))
            .with(tracing_subscriber::fmt::layer().with_writer(writer));
        tracing::subscriber::with_default(subscriber, emit);
        String::from_utf8(captured.lock().unwrap().clone()).unwrap()
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_runtimes_raw_event_is_never_logged_at_any_level() {
        for directives in [
            "TRACE",
            "trace,lambda_runtime=trace",
            "trace,lambda_runtime::layers=trace",
        ] {
            let logs = written(directives, || {
                // As lambda_runtime 1.5 logs each invocation (layers/api_response.rs).
                tracing::trace!(
                    target: "lambda_runtime::layers::api_response",
                    body = r#"{"body":"{\"secretValue\":\"sk-planted\"}"}"#,
                    "raw JSON event received from Lambda"
                );
                tracing::debug!(target: "lambda_runtime::runtime", "kept");
                tracing::trace!(target: "aws_smithy_runtime", "kept too");
            });
            assert!(!logs.contains("sk-planted"), "{directives}: {logs}");
            assert!(logs.contains("kept too"), "{directives}: {logs}");
        }
    }

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
