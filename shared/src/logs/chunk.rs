//! How lines are kept: in compressed chunks, one log stream's consecutive lines each (contract
//! section 8), as the log stores that carry this volume do (Loki, CloudWatch itself).
//!
//! A CloudWatch subscription batch comes from one log stream, so one deployment and one session:
//! [`pack`] cuts each stream's lines, in position order, into chunks of at most
//! [`MAX_CHUNK_LINES`] lines, [`MAX_CHUNK_TEXT_BYTES`] of text and a time span of at most
//! [`MAX_CHUNK_SPAN_NANOS`]. A chunk is stored as one item whose key is its last line's position
//! (`{nanoseconds:020}#{eventId}`), so the same batch delivered again writes the same items, and
//! whose body is its lines, deflated. Reading merges chunks back into one order ([`super::merge`]):
//! newest first (the default order), a chunk's key bounds every line it holds; oldest first, the
//! span bound tells that no chunk not yet read holds an older line.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;

use super::ingest::MAX_LINE_BYTES;
use super::line::{LogLine, position, position_nanos};
use crate::error::StoreError;

/// The longest time a chunk's lines span. Reading oldest first, a line is known to be the oldest
/// left once every chunk ending up to this much after it has been read, so this bounds what such
/// a page reads beyond its own lines: about this long of the agent's (or the filter's) lines.
/// A stream that logs more than a line every 40 ms (a voice agent at debug level logs one every
/// few milliseconds per session) fills chunks of 50 lines within it.
pub const MAX_CHUNK_SPAN_NANOS: u64 = 2_000_000_000;

/// The most lines a chunk holds: the granularity of reading (a read budget in lines is spent a
/// chunk at a time, see [`super::read`]).
pub const MAX_CHUNK_LINES: usize = 500;

/// The most text a chunk holds (before compression): one line at its longest
/// ([`MAX_LINE_BYTES`] and a split line's marker) always fits; a chunk's item stays far below
/// DynamoDB's 400 KB whatever the text.
pub const MAX_CHUNK_TEXT_BYTES: usize = MAX_LINE_BYTES + 1024;

/// One stored chunk: a stream's consecutive lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    pub service_id: String,
    pub deployment_id: String,
    pub session_id: Option<String>,
    /// The last line's position: the chunk's key.
    pub last_position: String,
    pub first_nanos: u64,
    pub line_count: usize,
    /// When the last line expires (Unix seconds); each line expires the same time after its own
    /// timestamp ([`LogChunk::line_expires_at`]).
    pub expires_at: i64,
    /// The lines, encoded by [`encode`].
    pub body: Vec<u8>,
}

/// A line of a chunk, as decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkLine {
    pub timestamp_nanos: u64,
    pub event_id: String,
    pub text: String,
}

impl ChunkLine {
    pub fn position(&self) -> String {
        position(self.timestamp_nanos, &self.event_id)
    }
}

impl LogChunk {
    /// When a line of this chunk at `timestamp_nanos` expires: the chunk's retention after it.
    pub fn line_expires_at(&self, timestamp_nanos: u64) -> i64 {
        let retention = self.expires_at - seconds(self.last_nanos());
        seconds(timestamp_nanos).saturating_add(retention)
    }

    /// Whether every line of the chunk is still unexpired at `now` (its first expires first).
    pub fn unexpired_at(&self, now: i64) -> bool {
        self.line_expires_at(self.first_nanos) > now
    }

    pub fn last_nanos(&self) -> u64 {
        position_nanos(&self.last_position).unwrap_or(0)
    }

    pub fn lines(&self) -> Result<Vec<ChunkLine>, StoreError> {
        decode(&self.body)
    }

    /// A chunk of one line: how an item of the layout before chunks (a line an item) is read.
    pub fn of_one_line(
        line: ChunkLine,
        deployment_id: String,
        session_id: Option<String>,
        service_id: String,
        expires_at: i64,
    ) -> Self {
        LogChunk {
            service_id,
            deployment_id,
            session_id,
            last_position: line.position(),
            first_nanos: line.timestamp_nanos,
            line_count: 1,
            expires_at,
            body: encode(std::slice::from_ref(&line)),
        }
    }
}

fn seconds(nanos: u64) -> i64 {
    (nanos / 1_000_000_000) as i64
}

/// The chunks that keep `lines`: grouped by stream (service, deployment, session), each
/// stream's lines in position order (a line given twice, by its position, once), cut where a
/// chunk would pass a bound. Every line expires `retention_days` after its own timestamp.
pub fn pack(lines: &[LogLine], retention_days: u32) -> Vec<LogChunk> {
    type Stream<'a> = (&'a str, &'a str, Option<&'a str>);
    let mut streams: BTreeMap<Stream<'_>, BTreeMap<String, &LogLine>> = BTreeMap::new();
    for line in lines {
        let stream = (
            line.service_id.as_str(),
            line.deployment_id.as_str(),
            line.session_id.as_deref(),
        );
        streams
            .entry(stream)
            .or_default()
            .entry(line.position())
            .or_insert(line);
    }
    let mut chunks = Vec::new();
    for ((service_id, deployment_id, session_id), ordered) in streams {
        let mut pending: Vec<&LogLine> = Vec::new();
        let mut pending_bytes = 0;
        let mut flush = |pending: &mut Vec<&LogLine>| {
            if let (Some(first), Some(last)) = (pending.first(), pending.last()) {
                let lines: Vec<ChunkLine> = pending
                    .iter()
                    .map(|line| ChunkLine {
                        timestamp_nanos: line.timestamp_nanos,
                        event_id: line.event_id.clone(),
                        text: line.text.clone(),
                    })
                    .collect();
                chunks.push(LogChunk {
                    service_id: service_id.to_owned(),
                    deployment_id: deployment_id.to_owned(),
                    session_id: session_id.map(str::to_owned),
                    last_position: last.position(),
                    first_nanos: first.timestamp_nanos,
                    line_count: lines.len(),
                    expires_at: last.expires_at(retention_days),
                    body: encode(&lines),
                });
            }
            pending.clear();
        };
        for line in ordered.into_values() {
            let full = pending.first().is_some_and(|first| {
                pending.len() == MAX_CHUNK_LINES
                    || pending_bytes + line.text.len() > MAX_CHUNK_TEXT_BYTES
                    || line.timestamp_nanos - first.timestamp_nanos > MAX_CHUNK_SPAN_NANOS
            });
            if full {
                flush(&mut pending);
                pending_bytes = 0;
            }
            pending_bytes += line.text.len();
            pending.push(line);
        }
        flush(&mut pending);
    }
    chunks
}

/// The body of a chunk: each line as its timestamp (8 bytes, little-endian), its event id's
/// length (2 bytes) and bytes, its text's length (4 bytes) and bytes; all of it deflated.
/// A format of our own because it is this small: no escaping (a JSON encoding would write a
/// control character as six bytes), nothing to version yet (a later format takes a new item
/// attribute).
pub fn encode(lines: &[ChunkLine]) -> Vec<u8> {
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
    for line in lines {
        let id = line.event_id.as_bytes();
        let text = line.text.as_bytes();
        let id_length = u16::try_from(id.len()).unwrap_or(u16::MAX);
        let text_length = u32::try_from(text.len()).unwrap_or(u32::MAX);
        // Writing into a Vec cannot fail.
        let _ = encoder.write_all(&line.timestamp_nanos.to_le_bytes());
        let _ = encoder.write_all(&id_length.to_le_bytes());
        let _ = encoder.write_all(&id[..usize::from(id_length)]);
        let _ = encoder.write_all(&text_length.to_le_bytes());
        let _ = encoder.write_all(&text[..text_length as usize]);
    }
    encoder.finish().unwrap_or_default()
}

/// The lines of a chunk's body; a body that is not one [`encode`] wrote is an error.
pub fn decode(body: &[u8]) -> Result<Vec<ChunkLine>, StoreError> {
    let mut raw = Vec::new();
    // A chunk holds at most MAX_CHUNK_TEXT_BYTES of text and MAX_CHUNK_LINES ids: a body that
    // inflates past far more than that is not ours.
    let limit = (MAX_CHUNK_TEXT_BYTES + MAX_CHUNK_LINES * 256) as u64 * 2;
    DeflateDecoder::new(body)
        .take(limit + 1)
        .read_to_end(&mut raw)
        .map_err(corrupt)?;
    if raw.len() as u64 > limit {
        return Err(corrupt("a chunk body inflates past any chunk's size"));
    }
    let mut lines = Vec::new();
    let mut rest = raw.as_slice();
    while !rest.is_empty() {
        let timestamp_nanos = u64::from_le_bytes(take(&mut rest, 8)?.try_into().map_err(corrupt)?);
        let id_length = u16::from_le_bytes(take(&mut rest, 2)?.try_into().map_err(corrupt)?);
        let event_id = text_of(take(&mut rest, usize::from(id_length))?)?;
        let text_length = u32::from_le_bytes(take(&mut rest, 4)?.try_into().map_err(corrupt)?);
        let text = text_of(take(&mut rest, text_length as usize)?)?;
        lines.push(ChunkLine {
            timestamp_nanos,
            event_id,
            text,
        });
    }
    Ok(lines)
}

fn take<'a>(rest: &mut &'a [u8], count: usize) -> Result<&'a [u8], StoreError> {
    if rest.len() < count {
        return Err(corrupt("a chunk body ends inside a line"));
    }
    let (taken, after) = rest.split_at(count);
    *rest = after;
    Ok(taken)
}

fn text_of(bytes: &[u8]) -> Result<String, StoreError> {
    String::from_utf8(bytes.to_vec()).map_err(corrupt)
}

fn corrupt(error: impl Into<crate::error::BoxError>) -> StoreError {
    StoreError::Unexpected(error.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stream: (&str, Option<&str>), nanos: u64, id: &str, text: &str) -> LogLine {
        LogLine {
            service_id: "svc".into(),
            deployment_id: stream.0.into(),
            session_id: stream.1.map(str::to_owned),
            event_id: id.into(),
            timestamp_nanos: nanos,
            text: text.into(),
        }
    }

    fn unpacked(chunk: &LogChunk) -> Vec<(u64, String, String)> {
        chunk
            .lines()
            .unwrap()
            .into_iter()
            .map(|line| (line.timestamp_nanos, line.event_id, line.text))
            .collect()
    }

    #[test]
    fn every_character_survives_a_chunk() {
        let lines = vec![
            ChunkLine {
                timestamp_nanos: u64::MAX,
                event_id: "9".repeat(132),
                text: "\u{0}\u{1f}\"\\ é 🚀 \n".into(),
            },
            ChunkLine {
                timestamp_nanos: 0,
                event_id: "1".into(),
                text: String::new(),
            },
            ChunkLine {
                timestamp_nanos: 1_745_008_457_153_744_602,
                event_id: "2".into(),
                text: "é".repeat(MAX_LINE_BYTES / 2),
            },
        ];
        assert_eq!(decode(&encode(&lines)).unwrap(), lines);
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
    }

    #[test]
    fn a_body_that_is_not_a_chunk_is_an_error_not_a_panic() {
        let whole = encode(&[ChunkLine {
            timestamp_nanos: 1,
            event_id: "1".into(),
            text: "hello".into(),
        }]);
        assert!(decode(&whole[..whole.len() - 3]).is_err(), "cut short");
        assert!(decode(b"not deflate at all").is_err());
        // Deflated, but ending inside a line.
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(&[1, 2, 3]).unwrap();
        assert!(decode(&encoder.finish().unwrap()).is_err());
        // Deflated, far larger than any chunk (a decompression bomb).
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(&vec![0u8; 10 << 20]).unwrap();
        assert!(decode(&encoder.finish().unwrap()).is_err());
    }

    #[test]
    fn a_batch_is_packed_per_stream_in_position_order_once_per_line() {
        let (a, b) = (("dep", Some("s1")), ("dep", Some("s2")));
        let lines = vec![
            line(a, 3_000, "3", "third"),
            line(b, 1_500, "9", "other session"),
            line(a, 1_000, "1", "first"),
            line(a, 2_000, "2", "second"),
            line(a, 1_000, "1", "first, delivered twice"),
        ];
        let chunks = pack(&lines, 30);
        assert_eq!(chunks.len(), 2);
        let (first, second) = (&chunks[0], &chunks[1]);
        assert_eq!(first.session_id.as_deref(), Some("s1"));
        assert_eq!(first.last_position, position(3_000, "3"));
        assert_eq!((first.first_nanos, first.line_count), (1_000, 3));
        assert_eq!(
            unpacked(first),
            vec![
                (1_000, "1".into(), "first".into()),
                (2_000, "2".into(), "second".into()),
                (3_000, "3".into(), "third".into()),
            ]
        );
        assert_eq!(second.session_id.as_deref(), Some("s2"));
        assert_eq!(unpacked(second).len(), 1);
        assert_eq!(
            pack(&lines, 30),
            chunks,
            "the same batch packs the same chunks"
        );
    }

    #[test]
    fn chunks_are_cut_at_their_span_count_and_size() {
        let stream = ("dep", None);
        let second = 1_000_000_000;
        // Span: a line more than the bound after the chunk's first starts another chunk.
        let spaced: Vec<_> = [0, MAX_CHUNK_SPAN_NANOS, MAX_CHUNK_SPAN_NANOS + 1]
            .into_iter()
            .enumerate()
            .map(|(i, at)| line(stream, 100 * second + at, &i.to_string(), "x"))
            .collect();
        let counts: Vec<_> = pack(&spaced, 30).iter().map(|c| c.line_count).collect();
        assert_eq!(counts, vec![2, 1]);
        // Count.
        let many: Vec<_> = (0..MAX_CHUNK_LINES + 1)
            .map(|i| line(stream, 100 * second + i as u64, &format!("{i:05}"), "x"))
            .collect();
        let counts: Vec<_> = pack(&many, 30).iter().map(|c| c.line_count).collect();
        assert_eq!(counts, vec![MAX_CHUNK_LINES, 1]);
        // Size: the longest lines one a chunk.
        let long = "a".repeat(MAX_LINE_BYTES);
        let big: Vec<_> = (0..3)
            .map(|i| line(stream, 100 * second + i, &i.to_string(), &long))
            .collect();
        let chunks = pack(&big, 30);
        assert_eq!(chunks.len(), 3);
        assert!(chunks.iter().all(|chunk| chunk.body.len() < 100 * 1024));
    }

    #[test]
    fn each_line_of_a_chunk_expires_its_retention_after_its_own_time() {
        let day = 86_400;
        let second = 1_000_000_000;
        let lines = [
            line(("dep", None), 1_000 * second, "1", "early"),
            line(("dep", None), 1_001 * second, "2", "late"),
        ];
        let chunk = &pack(&lines, 30)[0];
        assert_eq!(chunk.expires_at, 1_001 + 30 * day);
        assert_eq!(chunk.line_expires_at(1_000 * second), 1_000 + 30 * day);
        assert!(chunk.unexpired_at(1_000 + 30 * day - 1));
        assert!(!chunk.unexpired_at(1_000 + 30 * day));
    }
}
