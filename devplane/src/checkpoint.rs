//! Where the development data plane is in each shard of the agents table's stream, kept in a
//! file between runs: a restart resumes after the last record it finished instead of replaying
//! the stream's 24 hours (every deployment requested in them, all reported again at once).
//!
//! A record is finished once every report it asked for was delivered. Its place is saved only
//! then, and only when every record before it in its shard is finished too, so a run stopped in
//! between sends those reports again on the next run: at least once, as EventBridge delivers,
//! which the status function is made for (a report no newer than the last applied changes
//! nothing).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Saved {
    /// The stream the positions belong to: a table made again has another stream, read from its
    /// oldest record.
    stream_arn: String,
    /// Shard id → the sequence number of its last finished record.
    shards: BTreeMap<String, String>,
}

/// A record read and not finished yet.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unfinished {
    sequence: String,
    /// Reports of it not delivered yet.
    outstanding: usize,
}

/// The data plane's place in one stream, and the file it is kept in.
#[derive(Debug)]
pub struct Checkpoint {
    path: PathBuf,
    saved: Saved,
    /// Shard id → its records read and not finished, oldest first (a finished record stays
    /// behind an unfinished older one until that one finishes).
    unfinished: HashMap<String, VecDeque<Unfinished>>,
    changed: bool,
}

impl Checkpoint {
    /// The place kept in `path` for `stream_arn`; none when the file is missing, unreadable or
    /// another stream's (said on stderr).
    pub fn load(path: &Path, stream_arn: &str) -> Self {
        let fresh = Saved {
            stream_arn: stream_arn.to_owned(),
            shards: BTreeMap::new(),
        };
        let saved = match std::fs::read(path) {
            Ok(bytes) => match serde_json::from_slice::<Saved>(&bytes) {
                Ok(saved) if saved.stream_arn == stream_arn => saved,
                Ok(_) => {
                    eprintln!(
                        "dev data plane: {} is another stream's place; reading this one from its oldest record",
                        path.display()
                    );
                    fresh
                }
                Err(error) => {
                    eprintln!(
                        "dev data plane: {} is not a checkpoint ({error}); reading from the oldest record",
                        path.display()
                    );
                    fresh
                }
            },
            Err(_) => fresh,
        };
        Checkpoint {
            path: path.to_owned(),
            saved,
            unfinished: HashMap::new(),
            changed: false,
        }
    }

    /// Where reading each shard resumes: after its last finished record.
    pub fn resume_points(&self) -> &BTreeMap<String, String> {
        &self.saved.shards
    }

    /// A record was read that asks for `reports` deliveries (none: finished at once).
    pub fn read(&mut self, shard: &str, sequence: &str, reports: usize) {
        self.unfinished
            .entry(shard.to_owned())
            .or_default()
            .push_back(Unfinished {
                sequence: sequence.to_owned(),
                outstanding: reports,
            });
        self.advance(shard);
    }

    /// One report of the record at `sequence` was delivered (or given up on).
    pub fn delivered(&mut self, shard: &str, sequence: &str) {
        if let Some(record) = self
            .unfinished
            .get_mut(shard)
            .and_then(|records| records.iter_mut().find(|r| r.sequence == sequence))
        {
            record.outstanding = record.outstanding.saturating_sub(1);
        }
        self.advance(shard);
    }

    /// Moves the shard's place past its oldest records while they are finished.
    fn advance(&mut self, shard: &str) {
        let Some(records) = self.unfinished.get_mut(shard) else {
            return;
        };
        while records
            .front()
            .is_some_and(|record| record.outstanding == 0)
        {
            if let Some(record) = records.pop_front() {
                self.saved.shards.insert(shard.to_owned(), record.sequence);
                self.changed = true;
            }
        }
    }

    /// Reports not delivered yet, in every shard.
    pub fn outstanding(&self) -> usize {
        self.unfinished
            .values()
            .flatten()
            .map(|record| record.outstanding)
            .sum()
    }

    /// Writes the place if it moved since the last save (to a temporary file renamed over the
    /// old one, so a run killed while saving leaves the previous place, never half a file).
    pub fn save(&mut self) -> std::io::Result<()> {
        if !self.changed {
            return Ok(());
        }
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let temporary = self.path.with_extension("tmp");
        std::fs::write(&temporary, serde_json::to_vec_pretty(&self.saved)?)?;
        std::fs::rename(&temporary, &self.path)?;
        self.changed = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temporary_path(name: &str) -> PathBuf {
        let directory = std::env::temp_dir().join(format!(
            "dev-data-plane-checkpoint-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&directory);
        directory.join("checkpoint.json")
    }

    #[test]
    fn a_place_moves_only_past_records_whose_reports_were_all_delivered() {
        let path = temporary_path("order");
        let mut checkpoint = Checkpoint::load(&path, "arn:stream/1");
        checkpoint.read("shard-1", "100", 1);
        checkpoint.read("shard-1", "200", 0);
        checkpoint.read("shard-1", "300", 2);
        assert_eq!(
            checkpoint.resume_points().get("shard-1"),
            None,
            "100 waits for its report, and 200 behind it"
        );
        checkpoint.delivered("shard-1", "300");
        checkpoint.delivered("shard-1", "100");
        assert_eq!(checkpoint.resume_points()["shard-1"], "200");
        assert_eq!(checkpoint.outstanding(), 1);
        checkpoint.delivered("shard-1", "300");
        assert_eq!(checkpoint.resume_points()["shard-1"], "300");
        assert_eq!(checkpoint.outstanding(), 0);
    }

    #[test]
    fn a_saved_place_is_resumed_by_the_next_run_of_the_same_stream_only() {
        let path = temporary_path("resume");
        let mut checkpoint = Checkpoint::load(&path, "arn:stream/1");
        checkpoint.read("shard-1", "100", 0);
        checkpoint.read("shard-2", "7", 1);
        checkpoint.save().unwrap();
        let next = Checkpoint::load(&path, "arn:stream/1");
        assert_eq!(
            next.resume_points(),
            &BTreeMap::from([("shard-1".to_owned(), "100".to_owned())]),
            "shard-2's record was not finished: read again"
        );
        let other_stream = Checkpoint::load(&path, "arn:stream/2");
        assert!(other_stream.resume_points().is_empty());
        std::fs::write(&path, b"not json").unwrap();
        assert!(
            Checkpoint::load(&path, "arn:stream/1")
                .resume_points()
                .is_empty()
        );
    }
}
