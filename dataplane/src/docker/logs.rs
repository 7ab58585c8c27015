//! A replica's lines from the Docker Engine, with the engine's timestamps: one frame per line
//! the json-file driver kept (`<RFC 3339 nanos> <text>`), a line over 16 KiB split over frames
//! that do not end in a newline. Followed until the container stops or is removed.

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptions;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::error;
use super::readers::Reading;
use crate::engine::{EngineError, LogLine, Output};
use crate::replica::ReplicaId;

/// The lines of `replica` from `since` (all when `None`), following; `reading` stays open
/// until the stream is dropped.
pub fn follow(
    docker: &Docker,
    replica: &ReplicaId,
    since: Option<OffsetDateTime>,
    reading: Reading,
) -> BoxStream<'static, Result<LogLine, EngineError>> {
    let options = LogsOptions {
        follow: true,
        stdout: true,
        stderr: true,
        timestamps: true,
        // The Engine takes whole seconds here: the lines of that second before `since` are
        // dropped below.
        since: since.map_or(0, |at| {
            i32::try_from(at.unix_timestamp()).unwrap_or(i32::MAX)
        }),
        ..Default::default()
    };
    let replica = replica.clone();
    docker
        .logs(&replica.0, Some(options))
        .filter_map(move |frame| {
            let _open = &reading;
            let line = match frame {
                Ok(frame) => line(frame)
                    .filter(|line| since.is_none_or(|since| line.at >= since))
                    .map(Ok),
                Err(err) => Some(Err(error::failure(err).about(&replica))),
            };
            async move { line }
        })
        .boxed()
}

/// The line of one frame; `None` for input echoed back (never asked for).
fn line(frame: LogOutput) -> Option<LogLine> {
    let output = match frame {
        LogOutput::StdOut { .. } | LogOutput::Console { .. } => Output::Stdout,
        LogOutput::StdErr { .. } => Output::Stderr,
        LogOutput::StdIn { .. } => return None,
    };
    let bytes = frame.into_bytes();
    let (at, text) = timestamped(&bytes);
    let partial = !text.ends_with(b"\n");
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    Some(LogLine {
        at,
        output,
        partial,
        text: String::from_utf8_lossy(text).into_owned(),
    })
}

/// The engine's timestamp and the rest of the frame. A frame without one (never seen from the
/// Engine when asked for timestamps) is taken whole, at the time it is read.
fn timestamped(frame: &[u8]) -> (OffsetDateTime, &[u8]) {
    let stamped = frame
        .iter()
        .position(|byte| *byte == b' ')
        .and_then(|space| {
            let stamp = std::str::from_utf8(&frame[..space]).ok()?;
            let at = OffsetDateTime::parse(stamp, &Rfc3339).ok()?;
            Some((at, &frame[space + 1..]))
        });
    match stamped {
        Some(stamped) => stamped,
        None => {
            tracing::warn!("a log frame without the engine's timestamp");
            (OffsetDateTime::now_utc(), frame)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use time::macros::datetime;

    fn stderr(frame: &'static str) -> LogOutput {
        LogOutput::StdErr {
            message: Bytes::from_static(frame.as_bytes()),
        }
    }

    #[test]
    fn a_line_carries_the_engines_timestamp_to_the_nanosecond_and_its_output() {
        let line = line(stderr(
            "2026-11-26T04:00:00.123456789Z 2026-11-26 04:00:00.123 | INFO     | agent:bot:42 | NONE - ready\n",
        ));
        let line = line.expect("a line");
        assert_eq!(line.at, datetime!(2026-11-26 04:00:00.123456789 UTC));
        assert_eq!(line.output, Output::Stderr);
        assert!(!line.partial);
        assert_eq!(
            line.text,
            "2026-11-26 04:00:00.123 | INFO     | agent:bot:42 | NONE - ready"
        );
    }

    #[test]
    fn the_engines_shortened_nanoseconds_parse() {
        // Docker's RFC 3339 nanos drops trailing zeros.
        let line = line(LogOutput::StdOut {
            message: Bytes::from_static(b"2026-11-26T04:00:00.5Z hello\n"),
        })
        .expect("a line");
        assert_eq!(line.at, datetime!(2026-11-26 04:00:00.5 UTC));
        assert_eq!(line.output, Output::Stdout);
        assert_eq!(line.text, "hello");
    }

    #[test]
    fn a_frame_without_a_newline_is_part_of_a_longer_line() {
        let line = line(stderr("2026-11-26T04:00:00.1Z aaaa")).expect("a line");
        assert!(line.partial);
        assert_eq!(line.text, "aaaa");
    }

    #[test]
    fn an_empty_line_stays_a_line_and_spaces_in_the_text_are_kept() {
        let empty = line(stderr("2026-11-26T04:00:00.1Z \n")).expect("a line");
        assert_eq!((empty.text.as_str(), empty.partial), ("", false));
        let spaced = line(stderr("2026-11-26T04:00:00.1Z  two  spaces \n")).expect("a line");
        assert_eq!(spaced.text, " two  spaces ");
    }

    #[test]
    fn a_frame_without_a_timestamp_is_kept_whole() {
        let line = line(stderr("no timestamp here\n")).expect("a line");
        assert_eq!(line.text, "no timestamp here");
    }
}
