//! The tables, defined once. The operator command creates them from these definitions on a local
//! endpoint, and a test checks that template.yaml declares the same keys for AWS.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};

use super::dynamodb::classify;
use crate::error::StoreError;

/// One table: its logical id in template.yaml, the variable that names it to the functions,
/// its string key attributes and, where items expire, the TTL attribute.
#[derive(Debug, PartialEq, Eq)]
pub struct TableSpec {
    pub logical_id: &'static str,
    pub env_var: &'static str,
    pub partition_key: &'static str,
    pub sort_key: &'static str,
    pub ttl_attribute: Option<&'static str>,
    /// Global secondary indexes.
    pub indexes: &'static [IndexSpec],
    /// Whether the table has a stream (new and old images): what the stream publisher reads.
    pub stream: bool,
}

/// A global secondary index: a string partition key, a sort key of `sort_key_type`.
#[derive(Debug, PartialEq, Eq)]
pub struct IndexSpec {
    pub name: &'static str,
    pub partition_key: &'static str,
    pub sort_key: &'static str,
    pub sort_key_type: KeyAttributeType,
    /// All attributes (`true`), or the keys only.
    pub projects_all: bool,
}

/// The type of a key attribute, as an attribute definition names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAttributeType {
    String,
    Number,
}

impl KeyAttributeType {
    pub fn code(self) -> &'static str {
        match self {
            KeyAttributeType::String => "S",
            KeyAttributeType::Number => "N",
        }
    }

    fn scalar(self) -> ScalarAttributeType {
        match self {
            KeyAttributeType::String => ScalarAttributeType::S,
            KeyAttributeType::Number => ScalarAttributeType::N,
        }
    }
}

impl TableSpec {
    /// Every key attribute of the table and its indexes with its type, once each, sorted.
    pub fn key_attributes(&self) -> Vec<(&'static str, KeyAttributeType)> {
        let string = KeyAttributeType::String;
        let mut names = vec![(self.partition_key, string), (self.sort_key, string)];
        for index in self.indexes {
            names.extend([
                (index.partition_key, string),
                (index.sort_key, index.sort_key_type),
            ]);
        }
        names.sort_unstable_by_key(|(name, _)| *name);
        names.dedup_by_key(|(name, _)| *name);
        names
    }
}

/// Agents and their deployments, keyed by the owner's namespace.
pub const AGENTS: TableSpec = TableSpec {
    logical_id: "AgentsTable",
    env_var: crate::config::AGENTS_TABLE,
    partition_key: "pk",
    sort_key: "sk",
    // Idempotency-Key records expire after 24 hours, ended sessions after the log retention.
    ttl_attribute: Some("expiresAt"),
    // Active sessions by deadline (sparse: an ended session leaves it), for the sweep.
    indexes: &[IndexSpec {
        name: super::dynamodb::session_items::DEADLINES_INDEX,
        partition_key: "deadlineShard",
        sort_key: "deadline",
        sort_key_type: KeyAttributeType::Number,
        projects_all: false,
    }],
    // New deployments and sessions, stops asked for and deleted agents are published from it
    // (the stream publisher).
    stream: true,
};

/// Accounts, namespace claims and API key hashes.
pub const ACCOUNTS: TableSpec = TableSpec {
    logical_id: "AccountsTable",
    env_var: crate::config::ACCOUNTS_TABLE,
    partition_key: "pk",
    sort_key: "sk",
    ttl_attribute: None,
    indexes: &[],
    stream: false,
};

/// Log lines, time-keyed per agent, with an index per deployment and per session.
pub const LOGS: TableSpec = TableSpec {
    logical_id: "LogsTable",
    env_var: crate::config::LOGS_TABLE,
    partition_key: "pk",
    sort_key: "sk",
    ttl_attribute: Some("expiresAt"),
    indexes: &[
        IndexSpec {
            name: super::dynamodb::logs::DEPLOYMENT_INDEX,
            partition_key: "dpk",
            sort_key: "sk",
            sort_key_type: KeyAttributeType::String,
            projects_all: true,
        },
        IndexSpec {
            name: super::dynamodb::logs::SESSION_INDEX,
            partition_key: "spk",
            sort_key: "sk",
            sort_key_type: KeyAttributeType::String,
            projects_all: true,
        },
    ],
    stream: false,
};

pub const ALL: &[&TableSpec] = &[&AGENTS, &ACCOUNTS, &LOGS];

/// Creates every table under the names given, leaving those that exist; says of each name
/// whether it was created.
pub async fn create_all(
    client: &Client,
    names: &crate::config::TableNames,
) -> Result<Vec<(String, bool)>, StoreError> {
    let mut outcomes = Vec::with_capacity(ALL.len());
    for spec in ALL {
        let name = names.by_variable(spec.env_var).unwrap_or_default();
        outcomes.push((name.to_owned(), create_table(client, spec, name).await?));
    }
    Ok(outcomes)
}

/// Creates `name` from `spec` (on-demand) unless it exists; true when it was created.
pub async fn create_table(
    client: &Client,
    spec: &TableSpec,
    name: &str,
) -> Result<bool, StoreError> {
    let definition = |(attribute, kind): (&str, KeyAttributeType)| {
        AttributeDefinition::builder()
            .attribute_name(attribute)
            .attribute_type(kind.scalar())
            .build()
            .map_err(|e| StoreError::Unexpected(e.into()))
    };
    let mut request = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key_element(spec.partition_key, KeyType::Hash)?)
        .key_schema(key_element(spec.sort_key, KeyType::Range)?);
    for attribute in spec.key_attributes() {
        request = request.attribute_definitions(definition(attribute)?);
    }
    for index in spec.indexes {
        request = request.global_secondary_indexes(global_index(index)?);
    }
    if spec.stream {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .map_err(|e| StoreError::Unexpected(e.into()))?,
        );
    }
    let result = request.send().await;
    match result {
        Ok(_) => {}
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            if spec.stream {
                ensure_stream(client, name).await?;
            }
            ensure_indexes(client, spec, name).await?;
            return Ok(false);
        }
        Err(error) => return Err(classify(error)),
    }
    if let Some(attribute) = spec.ttl_attribute {
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(attribute)
                    .enabled(true)
                    .build()
                    .map_err(|e| StoreError::Unexpected(e.into()))?,
            )
            .send()
            .await
            .map_err(classify)?;
    }
    Ok(true)
}

fn key_element(attribute: &str, key_type: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(attribute)
        .key_type(key_type)
        .build()
        .map_err(|e| StoreError::Unexpected(e.into()))
}

fn projection(index: &IndexSpec) -> Projection {
    let projection = match index.projects_all {
        true => ProjectionType::All,
        false => ProjectionType::KeysOnly,
    };
    Projection::builder().projection_type(projection).build()
}

fn global_index(index: &IndexSpec) -> Result<GlobalSecondaryIndex, StoreError> {
    GlobalSecondaryIndex::builder()
        .index_name(index.name)
        .key_schema(key_element(index.partition_key, KeyType::Hash)?)
        .key_schema(key_element(index.sort_key, KeyType::Range)?)
        .projection(projection(index))
        .build()
        .map_err(|e| StoreError::Unexpected(e.into()))
}

/// Adds the indexes a table made before them lacks (a local store kept across versions), one
/// at a time as DynamoDB requires.
async fn ensure_indexes(client: &Client, spec: &TableSpec, name: &str) -> Result<(), StoreError> {
    let table = client
        .describe_table()
        .table_name(name)
        .send()
        .await
        .map_err(classify)?;
    let existing: Vec<String> = table
        .table()
        .map(|table| table.global_secondary_indexes())
        .unwrap_or_default()
        .iter()
        .filter_map(|index| index.index_name().map(str::to_owned))
        .collect();
    for index in spec.indexes {
        if existing.iter().any(|name| name == index.name) {
            continue;
        }
        let create = aws_sdk_dynamodb::types::CreateGlobalSecondaryIndexAction::builder()
            .index_name(index.name)
            .set_key_schema(Some(vec![
                key_element(index.partition_key, KeyType::Hash)?,
                key_element(index.sort_key, KeyType::Range)?,
            ]))
            .projection(projection(index))
            .build()
            .map_err(|e| StoreError::Unexpected(e.into()))?;
        let mut update = client
            .update_table()
            .table_name(name)
            .global_secondary_index_updates(
                aws_sdk_dynamodb::types::GlobalSecondaryIndexUpdate::builder()
                    .create(create)
                    .build(),
            );
        for (attribute, kind) in spec.key_attributes() {
            if [index.partition_key, index.sort_key].contains(&attribute) {
                update = update.attribute_definitions(
                    AttributeDefinition::builder()
                        .attribute_name(attribute)
                        .attribute_type(kind.scalar())
                        .build()
                        .map_err(|e| StoreError::Unexpected(e.into()))?,
                );
            }
        }
        update.send().await.map_err(classify)?;
        tracing::info!(table = name, index = index.name, "index added");
    }
    Ok(())
}

/// Turns the stream on for a table made before it had one (a local store kept across versions).
async fn ensure_stream(client: &Client, name: &str) -> Result<(), StoreError> {
    let table = client
        .describe_table()
        .table_name(name)
        .send()
        .await
        .map_err(classify)?;
    let enabled = table
        .table()
        .and_then(|table| table.stream_specification())
        .is_some_and(|stream| stream.stream_enabled());
    if !enabled {
        client
            .update_table()
            .table_name(name)
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::NewAndOldImages)
                    .build()
                    .map_err(|e| StoreError::Unexpected(e.into()))?,
            )
            .send()
            .await
            .map_err(classify)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_yaml::Value;

    fn template() -> Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn strings(value: &Value, pairs: (&str, &str)) -> Vec<(String, String)> {
        value
            .as_sequence()
            .unwrap()
            .iter()
            .map(|item| {
                (
                    item[pairs.0].as_str().unwrap().to_owned(),
                    item[pairs.1].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn template_declares_every_table_as_the_code_creates_it() {
        let template = template();
        for spec in ALL {
            let table = &template["Resources"][spec.logical_id];
            assert_eq!(
                table["Type"].as_str(),
                Some("AWS::DynamoDB::Table"),
                "{}",
                spec.logical_id
            );
            assert_eq!(table["DeletionPolicy"].as_str(), Some("Retain"));
            assert_eq!(table["UpdateReplacePolicy"].as_str(), Some("Retain"));
            let properties = &table["Properties"];
            assert_eq!(properties["BillingMode"].as_str(), Some("PAY_PER_REQUEST"));
            assert_eq!(
                strings(&properties["KeySchema"], ("AttributeName", "KeyType")),
                vec![
                    (spec.partition_key.to_owned(), "HASH".to_owned()),
                    (spec.sort_key.to_owned(), "RANGE".to_owned())
                ]
            );
            let mut definitions = strings(
                &properties["AttributeDefinitions"],
                ("AttributeName", "AttributeType"),
            );
            definitions.sort();
            let expected: Vec<(String, String)> = spec
                .key_attributes()
                .into_iter()
                .map(|(attribute, kind)| (attribute.to_owned(), kind.code().to_owned()))
                .collect();
            assert_eq!(definitions, expected, "{}", spec.logical_id);
            let indexes = properties["GlobalSecondaryIndexes"]
                .as_sequence()
                .cloned()
                .unwrap_or_default();
            assert_eq!(indexes.len(), spec.indexes.len(), "{}", spec.logical_id);
            for (declared, index) in indexes.iter().zip(spec.indexes) {
                assert_eq!(declared["IndexName"].as_str(), Some(index.name));
                assert_eq!(
                    strings(&declared["KeySchema"], ("AttributeName", "KeyType")),
                    vec![
                        (index.partition_key.to_owned(), "HASH".to_owned()),
                        (index.sort_key.to_owned(), "RANGE".to_owned())
                    ]
                );
                let projection = match index.projects_all {
                    true => "ALL",
                    false => "KEYS_ONLY",
                };
                assert_eq!(
                    declared["Projection"]["ProjectionType"].as_str(),
                    Some(projection),
                    "{}",
                    index.name
                );
            }
            let stream = &properties["StreamSpecification"]["StreamViewType"];
            match spec.stream {
                true => assert_eq!(stream.as_str(), Some("NEW_AND_OLD_IMAGES")),
                false => assert!(
                    stream.is_null(),
                    "{} has no stream in code",
                    spec.logical_id
                ),
            }
            let ttl = &properties["TimeToLiveSpecification"];
            match spec.ttl_attribute {
                Some(attribute) => {
                    assert_eq!(ttl["AttributeName"].as_str(), Some(attribute));
                    assert_eq!(ttl["Enabled"].as_bool(), Some(true));
                }
                None => assert!(ttl.is_null(), "{} has no TTL in code", spec.logical_id),
            }
        }
    }

    #[test]
    fn every_function_gets_each_table_it_names_from_the_template() {
        let template = template();
        let resources = template["Resources"].as_mapping().unwrap();
        let mut checked = 0;
        for (_, resource) in resources {
            if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
                continue;
            }
            let variables = &resource["Properties"]["Environment"]["Variables"];
            for spec in ALL {
                if let Some(value) = variables.get(spec.env_var) {
                    let Value::Tagged(tagged) = value else {
                        panic!("{} is not !Ref", spec.env_var)
                    };
                    assert_eq!(tagged.tag.to_string(), "!Ref");
                    assert_eq!(tagged.value.as_str(), Some(spec.logical_id));
                    checked += 1;
                }
            }
        }
        assert!(checked >= 2, "no function receives a table name");
    }
}
