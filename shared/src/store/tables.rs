//! The tables, defined once. The operator command creates them from these definitions on a local
//! endpoint, and a test checks that template.yaml declares the same keys for AWS.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    TimeToLiveSpecification,
};

use super::StoreError;
use super::dynamodb::classify;

/// One table: its logical id in template.yaml, the variable that names it to the functions,
/// its string key attributes and, where items expire, the TTL attribute.
#[derive(Debug, PartialEq, Eq)]
pub struct TableSpec {
    pub logical_id: &'static str,
    pub env_var: &'static str,
    pub partition_key: &'static str,
    pub sort_key: &'static str,
    pub ttl_attribute: Option<&'static str>,
}

/// Agents and their deployments, keyed by the owner's namespace.
pub const AGENTS: TableSpec = TableSpec {
    logical_id: "AgentsTable",
    env_var: crate::config::AGENTS_TABLE,
    partition_key: "pk",
    sort_key: "sk",
    ttl_attribute: None,
};

/// Accounts, namespace claims and API key hashes.
pub const ACCOUNTS: TableSpec = TableSpec {
    logical_id: "AccountsTable",
    env_var: crate::config::ACCOUNTS_TABLE,
    partition_key: "pk",
    sort_key: "sk",
    ttl_attribute: None,
};

pub const ALL: &[&TableSpec] = &[&AGENTS, &ACCOUNTS];

/// Creates `name` from `spec` (on-demand) unless it exists; true when it was created.
pub async fn create_table(
    client: &Client,
    spec: &TableSpec,
    name: &str,
) -> Result<bool, StoreError> {
    let key = |attribute: &str, key_type: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(attribute)
            .key_type(key_type)
            .build()
            .map_err(|e| StoreError::Unexpected(e.into()))
    };
    let definition = |attribute: &str| {
        AttributeDefinition::builder()
            .attribute_name(attribute)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(|e| StoreError::Unexpected(e.into()))
    };
    let result = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key(spec.partition_key, KeyType::Hash)?)
        .key_schema(key(spec.sort_key, KeyType::Range)?)
        .attribute_definitions(definition(spec.partition_key)?)
        .attribute_definitions(definition(spec.sort_key)?)
        .send()
        .await;
    match result {
        Ok(_) => {}
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
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
            let mut expected = vec![
                (spec.partition_key.to_owned(), "S".to_owned()),
                (spec.sort_key.to_owned(), "S".to_owned()),
            ];
            expected.sort();
            assert_eq!(definitions, expected, "{}", spec.logical_id);
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
