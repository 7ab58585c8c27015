//! Log lines as agents write them, for the tests and `make logs-cost`: a stream's batch of
//! agent-like text (a few kinds of line, words and numbers that vary) or of random characters,
//! which no compression shortens much (the worst case). Deterministic: the same at every run.

use shared::logs::LogLine;

/// What lines say: as an agent writes them (a few kinds of line, words and numbers that vary),
/// or random characters, which no compression shortens much (the worst case).
#[derive(Clone, Copy)]
pub enum Text {
    Agent,
    Random,
}

/// A line of about `bytes` bytes.
pub fn text_of(kind: Text, i: usize, bytes: usize) -> String {
    let mut text = match kind {
        Text::Agent => {
            let kinds = [
                "DEBUG | pipecat.transports.daily:on_audio_frame - received audio frame",
                "DEBUG | pipecat.services.openai:_stream_chat_completions - generating chat",
                "INFO | pipecat.processors.metrics:ttfb - OpenAILLMService#0 time to first byte",
                "DEBUG | pipecat.transports.base_output:_bot_started_speaking - bot speaking",
            ];
            format!(
                "2026-11-23 19:51:{:02}.{:03} | {} len={} sample_rate=16000 seq={i}",
                i / 1000 % 60,
                i % 1000,
                kinds[i % kinds.len()],
                320 + i % 17 * 2
            )
        }
        Text::Random => String::new(),
    };
    // A small deterministic generator: the table is the same at every run.
    let mut state = (i as u64)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ";
    let words = [
        " frame",
        " codec=opus",
        " jitter_ms=",
        " buffer",
        " ok",
        " vad=",
        " rms=",
    ];
    while text.len() < bytes {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        match kind {
            Text::Agent => {
                text.push_str(words[(state >> 33) as usize % words.len()]);
                text.push_str(&((state >> 40) % 1000).to_string());
            }
            Text::Random => text.push(alphabet[(state >> 33) as usize % alphabet.len()] as char),
        }
    }
    text.truncate(bytes);
    text
}

/// A stream's batch: `count` lines of `bytes` bytes, `spacing` nanoseconds apart from `start`.
pub struct Batch<'a> {
    pub service_id: &'a str,
    pub deployment_id: &'a str,
    pub session_id: &'a str,
    pub count: usize,
    pub bytes: usize,
    pub kind: Text,
    pub start: u64,
    pub spacing: u64,
    pub first_id: usize,
}

pub fn batch_of(batch: Batch<'_>) -> Vec<LogLine> {
    let Batch {
        service_id,
        deployment_id,
        session_id,
        count,
        bytes,
        kind,
        start,
        spacing,
        first_id,
    } = batch;
    (0..count)
        .map(|i| LogLine {
            service_id: service_id.to_owned(),
            deployment_id: deployment_id.to_owned(),
            session_id: Some(session_id.to_owned()),
            // CloudWatch's event ids: 56 digits, rising.
            event_id: format!("{:056}", 38_000_000 + first_id + i),
            timestamp_nanos: start + i as u64 * spacing,
            text: text_of(kind, first_id + i, bytes),
        })
        .collect()
}
