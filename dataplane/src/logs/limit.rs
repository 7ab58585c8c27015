//! A replica's log rate, bounded (docs/data-plane.md, "Logs"): a token bucket of lines and one of
//! bytes, refilled by the lines' own times, so that a replica that floods its output cannot
//! outrun the reading of its log (the engine's log files rotate under a reader that falls
//! behind, losing lines unsaid) nor take the logs table's throughput from the account's other
//! agents. A line over either bucket is dropped and counted; the count is written into the
//! replica's log as one marked line, so that nothing is lost without a line saying so.

use shared::logs::rfc3339_nanos;

/// The bound of one replica's log rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLimit {
    /// Lines a second, sustained.
    pub lines_per_second: u32,
    /// Lines written at once beyond the rate (a start's or a crash's burst).
    pub burst_lines: u32,
    /// Bytes of text a second, sustained.
    pub bytes_per_second: u64,
    /// Bytes written at once beyond the rate.
    pub burst_bytes: u64,
}

impl Default for LogLimit {
    /// 1,000 lines and 1 MiB a second, in bursts of 10,000 lines and 10 MiB: five times what a
    /// voice agent logs at DEBUG (a line every few milliseconds), and a fifth of the 5,000 lines
    /// a second one agent may ingest (contract section 8).
    fn default() -> Self {
        LogLimit {
            lines_per_second: 1_000,
            burst_lines: 10_000,
            bytes_per_second: 1024 * 1024,
            burst_bytes: 10 * 1024 * 1024,
        }
    }
}

/// What is left of the limit, refilled by the time between the lines.
#[derive(Debug)]
pub struct Budget {
    limit: LogLimit,
    lines: f64,
    bytes: f64,
    /// The time of the last line taken or refused (Unix nanoseconds).
    at: Option<u64>,
}

impl Budget {
    pub fn new(limit: LogLimit) -> Self {
        Budget {
            limit,
            lines: f64::from(limit.burst_lines),
            bytes: limit.burst_bytes as f64,
            at: None,
        }
    }

    /// Whether a line of `bytes` written at `nanos` is within the limit (and spends it).
    pub fn take(&mut self, nanos: u64, bytes: usize) -> bool {
        let elapsed = self
            .at
            .map_or(0.0, |at| nanos.saturating_sub(at) as f64 / 1e9);
        self.at = Some(self.at.map_or(nanos, |at| at.max(nanos)));
        let limit = self.limit;
        self.lines = (self.lines + elapsed * f64::from(limit.lines_per_second))
            .min(f64::from(limit.burst_lines));
        self.bytes =
            (self.bytes + elapsed * limit.bytes_per_second as f64).min(limit.burst_bytes as f64);
        let bytes = bytes as f64;
        if self.lines < 1.0 || self.bytes < bytes {
            return false;
        }
        self.lines -= 1.0;
        self.bytes -= bytes;
        true
    }
}

/// Why lines were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The replica wrote more than its [`LogLimit`].
    OverLimit,
    /// The platform's delivery of the replica's lines fell behind the bound it buffers.
    Backlog,
}

/// Lines dropped in a row for one reason: what their marker line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub reason: DropReason,
    pub lines: u64,
    pub bytes: u64,
    /// The first and the last dropped line's times (Unix nanoseconds).
    pub first: u64,
    pub last: u64,
}

impl Dropped {
    pub fn new(reason: DropReason, nanos: u64, bytes: usize) -> Self {
        Dropped {
            reason,
            lines: 1,
            bytes: bytes as u64,
            first: nanos,
            last: nanos,
        }
    }

    pub fn add(&mut self, nanos: u64, bytes: usize) {
        self.lines += 1;
        self.bytes += bytes as u64;
        self.first = self.first.min(nanos);
        self.last = self.last.max(nanos);
    }

    /// The marker line's text (the platform's prefix is added where it is written). Its first
    /// words are the count, for a reader (or a test) to add up what was dropped.
    pub fn marker(&self, limit: &LogLimit) -> String {
        let why = match self.reason {
            DropReason::OverLimit => format!(
                "the replica wrote more than its log limit of {} lines or {} bytes a second \
                 (bursts of {} lines or {} bytes)",
                limit.lines_per_second,
                limit.bytes_per_second,
                limit.burst_lines,
                limit.burst_bytes
            ),
            DropReason::Backlog => {
                "the platform's delivery of this replica's lines fell behind".to_owned()
            }
        };
        format!(
            "{} lines dropped ({} bytes, written from {} to {}): {why}",
            self.lines,
            self.bytes,
            rfc3339_nanos(self.first),
            rfc3339_nanos(self.last)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;
    const T0: u64 = 1_800_000_000 * SECOND;

    fn small() -> LogLimit {
        LogLimit {
            lines_per_second: 10,
            burst_lines: 100,
            bytes_per_second: 1_000,
            burst_bytes: 10_000,
        }
    }

    #[test]
    fn a_burst_is_taken_whole_then_the_rate() {
        let mut budget = Budget::new(small());
        let taken = (0..150).filter(|_| budget.take(T0, 1)).count();
        assert_eq!(taken, 100, "the burst, at one instant");
        // A second later, ten more lines' worth.
        let taken = (0..50).filter(|_| budget.take(T0 + SECOND, 1)).count();
        assert_eq!(taken, 10);
    }

    #[test]
    fn bytes_bound_it_too() {
        let mut budget = Budget::new(small());
        assert!(budget.take(T0, 9_000));
        assert!(!budget.take(T0, 2_000), "over the burst's bytes");
        assert!(budget.take(T0, 1_000));
        assert!(
            budget.take(T0 + 2 * SECOND, 2_000),
            "refilled at 1,000 a second"
        );
    }

    #[test]
    fn a_line_dated_before_the_last_refills_nothing_and_spends_as_any() {
        let mut budget = Budget::new(LogLimit {
            burst_lines: 1,
            ..small()
        });
        assert!(budget.take(T0 + SECOND, 1));
        assert!(!budget.take(T0, 1), "no refill from a time gone backwards");
    }

    #[test]
    fn a_marker_says_how_many_how_much_when_and_why() {
        let mut dropped = Dropped::new(DropReason::OverLimit, T0, 100);
        dropped.add(T0 + SECOND / 2, 50);
        let marker = dropped.marker(&small());
        assert!(
            marker.starts_with("2 lines dropped (150 bytes, written from 2027-01-15T08:00:00.000000000Z to 2027-01-15T08:00:00.500000000Z)"),
            "{marker}"
        );
        assert!(
            marker.contains("log limit of 10 lines or 1000 bytes a second"),
            "{marker}"
        );
        let backlog = Dropped::new(DropReason::Backlog, T0, 1).marker(&small());
        assert!(
            backlog.ends_with("delivery of this replica's lines fell behind"),
            "{backlog}"
        );
    }
}
