//! openapi.yaml is the published contract: real responses of the handlers are validated against
//! its schemas, and its routes agree with the template's and with `cargo lambda watch`'s router.

use std::collections::BTreeSet;

use integration_tests::openapi::{assert_conforms, document as openapi};
use integration_tests::{TestStore, bearer, direct_create};
use lambda_http::Body;
use serde_json::{Value, json};
use shared::logs::LogStore;
use shared::secrets::SetType;

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Every (METHOD, path) the document declares, with the /v1 prefix of its server.
fn openapi_routes(document: &Value) -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        // A path item also holds what its operations share (`parameters`).
        for method in operations.as_object().unwrap().keys() {
            if method != "parameters" {
                routes.insert((method.to_uppercase(), format!("/v1{path}")));
            }
        }
    }
    routes
}

/// The methods an API Gateway route can name (its `ANY` stands for all of them).
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Methods no API Gateway route can name (the gateway refuses them itself); cargo lambda watch
/// routes them too, to the function that answers the path's other methods 405.
const NON_GATEWAY_METHODS: [&str; 2] = ["TRACE", "QUERY"];

/// (path, method) → the function (binary) that receives it.
type Routing = std::collections::BTreeMap<(String, String), String>;

/// How template.yaml's REST API routes every method of every path: a method's own route, or the
/// `ANY` route of a path that one function serves whole. `ANY` beside method routes of another
/// function is refused: API Gateway prefers the method route, but sam local lets whichever it
/// mounts last win, so `make sam-local` would send an update to the wrong function.
fn template_routing() -> Routing {
    let template: serde_yaml::Value = serde_yaml::from_str(&read("template.yaml")).unwrap();
    let mut routing = Routing::new();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap();
        let Some(events) = resource["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events {
            if event["Type"].as_str() != Some("Api") {
                continue;
            }
            let path = event["Properties"]["Path"].as_str().unwrap().to_owned();
            let methods = match event["Properties"]["Method"].as_str().unwrap() {
                "ANY" => METHODS.to_vec(),
                method => vec![method],
            };
            for method in methods {
                let earlier = routing.insert((path.clone(), method.to_owned()), binary.to_owned());
                assert!(
                    earlier.is_none_or(|earlier| earlier == binary),
                    "{method} {path}: one function (an ANY route only on a path one function serves)"
                );
            }
        }
    }
    routing
}

/// How `cargo lambda watch`'s router (Cargo.toml) routes them: one function for a path, or one
/// per method.
fn watch_routing() -> Routing {
    let manifest: toml::Value = toml::from_str(&read("Cargo.toml")).unwrap();
    let router = manifest["workspace"]["metadata"]["lambda"]["watch"]["router"]
        .as_table()
        .unwrap();
    let mut routing = Routing::new();
    for (path, route) in router {
        match route {
            toml::Value::String(function) => {
                for method in METHODS.iter().chain(&NON_GATEWAY_METHODS) {
                    routing.insert((path.clone(), (*method).to_owned()), function.clone());
                }
            }
            toml::Value::Array(routes) => {
                for route in routes {
                    let method = route["method"].as_str().unwrap().to_owned();
                    let function = route["function"].as_str().unwrap().to_owned();
                    routing.insert((path.clone(), method), function);
                }
            }
            other => panic!("route {path}: {other:?}"),
        }
    }
    routing
}

/// Every method of every path reaches the same function through the gateway and through `cargo
/// lambda watch`: a documented operation its function, the others a function that answers 405
/// (`wrong_methods_are_405_with_allow` below).
#[test]
fn routes_agree_across_router_template_and_openapi() {
    let gateway = template_routing();
    let mut watch = watch_routing();
    let non_gateway: Routing = watch
        .extract_if(.., |(_, method), _| {
            NON_GATEWAY_METHODS.contains(&method.as_str())
        })
        .collect();
    for ((path, method), function) in &non_gateway {
        assert_eq!(
            Some(function),
            watch.get(&(path.clone(), "OPTIONS".to_owned())),
            "{method} {path}: the function that answers the path's other methods 405"
        );
    }
    assert_eq!(
        non_gateway.len(),
        NON_GATEWAY_METHODS.len()
            * watch
                .keys()
                .map(|(path, _)| path)
                .collect::<BTreeSet<_>>()
                .len(),
        "cargo lambda watch routes every non-gateway method on every path"
    );
    assert_eq!(
        watch, gateway,
        "Cargo.toml's router and template.yaml differ"
    );
    let documented = openapi_routes(&openapi());
    for (method, path) in &documented {
        let route = (path.clone(), method.clone());
        assert!(
            watch.contains_key(&route),
            "{method} {path} is not in the router"
        );
        assert!(
            gateway.contains_key(&route),
            "{method} {path} is not in the template"
        );
    }
    let routed_paths: BTreeSet<&String> = gateway.keys().map(|(path, _)| path).collect();
    let documented_paths: BTreeSet<&String> = documented.iter().map(|(_, path)| path).collect();
    assert_eq!(
        routed_paths, documented_paths,
        "template.yaml routes and openapi.yaml paths differ"
    );
    let every = |path: &str| {
        METHODS
            .iter()
            .all(|method| gateway.contains_key(&(path.to_owned(), (*method).to_owned())))
    };
    for path in &routed_paths {
        assert!(
            every(path),
            "{path}: every method reaches a function through the gateway"
        );
    }
    assert_eq!(
        documented,
        BTreeSet::from([
            ("GET".to_owned(), "/v1/agents".to_owned()),
            ("POST".to_owned(), "/v1/agents".to_owned()),
            ("PUT".to_owned(), "/v1/agents".to_owned()),
            ("GET".to_owned(), "/v1/agents/{agentName}".to_owned()),
            ("POST".to_owned(), "/v1/agents/{agentName}".to_owned()),
            ("DELETE".to_owned(), "/v1/agents/{agentName}".to_owned()),
            ("GET".to_owned(), "/v1/agents/{agentName}/logs".to_owned()),
            (
                "GET".to_owned(),
                "/v1/agents/{agentName}/deployments".to_owned()
            ),
            ("GET".to_owned(), "/v1/properties".to_owned()),
            ("GET".to_owned(), "/v1/regions".to_owned()),
            ("GET".to_owned(), "/v1/organizations".to_owned()),
            ("GET".to_owned(), "/v1/keys".to_owned()),
            ("POST".to_owned(), "/v1/keys".to_owned()),
            ("DELETE".to_owned(), "/v1/keys/{keyId}".to_owned()),
            ("GET".to_owned(), "/v1/secrets".to_owned()),
            ("GET".to_owned(), "/v1/secrets/{setName}".to_owned()),
            ("PUT".to_owned(), "/v1/secrets/{setName}".to_owned()),
            ("DELETE".to_owned(), "/v1/secrets/{setName}".to_owned()),
            (
                "DELETE".to_owned(),
                "/v1/secrets/{setName}/{secretKey}".to_owned()
            ),
            ("POST".to_owned(), "/v1/public/{agentName}/start".to_owned()),
            (
                "GET".to_owned(),
                "/v1/agents/{agentName}/sessions".to_owned()
            ),
            (
                "GET".to_owned(),
                "/v1/agents/{agentName}/sessions/{sessionId}".to_owned()
            ),
            (
                "DELETE".to_owned(),
                "/v1/agents/{agentName}/sessions/{sessionId}".to_owned()
            ),
        ])
    );
}

/// Every gateway event in events/ is the REST API's (payload 1.0) request of a template route:
/// its resource and method as a route of the template declares them, so that what the fixtures
/// show is what the deployed gateway sends. The payload 2.0 events are what `cargo lambda watch`
/// and function URLs send: no authorizer context, the function checks the key.
#[test]
fn fixtures_name_the_route_the_template_gives_their_request() {
    let routing = template_routing();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../events");
    let (mut gateway, mut direct) = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let event: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let context = &event["requestContext"];
        if event["version"] == "2.0" {
            assert!(
                context["authorizer"].is_null(),
                "{}: a payload 2.0 request never carries an authorizer's context",
                path.display()
            );
            direct += 1;
            continue;
        }
        let (Some(resource), Some(method)) =
            (event["resource"].as_str(), event["httpMethod"].as_str())
        else {
            continue;
        };
        assert_eq!(
            (Some(resource), Some(method)),
            (
                context["resourcePath"].as_str(),
                context["httpMethod"].as_str()
            ),
            "{}: the request context names the request's resource and method",
            path.display()
        );
        assert!(
            routing.contains_key(&(resource.to_owned(), method.to_owned())),
            "{}: {method} {resource} is not a route of template.yaml",
            path.display()
        );
        if event["type"] != "REQUEST" {
            assert!(
                context["authorizer"]["principalId"] == context["authorizer"]["accountId"],
                "{}: the authorizer's principal is the account",
                path.display()
            );
        }
        gateway += 1;
    }
    assert!(gateway >= 20, "the gateway events of events/ ({gateway})");
    assert!(direct >= 1, "the direct events of events/ ({direct})");
}

fn parts(response: lambda_http::Response<Body>) -> (u16, Value) {
    integration_tests::parts(response)
}

#[tokio::test]
async fn create_responses_conform_to_the_document() {
    let document = openapi();
    let store = TestStore::new().await;
    let (caller, key) = store.account_with_key("acme").await;
    store
        .make_sets(
            &caller.namespace,
            &[("pull", SetType::ImagePullSecret), ("env", SetType::Secret)],
        )
        .await;
    let auth = bearer(&key);
    let create = |body: Value| direct_create(Some(&auth), &body);
    let handle = |request| {
        create_agent::handle(&store.store, &store.store, integration_tests::MODE, request)
    };

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

    // A replay and a reused key.
    let with_key = |body: Value| {
        let mut request = create(body);
        request
            .headers_mut()
            .insert("idempotency-key", "contract-key".parse().unwrap());
        request
    };
    let body = json!({"serviceName": "keyed", "image": "ghcr.io/acme/agent:1.0"});
    for expected in [201, 201] {
        let (status, answer) = parts(handle(with_key(body.clone())).await);
        assert_eq!(status, expected, "{answer}");
        assert_conforms(&document, "post", "/agents", status, &answer);
    }
    let (status, answer) =
        parts(handle(with_key(json!({"serviceName": "other", "image": "a"}))).await);
    assert_eq!(status, 422, "{answer}");
    assert_conforms(&document, "post", "/agents", status, &answer);
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
            integration_tests::MODE,
            direct_create(
                Some(&bearer(&key)),
                &json!({"serviceName": "bot", "image": "a"}),
            ),
        )
        .await,
    );
    assert_eq!(status, 201);
    let service_id = store.service_of(&caller.namespace, "bot").await;
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64;
    let lines: Vec<shared::logs::LogLine> = (0..15)
        .map(|i| shared::logs::LogLine {
            service_id: service_id.clone(),
            deployment_id: "dep".into(),
            session_id: (i % 2 == 0).then(|| "s".to_owned()),
            event_id: i.to_string(),
            timestamp_nanos: now - 1_000_000_000 + i,
            text: format!("line {i}"),
        })
        .collect();
    store.store.put_lines(&lines, 30).await.unwrap();

    let settings = integration_tests::LOGS_SETTINGS;
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
        let (status, body) = parts(
            agent_logs::handle(&store.store, &store.store, &store.store, settings, request).await,
        );
        assert_eq!(status, expected, "{body}");
        assert_conforms(&document, "get", "/agents/{agentName}/logs", status, &body);
    }
}

/// GET /v1/agents/{agentName}/deployments and the anchor CLI's reads (properties, regions,
/// organizations): each answer of the handlers is the document's.
#[tokio::test]
async fn deployments_and_account_reads_conform_to_the_document() {
    let document = openapi();
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    let public = store.public_key("acme").await;
    let s = &store.store;
    let first = json!({"serviceName": "bot", "image": "ghcr.io/acme/agent:1.0"});
    let created = create_agent::handle(
        s,
        s,
        integration_tests::MODE,
        direct_create(Some(&bearer(&key)), &first),
    )
    .await;
    assert_eq!(created.status(), 201);
    let second = json!({"image": "ghcr.io/acme/agent:2.0"});
    let update = integration_tests::agent_request("POST", &key, "bot", Some(&second));
    assert_eq!(
        update_agent::handle(s, s, integration_tests::MODE, update)
            .await
            .status(),
        200
    );

    let list = |agent: &str, query: &[(&str, &str)], key: &shared::auth::ApiKey| {
        let mut request = integration_tests::agent_request("GET", key, agent, None);
        *request.uri_mut() = format!("https://api.example.com/v1/agents/{agent}/deployments")
            .parse()
            .unwrap();
        let query = query
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()));
        lambda_http::RequestExt::with_query_string_parameters(
            request,
            query.collect::<std::collections::HashMap<_, _>>(),
        )
    };
    let path = "/agents/{agentName}/deployments";
    let cursor_key = &integration_tests::CURSOR_KEY;
    for (agent, query, key, expected) in [
        ("bot", &[][..], &key, 200),
        ("bot", &[("limit", "1")][..], &key, 200),
        ("bot", &[("limit", "0")][..], &key, 400),
        ("bot", &[("page", "2")][..], &key, 400),
        ("ghost", &[][..], &key, 404),
        ("bot", &[][..], &public, 403),
    ] {
        let request = list(agent, query, key);
        let (status, body) = parts(list_deployments::handle(s, s, cursor_key, request).await);
        assert_eq!(status, expected, "{agent} {query:?}: {body}");
        assert_conforms(&document, "get", path, status, &body);
        if query == [("limit", "1")] {
            assert!(body["nextCursor"].is_string(), "{body}");
        }
    }

    for path in ["/properties", "/regions", "/organizations"] {
        for (key, expected) in [(&key, 200), (&public, 403)] {
            let mut request = integration_tests::agent_request("GET", key, "", None);
            *request.uri_mut() = format!("https://api.example.com/v1{path}").parse().unwrap();
            let (status, body) = parts(account_info::handle(s, "us-east-1", request).await);
            assert_eq!(status, expected, "{path}: {body}");
            assert_conforms(&document, "get", path, status, &body);
        }
    }
}

/// The keys routes' answers, a person's (the fixtures' context) and an API key's, are the
/// document's.
#[tokio::test]
async fn keys_responses_conform_to_the_document() {
    let document = openapi();
    let store = TestStore::new().await;
    let s = &store.store;
    shared::testing::seed_fixture_person(s).await.unwrap();
    let request = shared::testing::fixture_request;
    let with_body = |body: &str| {
        let mut request = request("keys-create.json");
        *request.body_mut() = Body::Text(body.to_owned());
        request
    };
    for (request, method, path, expected) in [
        (request("keys-create.json"), "post", "/keys", 201),
        (
            with_body(r#"{"type": "public", "name": "web"}"#),
            "post",
            "/keys",
            201,
        ),
        (with_body(r#"{"kind": "private"}"#), "post", "/keys", 400),
        (request("keys-list.json"), "get", "/keys", 200),
        (request("keys-revoke.json"), "delete", "/keys/{keyId}", 200),
        (request("keys-revoke.json"), "delete", "/keys/{keyId}", 200),
        (
            request("account-info-organizations.json"),
            "get",
            "/keys",
            403,
        ),
    ] {
        let (status, body) = parts(keys::handle(s, request).await);
        assert_eq!(status, expected, "{method} {path}: {body}");
        assert_conforms(&document, method, path, status, &body);
    }
    let mut unknown = request("keys-revoke.json");
    *unknown.uri_mut() = "/v1/keys/000000000000".parse().unwrap();
    let unknown = lambda_http::RequestExt::with_path_parameters(
        unknown,
        std::collections::HashMap::from([("keyId".to_owned(), "000000000000".to_owned())]),
    );
    let (status, body) = parts(keys::handle(s, unknown).await);
    assert_eq!(status, 404, "{body}");
    assert_conforms(&document, "delete", "/keys/{keyId}", status, &body);
}

/// The response of the function `binary` to a request.
async fn call_function(
    binary: &str,
    store: &TestStore,
    request: lambda_http::Request,
) -> lambda_http::Response<Body> {
    let (s, settings) = (&store.store, integration_tests::LOGS_SETTINGS);
    match binary {
        "create-agent" => create_agent::handle(s, s, integration_tests::MODE, request).await,
        "list-agents" => list_agents::handle(s, s, &integration_tests::CURSOR_KEY, request).await,
        "get-agent" => get_agent::handle(s, s, request).await,
        "update-agent" => update_agent::handle(s, s, integration_tests::MODE, request).await,
        "delete-agent" => {
            let retention = shared::session::lifecycle::SessionRetention::days(30);
            delete_agent::handle(s, s, s, retention, request).await
        }
        "agent-logs" => agent_logs::handle(s, s, s, settings, request).await,
        "list-deployments" => {
            list_deployments::handle(s, s, &integration_tests::CURSOR_KEY, request).await
        }
        "account-info" => account_info::handle(s, "us-east-1", request).await,
        "keys" => keys::handle(s, request).await,
        "put-secret-set" => {
            let kms = shared::testing::data_keys::FakeKms::default();
            put_secret_set::handle(s, &kms, s, "us-east-1", request).await
        }
        "list-secret-sets" => {
            let key = &integration_tests::CURSOR_KEY;
            list_secret_sets::handle(s, s, key, "us-east-1", request).await
        }
        "get-secret-set" => get_secret_set::handle(s, s, "us-east-1", request).await,
        "delete-secret-set" => delete_secret_set::handle(s, s, request).await,
        "delete-secret" => delete_secret::handle(s, s, request).await,
        "start-session" => {
            let no_wait = shared::session::lifecycle::StartWait(std::time::Duration::ZERO);
            start_session::handle(s, s, s, no_wait, request).await
        }
        "get-session" => get_session::handle(s, s, s, request).await,
        "stop-session" => stop_session::handle(s, s, s, request).await,
        "list-sessions" => {
            list_sessions::handle(s, s, s, &integration_tests::CURSOR_KEY, request).await
        }
        other => panic!("no HTTP function {other}"),
    }
}

/// Through the gateway every method of a path reaches a function (see the routes test); the
/// methods the document does not list are answered 405 with the path's documented methods in
/// `Allow` and the contract's error body, and nothing is written.
#[tokio::test]
async fn wrong_methods_are_405_with_allow() {
    let document = openapi();
    let store = TestStore::new().await;
    let (_, key) = store.account_with_key("acme").await;
    // /v1/keys answers a person only (an API key is a 403 before the method is looked at).
    shared::testing::seed_fixture_person(&store.store)
        .await
        .unwrap();
    let documented = openapi_routes(&document);
    for ((path, method), function) in template_routing() {
        if documented.contains(&(method.clone(), path.clone())) {
            continue;
        }
        let allow: Vec<&str> = METHODS
            .iter()
            .copied()
            .filter(|m| documented.contains(&((*m).to_owned(), path.clone())))
            .collect();
        let concrete = path
            .replace("{agentName}", "my-agent")
            .replace("{setName}", "my-set")
            .replace("{secretKey}", "MY_KEY")
            .replace("{keyId}", shared::testing::FIXTURE_KEY_ID);
        let mut request = if function == "keys" {
            let fixture = if path.contains("{keyId}") {
                "keys-revoke.json"
            } else {
                "keys-list.json"
            };
            let mut request = shared::testing::fixture_request(fixture);
            *request.method_mut() = method.parse().unwrap();
            request
        } else {
            integration_tests::agent_request(&method, &key, "my-agent", None)
        };
        *request.uri_mut() = format!("https://api.example.com{concrete}")
            .parse()
            .unwrap();
        let response = call_function(&function, &store, request).await;
        assert_eq!(
            response.headers()["allow"],
            allow.join(", ").as_str(),
            "{method} {path}"
        );
        let (status, body) = parts(response);
        assert_eq!(status, 405, "{method} {path} ({function}): {body}");
        assert_eq!(body["code"], "METHOD_NOT_ALLOWED");
        assert_conforms(&document, "post", "/agents", 400, &body);
    }
    assert_eq!(
        store.item_count(&store.agents_table).await,
        0,
        "a 405 writes nothing"
    );
}

#[test]
fn the_documented_image_pattern_agrees_with_the_validator() {
    let document = openapi();
    let pattern =
        document["components"]["schemas"]["CreateAgentRequest"]["properties"]["image"]["pattern"]
            .as_str()
            .unwrap();
    assert_eq!(
        pattern,
        shared::validation::IMAGE_REFERENCE_PATTERN,
        "openapi.yaml publishes the validator's own grammar"
    );
    // The same pattern under JSON Schema's regex dialect, which clients validate with.
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
        // Registries often cap a repository name at 255 characters; the contract's only bound is
        // 512 for the whole reference.
        format!("ghcr.io/acme/{}:1.0", "a".repeat(300)),
        format!("ghcr.io/acme/{}:1.0", "a".repeat(600)),
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
