//! The tables a local store keeps across versions (make run's .local/dynamodb-data): made
//! again from the code's definitions, an agents table from before the deadlines index gains it,
//! and what it holds stays.

use aws_sdk_dynamodb::types::AttributeValue;
use shared::store::tables::{self, TableSpec};

#[tokio::test]
async fn an_agents_table_made_before_the_deadlines_index_gains_it_and_keeps_its_items() {
    let endpoint = std::env::var(shared::config::DYNAMODB_ENDPOINT).unwrap();
    let client = shared::aws::dynamodb_client(Some(&endpoint)).unwrap();
    let name = format!("agents-before-{}", uuid::Uuid::new_v4().simple());
    let before = TableSpec {
        indexes: &[],
        ..tables::AGENTS
    };
    assert!(tables::create_table(&client, &before, &name).await.unwrap());
    client
        .put_item()
        .table_name(&name)
        .item("pk", AttributeValue::S("NS#kept".into()))
        .item("sk", AttributeValue::S("AGENT#kept".into()))
        .send()
        .await
        .unwrap();

    let created = tables::create_table(&client, &tables::AGENTS, &name)
        .await
        .unwrap();
    assert!(!created, "the table was there");
    let table = client
        .describe_table()
        .table_name(&name)
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    let indexes: Vec<&str> = table
        .global_secondary_indexes()
        .iter()
        .filter_map(|index| index.index_name())
        .collect();
    assert_eq!(
        indexes,
        [shared::store::dynamodb::session_items::DEADLINES_INDEX]
    );
    let kept = client
        .get_item()
        .table_name(&name)
        .key("pk", AttributeValue::S("NS#kept".into()))
        .key("sk", AttributeValue::S("AGENT#kept".into()))
        .send()
        .await
        .unwrap();
    assert!(kept.item.is_some());
    assert!(
        !tables::create_table(&client, &tables::AGENTS, &name)
            .await
            .unwrap(),
        "and once it has it, nothing more is added"
    );
}
