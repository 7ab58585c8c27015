//! A fake replica's stderr: the lines its agent writes, in the example agent's (the anchor's
//! loguru) format, kept in memory and followed until the replica is removed.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::stream::{self, BoxStream};
use time::OffsetDateTime;
use time::macros::format_description;
use tokio::sync::watch;

use crate::engine::{EngineError, LogLine, Output};
use crate::replica::EnvVar;
use crate::testing::FLOOD_PREFIX;

/// What the example agent leaves out of the names it logs (its STANDARD_VARIABLES).
const STANDARD_VARIABLES: [&str; 6] = [
    "PORT",
    "PATH",
    "HOME",
    "HOSTNAME",
    "PYTHONUNBUFFERED",
    "LC_CTYPE",
];

#[derive(Debug, Clone, Copy)]
pub(super) enum Level {
    Info,
    Warning,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "INFO",
            Level::Warning => "WARNING",
            Level::Error => "ERROR",
        }
    }
}

/// The padding after a flood line's number: lines of about 100 bytes.
const FLOOD_PAD: usize = 90;

pub(super) struct LogBook {
    lines: Mutex<Vec<LogLine>>,
    /// Bumped on each line; `true` once the replica is removed (the streams end).
    changed: watch::Sender<bool>,
}

impl Default for LogBook {
    fn default() -> Self {
        LogBook {
            lines: Mutex::new(Vec::new()),
            changed: watch::Sender::new(false),
        }
    }
}

impl LogBook {
    fn lines(&self) -> MutexGuard<'_, Vec<LogLine>> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One line as agent.py's `log` writes it, from its function `function`.
    pub(super) fn write(&self, function: &str, level: Level, session: Option<&str>, text: &str) {
        let at = OffsetDateTime::now_utc();
        let stamp = at
            .format(format_description!(
                "[year]-[month]-[day] [hour]:[minute]:[second].[subsecond digits:3]"
            ))
            .unwrap_or_default();
        let level = level.as_str();
        let session = session.unwrap_or("NONE");
        let line = LogLine {
            at,
            output: Output::Stderr,
            partial: false,
            text: format!("{stamp} | {level:<8} | agent:{function}:0 | {session} - {text}"),
        };
        self.lines().push(line);
        self.changed.send_modify(|_| {});
    }

    /// agent.py's flood: `count` numbered lines on stdout at once.
    pub(super) fn flood(&self, count: u64) {
        let pad = "x".repeat(FLOOD_PAD);
        let at = OffsetDateTime::now_utc();
        let flood = (0..count).map(|n| LogLine {
            at: at + time::Duration::nanoseconds(i64::try_from(n).unwrap_or(i64::MAX)),
            output: Output::Stdout,
            partial: false,
            text: format!("{FLOOD_PREFIX}{n:07} {pad}"),
        });
        self.lines().extend(flood);
        self.changed.send_modify(|_| {});
    }

    /// "starting" and the environment's names, as agent.py's `main` begins.
    pub(super) fn write_start(&self, env: &[EnvVar]) {
        self.write("main", Level::Info, None, "starting");
        self.write("main", Level::Info, None, &environment(env));
    }

    /// The replica is removed: its streams end after its last line.
    pub(super) fn close(&self) {
        self.changed.send_replace(true);
    }

    /// The lines from `since` (all when `None`), then each new one until the replica is removed.
    pub(super) fn follow(
        self: Arc<Self>,
        since: Option<OffsetDateTime>,
    ) -> BoxStream<'static, Result<LogLine, EngineError>> {
        let seen = self.changed.subscribe();
        Box::pin(stream::unfold(
            (self, seen, 0usize),
            move |(book, mut seen, mut next)| async move {
                loop {
                    let closed = *seen.borrow_and_update();
                    let line = {
                        let lines = book.lines();
                        let found = lines[next.min(lines.len())..]
                            .iter()
                            .position(|line| since.is_none_or(|since| line.at >= since));
                        let skipped = found.unwrap_or(lines.len().saturating_sub(next));
                        next += skipped;
                        found.map(|_| lines[next].clone())
                    };
                    if let Some(line) = line {
                        return Some((Ok(line), (book, seen, next + 1)));
                    }
                    if closed || seen.changed().await.is_err() {
                        return None;
                    }
                }
            },
        ))
    }
}

/// agent.py's `environment: A, B` line: the names (never the values) the platform gave.
pub(super) fn environment(env: &[EnvVar]) -> String {
    let mut names: Vec<&str> = env
        .iter()
        .map(|var| var.name.as_str())
        .filter(|name| !STANDARD_VARIABLES.contains(name) && !name.starts_with("EXAMPLE_"))
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        "environment: (none)".to_owned()
    } else {
        format!("environment: {}", names.join(", "))
    }
}
