//! What the store is asked for: one service's lines, narrowed by the query, the time range and
//! retention, in the query's order; and where a cursor's position lies against that range.

use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::chunk::LogChunk;
use super::query::{LogQuery, Order};

/// What the store is asked for: one service's lines, narrowed and ordered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFilter {
    pub service_id: String,
    pub deployment_id: Option<String>,
    pub session_id: Option<String>,
    /// Positions from and to, both inclusive as in DynamoDB's `BETWEEN`, from the time range and
    /// retention. Each is a bare 20-digit timestamp, which sorts before every position at that
    /// nanosecond (`{timestamp}#{event id}`), so the time range's end is exclusive.
    pub from_position: String,
    pub to_position: String,
    pub order: Order,
    pub query: Option<String>,
    /// Unix seconds; lines whose TTL is at or before it are never returned or counted.
    pub now: i64,
}

/// Which of a service's chunk partitions a filter reads (a store keys each: the table by
/// service, an index by deployment, a sparse one by session), and what a chunk read from it must
/// still match. Every store reads the same partition; DynamoDB applies `Limit` before the rest
/// is matched, and so does the memory store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition<'a> {
    Service,
    Deployment(&'a str),
    /// A session's chunks; with `deployment`, only that deployment's (a session belongs to one
    /// deployment, so the check drops nothing in practice).
    Session {
        session: &'a str,
        deployment: Option<&'a str>,
    },
}

impl Partition<'_> {
    /// Whether `chunk` is in this partition (its key).
    pub fn holds(&self, chunk: &LogChunk) -> bool {
        match self {
            Partition::Service => true,
            Partition::Deployment(deployment) => chunk.deployment_id == *deployment,
            Partition::Session { session, .. } => chunk.session_id.as_deref() == Some(*session),
        }
    }

    /// Whether a chunk of this partition also matches the rest of the filter.
    pub fn matches(&self, chunk: &LogChunk) -> bool {
        match self {
            Partition::Session {
                deployment: Some(deployment),
                ..
            } => chunk.deployment_id == *deployment,
            _ => true,
        }
    }
}

/// Where a cursor's position lies against a range, in the range's reading order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Reading has not reached the range yet: all of it follows.
    BeforeRange,
    InRange,
    /// Reading has passed the range's end: nothing of it follows.
    PastRange,
}

impl LogFilter {
    pub fn new(
        service_id: &str,
        query: &LogQuery,
        now: OffsetDateTime,
        retention_days: u32,
    ) -> Self {
        let now_nanos = u64::try_from(now.unix_timestamp_nanos()).unwrap_or(0);
        let retained_from =
            now_nanos.saturating_sub(u64::from(retention_days) * 86_400 * 1_000_000_000);
        let seconds_to_nanos = |seconds: i64| {
            u64::try_from(seconds)
                .unwrap_or(0)
                .saturating_mul(1_000_000_000)
        };
        let from = query
            .start_time
            .map_or(0, seconds_to_nanos)
            .max(retained_from);
        let to = query.end_time.map_or(u64::MAX, seconds_to_nanos);
        LogFilter {
            service_id: service_id.to_owned(),
            deployment_id: query.deployment_id.clone(),
            session_id: query.session_id.clone(),
            from_position: format!("{from:020}"),
            // No position starts with u64::MAX nanoseconds' digits and a larger suffix... so an
            // open end is "9" repeated: above every 20-digit timestamp.
            to_position: if to == u64::MAX {
                "9".repeat(21)
            } else {
                format!("{to:020}")
            },
            order: query.order,
            query: query.query.clone(),
            now: now.unix_timestamp(),
        }
    }

    /// The partition that serves this filter: the narrowest its ids allow.
    pub fn partition(&self) -> Partition<'_> {
        match (&self.session_id, &self.deployment_id) {
            (Some(session), deployment) => Partition::Session {
                session,
                deployment: deployment.as_deref(),
            },
            (None, Some(deployment)) => Partition::Deployment(deployment),
            (None, None) => Partition::Service,
        }
    }

    /// Where `position` (a cursor's) lies for reading in this filter's order.
    pub fn locate(&self, position: &str) -> Placement {
        let (ahead, behind) = match self.order {
            Order::Asc => (
                position < self.from_position.as_str(),
                position > self.to_position.as_str(),
            ),
            Order::Desc => (
                position > self.to_position.as_str(),
                position < self.from_position.as_str(),
            ),
        };
        match (ahead, behind) {
            (true, _) => Placement::BeforeRange,
            (_, true) => Placement::PastRange,
            _ => Placement::InRange,
        }
    }

    /// The part of the range that reading in this filter's order has passed at `position`,
    /// `position` itself included; `None` when reading has not reached the range yet.
    pub fn through(&self, position: &str) -> Option<LogFilter> {
        let placement = self.locate(position);
        if placement == Placement::BeforeRange {
            return None;
        }
        let mut passed = self.clone();
        match (placement, self.order) {
            (Placement::InRange, Order::Asc) => passed.to_position = position.to_owned(),
            (Placement::InRange, Order::Desc) => passed.from_position = position.to_owned(),
            // Past the range: all of it.
            _ => {}
        }
        Some(passed)
    }

    /// A fingerprint of everything that decides which lines match and in what order, so a
    /// cursor made for other filters (or another agent, or an earlier agent of the same name) is
    /// refused.
    pub fn fingerprint(&self, start_time: Option<i64>, end_time: Option<i64>) -> String {
        let mut hasher = Sha256::new();
        for part in [
            self.service_id.as_str(),
            self.deployment_id.as_deref().unwrap_or("\u{0}"),
            self.session_id.as_deref().unwrap_or("\u{0}"),
            self.query.as_deref().unwrap_or("\u{0}"),
            &start_time.map_or("-".to_owned(), |t| t.to_string()),
            &end_time.map_or("-".to_owned(), |t| t.to_string()),
            if self.order == Order::Asc {
                "asc"
            } else {
                "desc"
            },
        ] {
            hasher.update(part.as_bytes());
            hasher.update([0xff]);
        }
        hasher.finalize()[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::position;
    use crate::logs::query::tests::parse;

    #[test]
    fn a_position_is_placed_against_the_range_in_reading_order() {
        let now = OffsetDateTime::from_unix_timestamp(2_000_000_000).unwrap();
        let range = |query: &str| LogFilter::new("svc", &parse(query).unwrap(), now, 30);
        let at = |seconds: u64| position(seconds * 1_000_000_000, "1");
        let bounds = |filter: LogFilter| (filter.from_position, filter.to_position);
        let asc = range("order=asc&startTime=1999999000&endTime=1999999900");
        let desc = range("startTime=1999999000&endTime=1999999900");
        let middle = at(1_999_999_500);
        assert_eq!(
            asc.through(&middle).map(bounds),
            Some((asc.from_position.clone(), middle.clone()))
        );
        assert_eq!(
            desc.through(&middle).map(bounds),
            Some((middle, desc.to_position.clone()))
        );
        // Positions outside the range (forged cursors): nothing passed, or all of it.
        let (before, beyond) = (at(1_999_998_000), at(1_999_999_950));
        assert_eq!(asc.through(&before).map(bounds), None);
        assert_eq!(
            asc.through(&beyond).map(bounds),
            Some((asc.from_position.clone(), asc.to_position.clone()))
        );
        assert_eq!(desc.through(&beyond).map(bounds), None);
        assert_eq!(
            desc.through(&before).map(bounds),
            Some((desc.from_position.clone(), desc.to_position.clone()))
        );
        // The same positions, placed for resuming a page.
        let middle = at(1_999_999_500);
        for (filter, position, placement) in [
            (&asc, &before, Placement::BeforeRange),
            (&asc, &middle, Placement::InRange),
            (&asc, &beyond, Placement::PastRange),
            (&desc, &beyond, Placement::BeforeRange),
            (&desc, &middle, Placement::InRange),
            (&desc, &before, Placement::PastRange),
        ] {
            assert_eq!(
                filter.locate(position),
                placement,
                "{:?} {position}",
                filter.order
            );
        }
    }
}
