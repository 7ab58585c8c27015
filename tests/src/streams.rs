//! The agents table's stream on DynamoDB Local, read as the stream publisher's mapping reads it.

use dev_data_plane::stream::{LocalStreams, StreamReader, StreamRecord};

use crate::TestStore;

/// A reader of the store's agents table's stream, from its oldest record.
pub async fn reader(store: &TestStore) -> StreamReader {
    let endpoint = std::env::var(shared::config::DYNAMODB_ENDPOINT).unwrap();
    StreamReader::open(LocalStreams::new(&endpoint), &store.agents_table)
        .await
        .unwrap()
}

/// The records the stream holds past the reader's place, once it has given some and then none
/// (at most 20 polls: a stream that never gives any answers none).
pub async fn drained(reader: &mut StreamReader) -> Vec<StreamRecord> {
    let mut records = Vec::new();
    for _ in 0..20 {
        let batch = reader.poll().await.unwrap();
        let empty = batch.is_empty();
        records.extend(batch);
        if empty && !records.is_empty() {
            break;
        }
    }
    records
}
