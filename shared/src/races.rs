//! Writes conditioned on the version they read: a write that loses a race to another writer
//! reads again and is applied to the newer version, after a jittered wait, until a deadline.

use std::time::Duration;

// tokio's clock, so that tests on paused time pass the deadline as they pass the waits.
use tokio::time::Instant;

use crate::error::StoreError;

/// How long a write that keeps losing races to other writers of one item is tried again
/// before the caller is told to come back (a 503), well inside the functions' 10 s timeout.
const RACE_DEADLINE: Duration = Duration::from_secs(6);

/// Races lost so far, and when to give up.
pub struct Races {
    lost: u32,
    deadline: Instant,
}

impl Races {
    pub fn new() -> Self {
        Races {
            lost: 0,
            deadline: Instant::now() + RACE_DEADLINE,
        }
    }

    /// Waits before the next attempt (jittered, the window growing to a second), or says the
    /// deadline passed.
    pub async fn lost(&mut self) -> Result<(), StoreError> {
        self.lost += 1;
        if Instant::now() >= self.deadline {
            return Err(StoreError::Throttled(
                format!("the agent changed under {} writes in a row", self.lost).into(),
            ));
        }
        let ceiling = (25u64 << self.lost.min(6)).min(1_000);
        let wait = rand::random_range(1..=ceiling);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        Ok(())
    }
}

impl Default for Races {
    fn default() -> Self {
        Races::new()
    }
}
