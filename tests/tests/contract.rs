//! openapi.yaml is the published contract: real responses of the handlers are validated against
//! its schemas, and its routes agree with the template's and with `cargo lambda watch`'s router.

use std::collections::BTreeSet;

use integration_tests::{TestStore, bearer, direct_create};
use lambda_http::Body;
use serde_json::{Value, json};

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn openapi() -> Value {
    serde_yaml::from_str(&read("openapi.yaml")).unwrap()
}

/// Every (METHOD, path) the document declares, with the /v1 prefix of its server.
fn openapi_routes(document: &Value) -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        for method in operations.as_object().unwrap().keys() {
            routes.insert((method.to_uppercase(), format!("/v1{path}")));
        }
    }
    routes
}

#[test]
fn routes_agree_across_router_template_and_openapi() {
    let manifest: toml::Value = toml::from_str(&read("Cargo.toml")).unwrap();
    let router = manifest["workspace"]["metadata"]["lambda"]["watch"]["router"]
        .as_table()
        .unwrap();
    let mut watch = BTreeSet::new();
    let mut watch_functions = BTreeSet::new();
    for (path, targets) in router {
        for target in targets.as_array().unwrap() {
            watch.insert((target["method"].as_str().unwrap().to_owned(), path.clone()));
            watch_functions.insert((
                target["method"].as_str().unwrap().to_owned(),
                path.clone(),
                target["function"].as_str().unwrap().to_owned(),
            ));
        }
    }

    let template: serde_yaml::Value = serde_yaml::from_str(&read("template.yaml")).unwrap();
    let mut sam = BTreeSet::new();
    let mut sam_functions = BTreeSet::new();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap()
            .to_owned();
        let Some(events) = resource["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events {
            if event["Type"].as_str() != Some("HttpApi") {
                continue;
            }
            let method = event["Properties"]["Method"]
                .as_str()
                .unwrap()
                .to_uppercase();
            let path = event["Properties"]["Path"].as_str().unwrap().to_owned();
            sam.insert((method.clone(), path.clone()));
            sam_functions.insert((method, path, binary.clone()));
        }
    }

    let documented = openapi_routes(&openapi());
    assert_eq!(
        watch, sam,
        "Cargo.toml router and template.yaml routes differ"
    );
    assert_eq!(
        sam, documented,
        "template.yaml routes and openapi.yaml paths differ"
    );
    assert_eq!(
        watch_functions, sam_functions,
        "a route goes to different functions"
    );
    assert_eq!(documented.len(), 2);
}

/// Validates `body` against the schema openapi.yaml gives `operation`'s `status` response.
fn assert_conforms(document: &Value, method: &str, path: &str, status: u16, body: &Value) {
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
    let schema = &response["content"]["application/json"]["schema"];
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": schema["$ref"],
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

fn parts(response: lambda_http::Response<Body>) -> (u16, Value) {
    integration_tests::parts(response)
}

#[tokio::test]
async fn create_responses_conform_to_the_document() {
    let document = openapi();
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    let auth = bearer(&key);
    let create = |body: Value| direct_create(Some(&auth), &body);
    let handle = |request| create_agent::handle(&store.store, &store.store, request);

    let full = json!({"serviceName": "video-bot", "image": "ghcr.io/acme/bot:2.0", "imagePullSecretSet": "pull",
        "secretSet": "env", "autoScaling": {"minAgents": 1, "maxAgents": 5}, "enableNoise": true,
        "noiseViva": {"audioFilter": "tel"}, "agentProfile": "agent-2x", "enableManagedKeys": true});
    let mut seen = BTreeSet::new();
    for (request, expected) in [
        (
            create(json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:1.0"})),
            201,
        ),
        (create(full), 201),
        (
            create(json!({"serviceName": "my-agent", "image": "ghcr.io/acme/agent:1.0"})),
            409,
        ),
        (create(json!({"serviceName": "Bad", "image": "x"})), 400),
        (create(json!([])), 400),
        (direct_create(None, &json!({})), 401),
        (
            create(json!({"serviceName": "x".repeat(70_000), "image": "a"})),
            413,
        ),
    ] {
        let (status, body) = parts(handle(request).await);
        assert_eq!(status, expected, "{body}");
        assert_conforms(&document, "post", "/agents", status, &body);
        seen.insert(status);
    }
    let mut form = create(json!({"serviceName": "a", "image": "a"}));
    form.headers_mut()
        .insert("content-type", "text/plain".parse().unwrap());
    let (status, body) = parts(handle(form).await);
    assert_eq!(status, 415);
    assert_conforms(&document, "post", "/agents", status, &body);
    assert_eq!(seen.len(), 5);
}

#[tokio::test]
async fn logs_responses_conform_to_the_document() {
    let document = openapi();
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    let (status, _) = parts(
        create_agent::handle(
            &store.store,
            &store.store,
            direct_create(
                Some(&bearer(&key)),
                &json!({"serviceName": "bot", "image": "a"}),
            ),
        )
        .await,
    );
    assert_eq!(status, 201);
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64;
    let lines: Vec<shared::logs::LogLine> = (0..15)
        .map(|i| shared::logs::LogLine {
            namespace: caller.namespace.clone(),
            agent: "bot".into(),
            deployment_id: "dep".into(),
            session_id: (i % 2 == 0).then(|| "s".to_owned()),
            event_id: i.to_string(),
            timestamp_nanos: now - 1_000_000_000 + i,
            text: format!("line {i}"),
        })
        .collect();
    use shared::store::LogStore;
    store.store.put_lines(&lines, 30).await.unwrap();

    let settings = agent_logs::Settings { retention_days: 30 };
    for (agent, params, expected) in [
        ("bot", vec![], 200),
        (
            "bot",
            vec![("limit", "3"), ("order", "asc"), ("sessionId", "s")],
            200,
        ),
        ("bot", vec![("limit", "0")], 400),
        ("ghost", vec![], 404),
    ] {
        let params: Vec<(&str, String)> =
            params.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        let request = integration_tests::logs_request(&key, agent, &params);
        let (status, body) =
            parts(agent_logs::handle(&store.store, &store.store, settings, request).await);
        assert_eq!(status, expected, "{body}");
        assert_conforms(&document, "get", "/agents/{agentName}/logs", status, &body);
    }
}

#[test]
fn the_documented_image_pattern_agrees_with_the_validator() {
    let document = openapi();
    let pattern =
        document["components"]["schemas"]["CreateAgentRequest"]["properties"]["image"]["pattern"]
            .as_str()
            .unwrap();
    let validator =
        jsonschema::validator_for(&json!({"type": "string", "pattern": pattern, "maxLength": 512}))
            .unwrap();
    let digest = "0".repeat(64);
    for image in [
        "ghcr.io/acme/agent:1.0".to_owned(),
        "agent".to_owned(),
        "localhost:5000/a/b/c:v1".to_owned(),
        format!("acme/agent@sha256:{digest}"),
        format!("acme/agent:1@sha256:{digest}"),
        "ghcr.io/Acme/agent".to_owned(),
        "acme/agent:".to_owned(),
        "acme/agent@sha256:abc".to_owned(),
        format!("acme/agent@sha256:{}", "A".repeat(64)),
        "acme//agent".to_owned(),
        "Registry.Example.com/acme/agent".to_owned(),
        "acme/agent:t\u{e5}g".to_owned(),
        "a__b/c-d.e:1".to_owned(),
        "a___b".to_owned(),
        "a--b".to_owned(),
    ] {
        let documented = validator.is_valid(&json!(image));
        let accepted = shared::validation::check_image_reference(&image).is_ok();
        assert_eq!(documented, accepted, "{image}");
    }
}

/// Every fixture in events/ is loaded by some test (so none rots unseen).
#[test]
fn every_event_fixture_is_used_by_a_test() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let mut sources = String::new();
    let mut directories = vec![
        format!("{root}/functions"),
        format!("{root}/tests"),
        format!("{root}/shared"),
    ];
    while let Some(directory) = directories.pop() {
        for entry in std::fs::read_dir(&directory).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.ends_with("target") {
                directories.push(path.to_string_lossy().into_owned());
            } else if path.extension().is_some_and(|e| e == "rs") {
                sources.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut fixtures = 0;
    for entry in std::fs::read_dir(format!("{root}/events"))
        .unwrap()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            sources.contains(&format!("{name}\"")),
            "events/{name} is not loaded by any test"
        );
        fixtures += 1;
    }
    assert!(fixtures >= 14);
}
