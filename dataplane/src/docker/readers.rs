//! The log readers open on each container. The json-file driver's lines go with their
//! container, so a stopped container is removed only once its readers have read to its end
//! (or [`DRAIN_BOUND`] passed): a reader opened just before a stop (an adopted replica whose
//! session already ended) still gets every line.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// The longest a stopped container's removal waits for its readers.
pub const DRAIN_BOUND: Duration = Duration::from_secs(5);

/// How many readers each container has (absent: none).
#[derive(Clone, Default)]
pub struct Readers(Arc<watch::Sender<HashMap<String, usize>>>);

/// One open reader; dropping it (its stream ended or was dropped) closes it.
pub struct Reading {
    readers: Readers,
    container: String,
}

impl Readers {
    /// Counts a reader of `container` from now, before its stream is first polled.
    pub fn open(&self, container: &str) -> Reading {
        self.0
            .send_modify(|open| *open.entry(container.to_owned()).or_default() += 1);
        Reading {
            readers: self.clone(),
            container: container.to_owned(),
        }
    }

    /// Once no reader of `container` is open, or `bound` passed; whether they all closed.
    pub async fn drained(&self, container: &str, bound: Duration) -> bool {
        let mut open = self.0.subscribe();
        tokio::time::timeout(bound, open.wait_for(|open| !open.contains_key(container)))
            .await
            .is_ok()
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.readers.0.send_modify(|open| {
            if let Some(count) = open.get_mut(&self.container) {
                *count -= 1;
                if *count == 0 {
                    open.remove(&self.container);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_container_is_drained_once_its_last_reader_closes() {
        let readers = Readers::default();
        assert!(
            readers.drained("a", Duration::ZERO).await,
            "no reader: drained"
        );
        let (first, second) = (readers.open("a"), readers.open("a"));
        let other = readers.open("b");
        assert!(!readers.drained("a", Duration::from_millis(10)).await);
        drop(first);
        assert!(!readers.drained("a", Duration::from_millis(10)).await);
        let waiting = tokio::spawn({
            let readers = readers.clone();
            async move { readers.drained("a", Duration::from_secs(10)).await }
        });
        drop(second);
        assert!(
            waiting.await.expect("the wait"),
            "drained when the last one closed"
        );
        assert!(
            !readers.drained("b", Duration::from_millis(10)).await,
            "b's reader is open"
        );
        drop(other);
    }
}
