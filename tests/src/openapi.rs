//! openapi.yaml, the published contract, for the tests that check answers against it.

use serde_json::{Value, json};

/// openapi.yaml as JSON.
pub fn document() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Validates `body` against the schema openapi.yaml gives `operation`'s `status` response.
pub fn assert_conforms(document: &Value, method: &str, path: &str, status: u16, body: &Value) {
    let operation = &document["paths"][path][method];
    let mut response = &operation["responses"][status.to_string()];
    assert!(
        !response.is_null(),
        "{method} {path} does not document {status}"
    );
    if let Some(reference) = response["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap();
        response = &document["components"]["responses"][name];
    }
    // A named schema (`$ref`) or one written in place: either way the one subschema.
    let schema = &response["content"]["application/json"]["schema"];
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [schema],
        "components": document["components"],
    });
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&root)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} {status}: {errors:?}\n{body}"
    );
}
