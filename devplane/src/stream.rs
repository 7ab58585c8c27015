//! A table's stream on DynamoDB Local, read as Lambda's event source mapping reads it: every
//! shard from its oldest record (the template's mapping starts at TRIM_HORIZON), or from where
//! an earlier run left it ([`StreamReader::resume_after`]), each record as the JSON the mapping's
//! filters and the publisher see (`eventName`, `dynamodb.NewImage` in DynamoDB's typed JSON...).
//!
//! The stream API is called with its JSON protocol directly, not through aws-sdk-dynamodbstreams:
//! DynamoDB Local writes an empty map in a record as `{}` rather than `{"M": {}}`, which the SDK
//! refuses ("Union did not contain a valid variant"), and the records are wanted as JSON anyway.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Between polls while records keep coming: a session's start waits for its event this long at
/// most (plus the poll itself), a warm start's largest share of its 150 ms.
pub const POLL_BUSY: Duration = Duration::from_millis(25);
/// Between polls of a quiet stream: a start after a quiet spell still meets its 150 ms, at ten
/// small GetRecords a second on loopback.
pub const POLL_IDLE: Duration = Duration::from_millis(100);
/// How long after its last record the stream counts as busy.
const BUSY_FOR: Duration = Duration::from_secs(2);
/// How often the stream's shards are listed again (DescribeStream); at once after one ends.
const DISCOVER_EVERY: Duration = Duration::from_secs(1);

/// When the next poll is due: every [`POLL_BUSY`] while records came within [`BUSY_FOR`],
/// then twice as long each time up to [`POLL_IDLE`].
#[derive(Debug, Clone)]
pub struct Pace {
    last_record: Option<Instant>,
    wait: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            last_record: None,
            wait: POLL_BUSY,
        }
    }
}

impl Pace {
    /// The wait before the next poll, after one that answered `records` records at `now`.
    pub fn after_poll(&mut self, records: usize, now: Instant) -> Duration {
        if records > 0 {
            self.last_record = Some(now);
        }
        let busy = self
            .last_record
            .is_some_and(|last| now.duration_since(last) < BUSY_FOR);
        self.wait = match busy {
            true => POLL_BUSY,
            false => (self.wait * 2).min(POLL_IDLE),
        };
        self.wait
    }
}

/// A client of DynamoDB Local's stream API at `endpoint` (which ignores region and credentials,
/// but wants a signature-shaped Authorization header).
#[derive(Debug, Clone)]
pub struct LocalStreams {
    http: reqwest::Client,
    endpoint: String,
}

impl LocalStreams {
    pub fn new(endpoint: &str) -> Self {
        LocalStreams {
            http: reqwest::Client::new(),
            endpoint: endpoint.to_owned(),
        }
    }

    async fn call(&self, operation: &str, request: Value) -> Result<Value, BoxError> {
        let response = self
            .http
            .post(&self.endpoint)
            .header("content-type", "application/x-amz-json-1.0")
            .header(
                "x-amz-target",
                format!("DynamoDBStreams_20120810.{operation}"),
            )
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, \
                 SignedHeaders=host, Signature=0",
            )
            .body(request.to_string())
            .send()
            .await?;
        let status = response.status();
        let body: Value = response.json().await?;
        if !status.is_success() {
            return Err(format!("{operation}: {status} {body}").into());
        }
        Ok(body)
    }
}

/// A reader of one table's stream: [`StreamReader::poll`] answers the records written since the
/// last call, oldest first within each shard, each once.
pub struct StreamReader {
    streams: LocalStreams,
    stream_arn: String,
    /// Shards being read.
    shards: HashMap<String, ShardPosition>,
    /// Shards read to their end.
    finished: HashSet<String>,
    /// Shard id → the sequence number of the last record an earlier run finished: the shard is
    /// read after it.
    resume: BTreeMap<String, String>,
    /// When the shards were last listed; `None`: at the next poll.
    discovered_at: Option<Instant>,
}

/// One record of a shard.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRecord {
    pub shard: String,
    pub sequence: String,
    /// The record as Lambda hands it to the stream publisher.
    pub record: Value,
}

/// Where the reading of a shard is.
struct ShardPosition {
    iterator: String,
    /// The newest record answered: an iterator that stops working is replaced by one after it,
    /// and a record at or before it is never answered twice. (DynamoDB Local answers
    /// TrimmedDataAccessException to a TRIM_HORIZON iterator taken while its shard was empty,
    /// once the shard has records; a new TRIM_HORIZON iterator then reads them.)
    last_sequence: Option<String>,
}

fn text(value: &Value, what: &str) -> Result<String, BoxError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no {what} in the answer").into())
}

/// Sequence numbers are decimal strings of up to 40 digits, increasing within a shard.
fn sequence_after(candidate: &str, last: &str) -> bool {
    (candidate.len(), candidate) > (last.len(), last)
}

impl StreamReader {
    /// The reader of `table`'s (newest) stream.
    pub async fn open(streams: LocalStreams, table: &str) -> Result<Self, BoxError> {
        let listed = streams
            .call("ListStreams", json!({"TableName": table}))
            .await?;
        let stream_arn = listed["Streams"]
            .as_array()
            .and_then(|streams| streams.last())
            .map(|stream| text(&stream["StreamArn"], "StreamArn"))
            .ok_or_else(|| format!("table {table} has no stream"))??;
        Ok(StreamReader {
            streams,
            stream_arn,
            shards: HashMap::new(),
            finished: HashSet::new(),
            resume: BTreeMap::new(),
            discovered_at: None,
        })
    }

    pub fn stream_arn(&self) -> &str {
        &self.stream_arn
    }

    /// Reads each shard named in `points` after its sequence number instead of from its oldest
    /// record (a shard trimmed since is read from its oldest record left).
    pub fn resume_after(&mut self, points: BTreeMap<String, String>) {
        self.resume = points;
    }

    async fn iterator(&self, shard: &str, last_sequence: Option<&str>) -> Result<String, BoxError> {
        let request = match last_sequence {
            Some(sequence) => json!({"StreamArn": self.stream_arn, "ShardId": shard,
                "ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": sequence}),
            None => json!({"StreamArn": self.stream_arn, "ShardId": shard,
                "ShardIteratorType": "TRIM_HORIZON"}),
        };
        let answer = self.streams.call("GetShardIterator", request).await?;
        text(&answer["ShardIterator"], "ShardIterator")
    }

    /// Starts reading shards not seen yet (new shards appear as old ones close).
    async fn discover(&mut self) -> Result<(), BoxError> {
        let description = self
            .streams
            .call("DescribeStream", json!({"StreamArn": self.stream_arn}))
            .await?;
        let shards = description["StreamDescription"]["Shards"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for shard in shards {
            let id = text(&shard["ShardId"], "ShardId")?;
            if self.shards.contains_key(&id) || self.finished.contains(&id) {
                continue;
            }
            let resumed = self.resume.get(&id).cloned();
            let (iterator, last_sequence) = match resumed {
                Some(sequence) => match self.iterator(&id, Some(&sequence)).await {
                    Ok(iterator) => (iterator, Some(sequence)),
                    Err(error) => {
                        eprintln!(
                            "dev data plane: shard {id} cannot resume after {sequence} ({error}); \
                             reading its oldest record left"
                        );
                        (self.iterator(&id, None).await?, None)
                    }
                },
                None => (self.iterator(&id, None).await?, None),
            };
            self.shards.insert(
                id,
                ShardPosition {
                    iterator,
                    last_sequence,
                },
            );
        }
        Ok(())
    }

    /// The records written since the last call. A shard whose iterator fails is read again
    /// from after its last record at the next call.
    pub async fn poll(&mut self) -> Result<Vec<StreamRecord>, BoxError> {
        let due = self
            .discovered_at
            .is_none_or(|at| at.elapsed() >= DISCOVER_EVERY);
        if due {
            self.discover().await?;
            self.discovered_at = Some(Instant::now());
        }
        let mut records = Vec::new();
        let shards: Vec<String> = self.shards.keys().cloned().collect();
        for shard in shards {
            let Some(position) = self.shards.get(&shard) else {
                continue;
            };
            let output = match self
                .streams
                .call("GetRecords", json!({"ShardIterator": position.iterator}))
                .await
            {
                Ok(output) => output,
                Err(error) => {
                    let last_sequence = position.last_sequence.clone();
                    eprintln!(
                        "dev data plane: shard {shard} is read again after {}: {error}",
                        last_sequence.as_deref().unwrap_or("its oldest record")
                    );
                    let iterator = self.iterator(&shard, last_sequence.as_deref()).await?;
                    self.shards.insert(
                        shard,
                        ShardPosition {
                            iterator,
                            last_sequence,
                        },
                    );
                    continue;
                }
            };
            let mut last_sequence = position.last_sequence.clone();
            for record in output["Records"].as_array().cloned().unwrap_or_default() {
                let sequence = record["dynamodb"]["SequenceNumber"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(last) = &last_sequence
                    && !sequence_after(&sequence, last)
                {
                    continue;
                }
                last_sequence = Some(sequence.clone());
                records.push(StreamRecord {
                    shard: shard.clone(),
                    sequence,
                    record,
                });
            }
            match output["NextShardIterator"].as_str() {
                Some(next) => {
                    self.shards.insert(
                        shard,
                        ShardPosition {
                            iterator: next.to_owned(),
                            last_sequence,
                        },
                    );
                }
                None => {
                    self.shards.remove(&shard);
                    self.finished.insert(shard);
                    // Its children are read from the next poll on.
                    self.discovered_at = None;
                }
            }
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_compare_as_numbers() {
        assert!(sequence_after("100", "99"));
        assert!(!sequence_after("99", "100"));
        assert!(!sequence_after("100", "100"));
    }

    #[test]
    fn the_stream_is_polled_often_while_records_come_then_less_when_quiet() {
        let mut pace = Pace::default();
        let start = Instant::now();
        assert_eq!(pace.after_poll(1, start), POLL_BUSY);
        assert_eq!(pace.after_poll(0, start + BUSY_FOR / 2), POLL_BUSY);
        let quiet = start + BUSY_FOR;
        let waits: Vec<Duration> = (0..4).map(|_| pace.after_poll(0, quiet)).collect();
        assert_eq!(waits, [POLL_BUSY * 2, POLL_IDLE, POLL_IDLE, POLL_IDLE]);
        assert_eq!(pace.after_poll(3, quiet), POLL_BUSY, "busy again at once");
    }

    #[test]
    fn typed_json_reads_back_as_plain_json() {
        let typed = json!({"spec": {"M": {"image": {"S": "a:1"}, "replicas": {"N": "2"},
            "on": {"BOOL": true}, "none": {"NULL": true}, "names": {"L": [{"S": "x"}]},
            "vars": {"M": {}}}}});
        assert_eq!(
            shared::stream_events::untyped(&typed),
            json!({"spec": {"image": "a:1", "replicas": 2, "on": true, "none": null, "names": ["x"], "vars": {}}})
        );
    }
}
