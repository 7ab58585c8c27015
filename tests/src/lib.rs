//! Harness for the end-to-end tests: each test gets its own freshly created tables on the
//! DynamoDB Local that `make test` started (its address in `DYNAMODB_ENDPOINT`), and talks to
//! it through the real handlers and the real adapter.

use lambda_http::Request;
use shared::auth::{ApiKey, Principal};
use shared::config::TableNames;
use shared::store::dynamodb::DynamoStore;
use shared::store::tables;

/// moto's server and a DynamoDB Local on disk, for the tests that need their own.
pub mod emulators;

/// openapi.yaml and answers checked against its schemas.
pub mod openapi;

/// Agent-like log lines, for the tests and `make logs-cost`.
pub mod lines;

/// The contract's answer to a generated request, worked out independently of the service.
pub mod contract_model;

/// template.yaml, read as the template tests read it.
pub mod template;

/// A running stack over HTTP, for the suites under e2e/.
pub mod stack;

/// The stack's user pool: people invited, signed in, and tokens it never issued.
pub mod people;

/// A person of an account, their token, and requests with it, for the handler tests.
pub mod tokens;

/// Retries, polls and walks bounded in tries and time, failing with what they waited for.
pub mod bounded;

/// moto's EventBridge as the judge of the template's event patterns.
pub mod ruled_bus;

/// The agents table's stream on DynamoDB Local.
pub mod streams;

/// The README's walkthroughs, run as written.
pub mod walkthrough;

/// The `docker` command, for the suites on the Docker Engine.
pub mod docker;

/// A stand-in for the internet: a network namespace with a server, routed from the host.
pub mod internet;

/// moto's API Gateway as the stack deploys it, its requests recorded, and accounts' key checks.
pub mod apigateway;

/// The engine the handlers under test name in manifests: what a stack without `DEPLOYMENT_MODE`
/// gives them.
pub const MODE: shared::manifest::DeploymentMode = shared::manifest::DeploymentMode::Simulated;

/// A store on fresh tables, plus the client for direct checks.
pub struct TestStore {
    pub store: DynamoStore,
    pub client: aws_sdk_dynamodb::Client,
    pub agents_table: String,
    pub accounts_table: String,
    pub logs_table: String,
}

fn endpoint() -> String {
    std::env::var(shared::config::DYNAMODB_ENDPOINT).unwrap_or_else(|_| {
        panic!(
            "DYNAMODB_ENDPOINT is not set: these tests run against DynamoDB Local; \
             run them with `make test`, which starts it"
        )
    })
}

impl TestStore {
    pub async fn new() -> Self {
        Self::on(&endpoint()).await
    }

    /// Fresh tables on the DynamoDB Local at `endpoint`.
    pub async fn on(endpoint: &str) -> Self {
        let client =
            shared::aws::dynamodb_client(Some(endpoint)).expect("a client for DynamoDB Local");
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let tables = TableNames {
            agents: format!("agents-{suffix}"),
            accounts: format!("accounts-{suffix}"),
            logs: format!("logs-{suffix}"),
        };
        tables::create_all(&client, &tables)
            .await
            .unwrap_or_else(|e| panic!("creating the tables on DynamoDB Local: {e:?}"));
        TestStore {
            store: DynamoStore::new(client.clone(), tables.clone()),
            client,
            agents_table: tables.agents,
            accounts_table: tables.accounts,
            logs_table: tables.logs,
        }
    }

    /// A new account with a key, as the operator command makes them.
    /// A public key of the account (which must exist): it may only start sessions.
    pub async fn public_key(&self, account_id: &str) -> ApiKey {
        let (key, _) =
            shared::account::issue_key(&self.store, account_id, shared::auth::KeyKind::Public)
                .await
                .unwrap();
        key
    }

    pub async fn account_with_key(&self, account_id: &str) -> (Principal, ApiKey) {
        let account = shared::account::ensure_account(&self.store, account_id, None)
            .await
            .unwrap();
        let (key, _) =
            shared::account::issue_key(&self.store, account_id, shared::auth::KeyKind::Private)
                .await
                .unwrap();
        (
            Principal {
                account_id: account.account_id,
                namespace: account.namespace,
            },
            key,
        )
    }

    /// [`make_sets`] on this store.
    pub async fn make_sets(&self, namespace: &str, sets: &[(&str, shared::secrets::SetType)]) {
        make_sets(&self.store, namespace, sets).await;
    }

    /// The items of an account's namespace in the agents table (agents, deployments, records).
    pub async fn namespace_items(&self, namespace: &str) -> usize {
        self.store.count_namespace_items(namespace).await.unwrap()
    }

    /// The service an agent's lines belong to.
    pub async fn service_of(&self, namespace: &str, agent: &str) -> String {
        use shared::agent::AgentStore;
        self.store
            .get_agent(namespace, agent)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no agent {agent} in {namespace}"))
            .service_id
    }

    /// Every item of a table (the test tables are small).
    pub async fn item_count(&self, table: &str) -> usize {
        let output = self.client.scan().table_name(table).send().await.unwrap();
        output.count as usize
    }
}

/// Secret sets of these names and types in the namespace of `store`, made as PUT makes them
/// (one key, or registry credentials), a stand-in sealing their values.
pub async fn make_sets<S: shared::secrets::store::SecretStore>(
    store: &S,
    namespace: &str,
    sets: &[(&str, shared::secrets::SetType)],
) {
    use shared::secrets::SetType;
    use shared::secrets::body::SetChange;
    let region = shared::config::LOCAL_REGION;
    let kms = shared::testing::data_keys::FakeKms::default();
    for (name, set_type) in sets {
        let body = match set_type {
            SetType::Secret => serde_json::json!({"secretKey": "API_KEY", "secretValue": "v"}),
            // base64 of "user:token".
            SetType::ImagePullSecret => serde_json::json!({"isImagePullSecret": true,
                "host": "ghcr.io", "secretValue": "dXNlcjp0b2tlbg=="}),
        };
        let change = SetChange::from_json(name, region, body).unwrap();
        shared::secrets::sets::put(store, &kms, namespace, name, region, change)
            .await
            .unwrap_or_else(|e| panic!("making set {name}: {e}"));
    }
}

/// Whether `needle` is in `haystack` (a planted value looked for in stored bytes).
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// A new agent record of `owner` named `name` (image `ghcr.io/acme/agent:1.0`), as create makes
/// it, for stores written to directly.
pub fn agent_record(owner: &Principal, name: &str) -> shared::agent::AgentRecord {
    let body = serde_json::json!({"serviceName": name, "image": "ghcr.io/acme/agent:1.0"});
    let (name, config) = shared::agent::ConfigChanges::from_json(body)
        .and_then(shared::agent::ConfigChanges::into_new_agent)
        .expect("a valid agent");
    shared::agent::AgentRecord::new(
        owner,
        &name,
        config,
        MODE,
        &shared::timestamp::now_rfc3339_millis(),
    )
}

/// The checkout's root: the workspace, its scripts, template and events.
pub fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The authorizer's request (events/authorizer.json) with `authorization` as its header.
pub fn authorizer_event(
    authorization: &str,
) -> aws_lambda_events::apigw::ApiGatewayCustomAuthorizerRequestTypeRequest {
    let path = format!("{}/../events/authorizer.json", env!("CARGO_MANIFEST_DIR"));
    let mut event: aws_lambda_events::apigw::ApiGatewayCustomAuthorizerRequestTypeRequest =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    event
        .headers
        .insert("authorization", authorization.parse().unwrap());
    event
}

/// An event from events/, parsed as the Lambda runtime would.
pub fn event(name: &str) -> Request {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    shared::lambda::request_from_event(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A POST /v1/agents as `cargo lambda watch` or a function URL delivers it: no authorizer
/// context, so the function checks the `Authorization` header itself.
pub fn direct_create(authorization: Option<&str>, body: &serde_json::Value) -> Request {
    let mut request = event("create-agent-no-key.json");
    *request.body_mut() = lambda_http::Body::Text(body.to_string());
    if let Some(value) = authorization {
        request
            .headers_mut()
            .insert("authorization", http::HeaderValue::from_str(value).unwrap());
    }
    request
}

/// GET /v1/agents/{agent}/logs with `params` (a name may repeat), as cargo lambda watch or a
/// function URL sends it: no authorizer context, the key in the header.
pub fn logs_request(key: &ApiKey, agent: &str, params: &[(&str, String)]) -> Request {
    use lambda_http::RequestExt;
    let mut query: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (name, value) in params {
        query
            .entry((*name).to_owned())
            .or_default()
            .push(value.clone());
    }
    http::Request::builder()
        .method("GET")
        .uri(format!("https://api.example.com/v1/agents/{agent}/logs"))
        .header("authorization", bearer(key))
        .body(lambda_http::Body::Empty)
        .unwrap()
        .with_path_parameters(std::collections::HashMap::from([(
            "agentName".to_owned(),
            agent.to_owned(),
        )]))
        .with_query_string_parameters(query)
}

pub fn bearer(key: &ApiKey) -> String {
    format!("Bearer {}", key.expose())
}

/// Status and JSON body of a response.
pub fn parts(response: lambda_http::Response<lambda_http::Body>) -> (u16, serde_json::Value) {
    let status = response.status().as_u16();
    let body = serde_json::from_slice(response.body().as_ref())
        .unwrap_or_else(|e| panic!("body of {status} is not JSON: {e}"));
    (status, body)
}

pub use shared::logs::subscription::{log_data, subscription_event};

/// A request to `/v1/agents/{agent}` as cargo lambda watch or a function URL sends it (no
/// authorizer context; the key in the header), with a JSON body when given.
pub fn agent_request(
    method: &str,
    key: &ApiKey,
    agent: &str,
    body: Option<&serde_json::Value>,
) -> Request {
    use lambda_http::RequestExt;
    let body = match body {
        Some(body) => lambda_http::Body::Text(body.to_string()),
        None => lambda_http::Body::Empty,
    };
    http::Request::builder()
        .method(method)
        .uri(format!("https://api.example.com/v1/agents/{agent}"))
        .header("authorization", bearer(key))
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
        .with_path_parameters(std::collections::HashMap::from([(
            "agentName".to_owned(),
            agent.to_owned(),
        )]))
}

/// `POST /v1/public/{agent}/start` with `key` (public or private) and `body` as given.
pub fn start_request(key: &ApiKey, agent: &str, body: Option<&str>) -> Request {
    use lambda_http::RequestExt;
    let body = match body {
        Some(body) => lambda_http::Body::Text(body.to_owned()),
        None => lambda_http::Body::Empty,
    };
    http::Request::builder()
        .method("POST")
        .uri(format!("https://api.example.com/v1/public/{agent}/start"))
        .header("authorization", bearer(key))
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
        .with_path_parameters(std::collections::HashMap::from([(
            "agentName".to_owned(),
            agent.to_owned(),
        )]))
}

/// `method` on `/v1/agents/{agent}/sessions/{id}` with `key`.
pub fn session_request(method: &str, key: &ApiKey, agent: &str, id: &str) -> Request {
    use lambda_http::RequestExt;
    http::Request::builder()
        .method(method)
        .uri(format!(
            "https://api.example.com/v1/agents/{agent}/sessions/{id}"
        ))
        .header("authorization", bearer(key))
        .body(lambda_http::Body::Empty)
        .unwrap()
        .with_path_parameters(std::collections::HashMap::from([
            ("agentName".to_owned(), agent.to_owned()),
            ("sessionId".to_owned(), id.to_owned()),
        ]))
}

/// `GET /v1/agents/{agent}/sessions` with `query`, as cargo lambda watch sends it.
pub fn sessions_list_request(key: &ApiKey, agent: &str, query: &[(&str, &str)]) -> Request {
    use lambda_http::RequestExt;
    http::Request::builder()
        .method("GET")
        .uri(format!(
            "https://api.example.com/v1/agents/{agent}/sessions"
        ))
        .header("authorization", bearer(key))
        .body(lambda_http::Body::Empty)
        .unwrap()
        .with_path_parameters(std::collections::HashMap::from([(
            "agentName".to_owned(),
            agent.to_owned(),
        )]))
        .with_query_string_parameters(
            query
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<std::collections::HashMap<_, _>>(),
        )
}

/// A request to `/v1/secrets[/{setName}[/{secretKey}]]` as cargo lambda watch sends it (the key
/// in the header), with a JSON body when given.
pub fn secrets_request(
    method: &str,
    key: &ApiKey,
    path: &[&str],
    body: Option<&serde_json::Value>,
) -> Request {
    use lambda_http::RequestExt;
    let parameters = ["setName", "secretKey"]
        .into_iter()
        .zip(path)
        .map(|(name, value)| (name.to_owned(), (*value).to_owned()));
    let body = body.map_or(lambda_http::Body::Empty, |body| {
        lambda_http::Body::Text(body.to_string())
    });
    http::Request::builder()
        .method(method)
        .uri(format!(
            "https://api.example.com/v1/secrets/{}",
            path.join("/")
        ))
        .header("authorization", bearer(key))
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
        .with_path_parameters(parameters.collect::<std::collections::HashMap<_, _>>())
}

/// A session start through the start handler, answered without waiting for a report.
pub async fn start_session(
    store: &TestStore,
    key: &ApiKey,
    agent: &str,
    body: Option<&str>,
) -> lambda_http::Response<lambda_http::Body> {
    let no_wait = shared::session::lifecycle::StartWait(std::time::Duration::ZERO);
    let request = start_request(key, agent, body);
    start_session::handle(&store.store, &store.store, &store.store, no_wait, request).await
}

/// Creates agent `name` from `body` (its `serviceName` filled in) and reports its deployment
/// ready: it takes sessions. The created agent's body.
pub async fn ready_agent(
    store: &TestStore,
    caller: &Principal,
    key: &ApiKey,
    name: &str,
    mut body: serde_json::Value,
) -> serde_json::Value {
    body["serviceName"] = serde_json::json!(name);
    let (status, created) = parts(
        create_agent::handle(
            &store.store,
            &store.store,
            MODE,
            direct_create(Some(&bearer(key)), &body),
        )
        .await,
    );
    assert_eq!(status, 201, "{created}");
    let outcome = report(
        store,
        serde_json::json!({"namespace": caller.namespace, "agent": name,
               "deploymentId": created["activeDeploymentId"], "state": "ready", "readyReplicas": 1,
               "observedAt": shared::timestamp::now_rfc3339_millis()}),
    )
    .await;
    assert_eq!(outcome, shared::agent::ReportOutcome::Applied);
    created
}

/// Account `acme` on a store of its own, with a private and a public key and a ready agent
/// `voice`: where most session tests start.
pub async fn acme_with_voice() -> (TestStore, Principal, ApiKey, ApiKey) {
    let store = TestStore::new().await;
    let (owner, key) = store.account_with_key("acme").await;
    let public = store.public_key("acme").await;
    let image = serde_json::json!({"image": "ghcr.io/acme/a:1"});
    ready_agent(&store, &owner, &key, "voice", image).await;
    (store, owner, key, public)
}

/// An update of `agent` through the update handler: status and body.
pub async fn update(
    store: &TestStore,
    key: &ApiKey,
    agent: &str,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let request = agent_request("POST", key, agent, Some(body));
    parts(update_agent::handle(&store.store, &store.store, MODE, request).await)
}

/// A GET, POST (update) or DELETE of `/v1/agents/{agent}`, or a GET of `/v1/agents` when
/// `agent` is empty, through the function serving it: status, headers and body.
pub async fn call(
    store: &TestStore,
    key: &ApiKey,
    method: &str,
    agent: &str,
    body: Option<&serde_json::Value>,
) -> (u16, http::HeaderMap, serde_json::Value) {
    let s = &store.store;
    let request = agent_request(method, key, agent, body);
    let response = match (method, agent) {
        ("GET", "") => {
            let mut request = request;
            *request.uri_mut() = "https://api.example.com/v1/agents".parse().unwrap();
            list_agents::handle(s, s, &CURSOR_KEY, request).await
        }
        ("GET", _) => get_agent::handle(s, s, request).await,
        ("POST", _) => update_agent::handle(s, s, MODE, request).await,
        ("DELETE", _) => {
            let retention = shared::session::lifecycle::SessionRetention::days(30);
            delete_agent::handle(s, s, s, retention, request).await
        }
        (other, _) => panic!("no function serves {other}"),
    };
    let headers = response.headers().clone();
    let (status, body) = parts(response);
    (status, headers, body)
}

/// The `Deployment Status` event of a report's `detail`, as the bus's rule delivers it.
pub fn status_event(
    detail: serde_json::Value,
) -> aws_lambda_events::eventbridge::EventBridgeEvent<serde_json::Value> {
    let event = serde_json::json!({
        "version": "0", "id": uuid::Uuid::new_v4().to_string(),
        "detail-type": "Deployment Status", "source": "agent-hosting.data-plane",
        "account": "123456789012", "time": "2026-11-23T10:00:00Z", "region": "us-east-1",
        "resources": [], "detail": detail
    });
    serde_json::from_value(event).expect("an EventBridge event")
}

/// A `Session Status` report through the session status function, as the rule delivers it.
pub async fn session_report(
    store: &TestStore,
    detail: serde_json::Value,
) -> shared::session::report::SessionReportOutcome {
    let mut event = status_event(detail);
    event.detail_type = shared::stream_events::SESSION_STATUS.to_owned();
    let kept = shared::session::lifecycle::SessionRetention::days(30);
    session_status::handle(&store.store, &store.store, kept, event)
        .await
        .unwrap()
}

/// A `Deployment Status` report through the status function, as the rule delivers it.
pub async fn report(store: &TestStore, detail: serde_json::Value) -> shared::agent::ReportOutcome {
    deployment_status::handle(&store.store, status_event(detail))
        .await
        .unwrap()
}

/// Creates agent `name` and deploys it again until it has had `count` deployments (a new image
/// each time, through the update handler); their ids, oldest first.
pub async fn agent_with_deployments(
    store: &TestStore,
    key: &ApiKey,
    name: &str,
    count: usize,
) -> Vec<String> {
    let created = create_named_agent(store, key, name).await;
    let mut ids = vec![created["activeDeploymentId"].as_str().unwrap().to_owned()];
    for i in 1..count {
        let image = format!("ghcr.io/acme/agent:{i}.0");
        let (status, body) = update(store, key, name, &serde_json::json!({"image": image})).await;
        assert_eq!(status, 200, "{body}");
        ids.push(body["activeDeploymentId"].as_str().unwrap().to_owned());
    }
    ids
}

/// Creates an agent of that name through the create handler (201 asserted).
pub async fn create_named_agent(store: &TestStore, key: &ApiKey, name: &str) -> serde_json::Value {
    let request = direct_create(
        Some(&bearer(key)),
        &serde_json::json!({"serviceName": name, "image": "ghcr.io/acme/agent:1.0"}),
    );
    let (status, body) =
        parts(create_agent::handle(&store.store, &store.store, MODE, request).await);
    assert_eq!(status, 201, "{body}");
    body
}

/// Lines through the ingest handler.
pub async fn ingest(
    store: &TestStore,
    retention_days: u32,
    data: aws_lambda_events::cloudwatch_logs::LogData,
) -> shared::logs::intake::IngestReport {
    shared::logs::intake::ingest(
        &store.store,
        &store.store,
        &shared::logs::intake::KnownDeployments::default(),
        retention_days,
        data,
    )
    .await
    .unwrap()
}

/// The key the tests sign cursors with (the stack's secret on AWS).
pub const CURSOR_KEY: shared::cursor::CursorKey = shared::cursor::CursorKey::from_bytes([42; 32]);

/// The logs function's settings in the tests: 30 days, [`CURSOR_KEY`].
pub const LOGS_SETTINGS: agent_logs::Settings = agent_logs::Settings {
    retention_days: 30,
    cursor_key: CURSOR_KEY,
};

/// GET /v1/agents/{agent}/logs through the logs handler.
pub async fn read_logs(
    store: &TestStore,
    key: &ApiKey,
    settings: agent_logs::Settings,
    agent: &str,
    params: &[(&str, String)],
) -> (u16, serde_json::Value) {
    parts(
        agent_logs::handle(
            &store.store,
            &store.store,
            &store.store,
            settings,
            logs_request(key, agent, params),
        )
        .await,
    )
}
