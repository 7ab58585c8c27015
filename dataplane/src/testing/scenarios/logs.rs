//! A replica's log (contract section 12, "Logs"): a flood past the replica's log limit is
//! bounded, and every line it wrote is stored once or counted in a marker line that says why.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::json;

use super::{Harness, Running, WAIT, agent};
use crate::logs::{LogLimit, PLATFORM_PREFIX};
use crate::testing::FLOOD_PREFIX;

/// The flood: as many lines as the agent writes at once.
const FLOOD: u64 = 20_000;
/// The lines a session's agent writes beside a flood (its start, its environment, its end).
const OTHER_LINES: u64 = 5;

/// What the session's stream holds so far: each flood line's number, and what the markers
/// say was dropped.
fn counted(lines: &[String]) -> (Vec<u64>, u64) {
    let texts = lines
        .iter()
        .map(|message| shared::logs::parse_message(message, 0).1);
    let (mut numbers, mut dropped) = (Vec::new(), 0);
    for text in texts {
        if let Some(rest) = text.strip_prefix(FLOOD_PREFIX) {
            numbers.extend(rest.split(' ').next().and_then(|n| n.parse::<u64>().ok()));
        } else if let Some(marker) = text.strip_prefix(PLATFORM_PREFIX) {
            dropped += (marker.split_once(" lines dropped"))
                .and_then(|(count, _)| count.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    (numbers, dropped)
}

/// A session's agent writes 20,000 lines at once, far past its limit: the burst is kept, the
/// rest dropped, and every line is either stored once or counted by a marker, none lost
/// unsaid and none twice.
pub async fn a_log_flood_past_the_limit_is_stored_once_or_counted_in_a_marker<H: Harness>(
    harness: &H,
) {
    let limit = LogLimit {
        lines_per_second: 100,
        burst_lines: 2_000,
        ..LogLimit::default()
    };
    let running = Running::start_with(harness, &[], |config| config.log_limit = limit).await;
    let agent = agent("flood");
    let deployment = running.ready_deployment(harness, &agent, (1, 2)).await;
    let body = json!({"logLines": FLOOD, "durationSeconds": 1});
    let session = running.request_session(&agent, &deployment, body).await;
    running.started(&session).await;
    let whole = async {
        loop {
            let (numbers, dropped) = counted(&running.reports.session_lines(&session));
            if numbers.len() as u64 + dropped >= FLOOD {
                return (numbers, dropped);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let bound = WAIT * 3;
    let Ok((numbers, dropped)) = tokio::time::timeout(bound, whole).await else {
        let (numbers, dropped) = counted(&running.reports.session_lines(&session));
        panic!(
            "within {bound:?} {} lines stored and {dropped} counted dropped, of {FLOOD}",
            numbers.len()
        );
    };
    let unique: BTreeSet<u64> = numbers.iter().copied().collect();
    assert_eq!(unique.len(), numbers.len(), "no line stored twice");
    // The markers count the agent's few other lines dropped beside the flood's.
    let counted = numbers.len() as u64 + dropped;
    assert!(
        (FLOOD..=FLOOD + OTHER_LINES).contains(&counted),
        "every flood line stored or counted: {} stored, {dropped} counted",
        numbers.len()
    );
    assert!(
        (1_900..=2_500).contains(&numbers.len()),
        "about the burst kept (less the lines before it): {}",
        numbers.len()
    );
    assert!(unique.iter().all(|n| *n < FLOOD));
    running.finish().await;
}
