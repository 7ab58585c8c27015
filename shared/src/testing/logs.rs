//! What a function logs, captured as the JSON lines it writes in Lambda
//! ([`crate::telemetry::json_lines`]): for tests of what the template's metric filters count.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tracing::subscriber::DefaultGuard;
use tracing_subscriber::layer::SubscriberExt;

/// Every event logged on this thread while it lives, each the JSON object Lambda would get.
pub struct Logs {
    written: Written,
    _guard: DefaultGuard,
}

#[derive(Clone, Default)]
struct Written(Arc<Mutex<Vec<u8>>>);

impl Write for Written {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    pub fn capture() -> Self {
        let written = Written::default();
        let writer = written.clone();
        let subscriber = tracing_subscriber::registry()
            .with(crate::telemetry::json_lines(move || writer.clone()));
        Logs {
            written,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    /// Each line written, parsed.
    pub fn all(&self) -> Vec<Value> {
        let written = self.written.0.lock().unwrap().clone();
        String::from_utf8_lossy(&written)
            .lines()
            .map(|line| serde_json::from_str(line).expect("a log line is JSON"))
            .collect()
    }

    /// The `message` of each line at `level`.
    pub fn at(&self, level: tracing::Level) -> Vec<String> {
        self.all()
            .into_iter()
            .filter(|line| line["level"] == level.as_str())
            .map(|line| line["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}
