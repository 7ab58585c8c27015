//! What a log line costs to write and keep (contract section 8: at most 0.2 write units a line
//! on average and 1.5 stored bytes a byte of text, for lines of about 200 bytes in CloudWatch
//! batches of 50), held on the items DynamoDB Local stores: read back, sized by DynamoDB's own
//! rules (not by the code that wrote them), counted once in the table and once in each index
//! that holds them. Write units and stored bytes are deterministic, so this is a test; what the
//! other batch and line sizes cost is `make logs-cost`'s table.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use integration_tests::TestStore;
use integration_tests::lines::{Batch, Text, batch_of};
use shared::logs::LogStore;

/// A number's size in DynamoDB: one byte per two significant digits, and one.
fn number_size(text: &str) -> usize {
    let digits = text
        .trim_start_matches('-')
        .replace('.', "")
        .trim_start_matches('0')
        .trim_end_matches('0')
        .len()
        .max(1);
    digits.div_ceil(2) + 1
}

/// An item's size as DynamoDB counts it for write units: each attribute's name and value.
fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    AttributeValue::S(text) => text.len(),
                    AttributeValue::N(number) => number_size(number),
                    AttributeValue::B(bytes) => bytes.as_ref().len(),
                    other => panic!("a log item holds strings, numbers and binary only: {other:?}"),
                }
        })
        .sum()
}

#[tokio::test]
async fn a_batch_of_50_agent_lines_costs_at_most_a_fifth_of_a_write_unit_and_1_5_bytes_a_byte() {
    let store = TestStore::new().await;
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64;
    // One CloudWatch batch of one session's stream: 50 lines of 200 bytes, a line a millisecond.
    let lines = batch_of(Batch {
        service_id: "svc-cost",
        deployment_id: "0b5f8e0e-6d8c-4a4e-9b7e-3f1c2d4e5a6b",
        session_id: "c7e1f0a2-9b3d-4e5f-8a6b-1c2d3e4f5a6b",
        count: 50,
        bytes: 200,
        kind: Text::Agent,
        start: now - 60_000_000_000,
        spacing: 1_000_000,
        first_id: 0,
    });
    let raw: usize = lines.iter().map(|line| line.text.len()).sum();
    // The store call the ingest function makes.
    store.store.put_lines(&lines, 30).await.unwrap();

    let table = store
        .client
        .describe_table()
        .table_name(&store.logs_table)
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    // Each index holds the items that have its partition key (all of them projected).
    let index_keys: Vec<String> = table
        .global_secondary_indexes()
        .iter()
        .map(|index| {
            index
                .key_schema()
                .iter()
                .find(|key| key.key_type() == &aws_sdk_dynamodb::types::KeyType::Hash)
                .unwrap()
                .attribute_name()
                .to_owned()
        })
        .collect();
    let items = store
        .client
        .scan()
        .table_name(&store.logs_table)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    assert!(!items.is_empty());
    let (mut write_units, mut stored) = (0usize, 0usize);
    for item in &items {
        let size = item_size(item);
        let copies = 1 + index_keys
            .iter()
            .filter(|key| item.contains_key(key.as_str()))
            .count();
        write_units += copies * size.div_ceil(1024);
        // Storage bills each copy with 100 bytes of overhead.
        stored += copies * (size + 100);
    }
    let per_line = write_units as f64 / lines.len() as f64;
    let per_byte = stored as f64 / raw as f64;
    println!(
        "50 lines of 200 bytes: {} items, {write_units} write units ({per_line:.3} a line), \
         {stored} bytes stored for {raw} of text ({per_byte:.2} a byte)",
        items.len()
    );
    assert!(per_line <= 0.2, "{per_line:.3} write units a line");
    assert!(per_byte <= 1.5, "{per_byte:.2} stored bytes a byte");
}
