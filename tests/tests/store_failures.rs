//! A store failing on its side reaches a caller as the contract's 503 with `Retry-After` on
//! every route (contract section 1), never a 500: each route runs on DynamoDB Local with one of
//! its requests answered DynamoDB's `InternalFailure` (an HTTP 500), on every attempt the SDK
//! makes at it, for each request the route makes in turn, the key check first. A failure after
//! the write that does a route's work (what a delete cleans up after itself) leaves its answer
//! the success it is.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_dynamodb::config::retry::RetryPartition;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use integration_tests::tokens::{keys_request, person_token};
use integration_tests::{
    CURSOR_KEY, LOGS_SETTINGS, TestStore, agent_request, bearer, direct_create, logs_request,
    parts, ready_agent, session_request, start_request,
};
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::{Value, json};
use shared::auth::ApiKey;
use shared::session::lifecycle::{SessionRetention, StartWait};
use shared::store::dynamodb::DynamoStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const REGION: &str = shared::config::LOCAL_REGION;

/// What DynamoDB Local answers when it fails on its side.
const INTERNAL_FAILURE: &str = r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalFailure","message":"The request processing has failed because of an unknown error, exception or failure."}"#;

/// The contract's body of a 503 (section 1).
const UNAVAILABLE: &str =
    r#"{"error":"The service is busy; retry after 1 second(s)","code":"SERVICE_UNAVAILABLE"}"#;

/// A server answering every request with DynamoDB's 500 `InternalFailure`: its address, how
/// many requests it has answered, and the runs made against it (each its own account).
struct FailingStore {
    address: String,
    answered: Arc<AtomicUsize>,
    runs: AtomicUsize,
}

async fn failing_store() -> FailingStore {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}/", listener.local_addr().unwrap());
    let answered = Arc::new(AtomicUsize::new(0));
    let count = answered.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer_all(socket, count.clone()));
        }
    });
    FailingStore {
        address,
        answered,
        runs: AtomicUsize::new(0),
    }
}

/// Answers each request of one connection (HTTP/1.1, kept alive) with the failure.
async fn answer_all(mut socket: tokio::net::TcpStream, answered: Arc<AtomicUsize>) {
    let mut buffer = Vec::new();
    loop {
        let Some(end) = find(&buffer, b"\r\n\r\n") else {
            let mut chunk = [0; 8192];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |value| value.trim().parse().unwrap());
        while buffer.len() < end + 4 + length {
            let mut chunk = [0; 8192];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
        }
        buffer.drain(..end + 4 + length);
        answered.fetch_add(1, Ordering::SeqCst);
        let response = format!(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/x-amz-json-1.0\r\n\
             x-amzn-requestid: injected\r\ncontent-length: {}\r\n\r\n{INTERNAL_FAILURE}",
            INTERNAL_FAILURE.len()
        );
        if socket.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Marks the `fail`th request of a client (from 0) as it enters the SDK's retry loop, and sends
/// each attempt at it to the failing server; every other request goes to DynamoDB Local. Keeps
/// the operation of each request (its `X-Amz-Target`), in order.
#[derive(Debug, Clone)]
struct FailOne {
    fail: usize,
    failing_store: String,
    begun: Arc<AtomicUsize>,
    operations: Arc<Mutex<Vec<String>>>,
}

const MARK: &str = "x-injected-failure";

impl Intercept for FailOne {
    fn name(&self) -> &'static str {
        "FailOne"
    }

    // Once a request, before the attempts: each attempt starts from the request as it is here.
    fn modify_before_retry_loop(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        let target = request.headers().get("x-amz-target").unwrap_or_default();
        let operation = target.rsplit('.').next().unwrap_or_default().to_owned();
        self.operations.lock().unwrap().push(operation);
        if self.begun.fetch_add(1, Ordering::SeqCst) == self.fail {
            request.headers_mut().insert(MARK, "1");
        }
        Ok(())
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        if request.headers().get(MARK).is_some() {
            request.set_uri(self.failing_store.as_str())?;
        }
        Ok(())
    }
}

/// The store of `tables` whose `fail`th request fails, its client retrying as the functions'
/// do (without the backoff's wait, and a retry quota of its own).
fn store_failing_at(
    tables: &TestStore,
    fail: usize,
    failing_store: &str,
) -> (DynamoStore, FailOne) {
    let interceptor = FailOne {
        fail,
        failing_store: failing_store.to_owned(),
        begun: Arc::default(),
        operations: Arc::default(),
    };
    let retry = shared::aws::retry_config().with_initial_backoff(Duration::from_millis(1));
    let config = tables
        .client
        .config()
        .to_builder()
        .retry_config(retry)
        .retry_partition(RetryPartition::new(format!(
            "failing-{}",
            uuid::Uuid::new_v4()
        )))
        .interceptor(interceptor.clone())
        .build();
    let names = shared::config::TableNames {
        agents: tables.agents_table.clone(),
        accounts: tables.accounts_table.clone(),
        logs: tables.logs_table.clone(),
    };
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    (DynamoStore::new(client, names), interceptor)
}

/// Every route of the API, by method and path.
#[derive(Debug, Clone, Copy)]
enum Route {
    CreateAgent,
    ListAgents,
    GetAgent,
    UpdateAgent,
    DeleteAgent,
    AgentLogs,
    StartSession,
    GetSession,
    StopSession,
    ListSessions,
    ListDeployments,
    AccountInfo,
    PutSecretSet,
    ListSecretSets,
    GetSecretSet,
    DeleteSecretSet,
    DeleteSecret,
    ListKeys,
    CreateKey,
    RevokeKey,
}

const ROUTES: [Route; 20] = [
    Route::CreateAgent,
    Route::ListAgents,
    Route::GetAgent,
    Route::UpdateAgent,
    Route::DeleteAgent,
    Route::AgentLogs,
    Route::StartSession,
    Route::GetSession,
    Route::StopSession,
    Route::ListSessions,
    Route::ListDeployments,
    Route::AccountInfo,
    Route::PutSecretSet,
    Route::ListSecretSets,
    Route::GetSecretSet,
    Route::DeleteSecretSet,
    Route::DeleteSecret,
    Route::ListKeys,
    Route::CreateKey,
    Route::RevokeKey,
];

impl Route {
    /// The operation whose success does the route's work: a failure after it is of the clean-up
    /// the route leaves to later (the sweep, unreachable values removed next time).
    fn done_after(self) -> Option<&'static str> {
        match self {
            Route::DeleteAgent => Some("TransactWriteItems"),
            Route::DeleteSecret => Some("UpdateItem"),
            Route::DeleteSecretSet => Some("TransactWriteItems"),
            _ => None,
        }
    }
}

/// An account with a ready agent `voice` that has a session, a secret set `keys` of one key,
/// `API_KEY`, and a person (the keys routes take only a person's token) who may revoke the
/// account's key `key_id`.
struct Fixture {
    key: ApiKey,
    session: String,
    token: String,
    key_id: String,
}

async fn fixture(store: &TestStore, run: usize) -> Fixture {
    let (owner, key) = store.account_with_key(&format!("acme-{run}")).await;
    let image = json!({"image": "ghcr.io/acme/a:1"});
    ready_agent(store, &owner, &key, "voice", image).await;
    store
        .make_sets(
            &owner.namespace,
            &[("keys", shared::secrets::SetType::Secret)],
        )
        .await;
    let (status, started) =
        parts(integration_tests::start_session(store, &key, "voice", None).await);
    assert_eq!(status, 200, "{started}");
    let session = started["sessionId"].as_str().unwrap().to_owned();
    let token = person_token(&store.store, &owner.account_id, &format!("p-{run}")).await;
    let keys = shared::account::list_keys(&store.store, &owner.account_id)
        .await
        .unwrap();
    let key_id = keys[0].key_id.clone();
    Fixture {
        key,
        session,
        token,
        key_id,
    }
}

/// A request to `path` with the key, its path parameters named as the gateway names them.
fn request(
    method: &str,
    key: &ApiKey,
    path: &str,
    params: &[(&str, &str)],
    body: Option<Value>,
) -> Request {
    let body = body.map_or(Body::Empty, |body| Body::Text(body.to_string()));
    http::Request::builder()
        .method(method)
        .uri(format!("https://api.example.com{path}"))
        .header("authorization", bearer(key))
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
        .with_path_parameters(std::collections::HashMap::from_iter(
            params
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
        ))
}

async fn call(route: Route, s: &DynamoStore, fixture: &Fixture) -> Response<Body> {
    let (key, id, token) = (&fixture.key, fixture.session.as_str(), &fixture.token);
    let kms = shared::testing::data_keys::FakeKms::default();
    let set = [("setName", "keys")];
    match route {
        Route::CreateAgent => {
            let body = json!({"serviceName": "bot", "image": "ghcr.io/acme/a:1"});
            create_agent::handle(
                s,
                s,
                integration_tests::MODE,
                direct_create(Some(&bearer(key)), &body),
            )
            .await
        }
        Route::ListAgents => {
            let list = request("GET", key, "/v1/agents", &[], None);
            list_agents::handle(s, s, &CURSOR_KEY, list).await
        }
        Route::GetAgent => get_agent::handle(s, s, agent_request("GET", key, "voice", None)).await,
        Route::UpdateAgent => {
            let body = json!({"image": "ghcr.io/acme/a:2"});
            update_agent::handle(
                s,
                s,
                integration_tests::MODE,
                agent_request("POST", key, "voice", Some(&body)),
            )
            .await
        }
        Route::DeleteAgent => {
            let delete = agent_request("DELETE", key, "voice", None);
            delete_agent::handle(s, s, s, SessionRetention::days(30), delete).await
        }
        Route::AgentLogs => {
            agent_logs::handle(s, s, s, LOGS_SETTINGS, logs_request(key, "voice", &[])).await
        }
        Route::StartSession => {
            let start = start_request(key, "voice", None);
            start_session::handle(s, s, s, StartWait(Duration::ZERO), start).await
        }
        Route::GetSession => {
            get_session::handle(s, s, s, session_request("GET", key, "voice", id)).await
        }
        Route::StopSession => {
            stop_session::handle(s, s, s, session_request("DELETE", key, "voice", id)).await
        }
        Route::ListSessions => {
            let path = "/v1/agents/voice/sessions";
            let list = request("GET", key, path, &[("agentName", "voice")], None);
            list_sessions::handle(s, s, s, &CURSOR_KEY, list).await
        }
        Route::ListDeployments => {
            let path = "/v1/agents/voice/deployments";
            let list = request("GET", key, path, &[("agentName", "voice")], None);
            list_deployments::handle(s, s, &CURSOR_KEY, list).await
        }
        // Its one request is the key check: the three paths alike.
        Route::AccountInfo => {
            let organizations = request("GET", key, "/v1/organizations", &[], None);
            account_info::handle(s, REGION, organizations).await
        }
        Route::PutSecretSet => {
            let body = json!({"secretKey": "OTHER_KEY", "secretValue": "v"});
            let put = request("PUT", key, "/v1/secrets/keys", &set, Some(body));
            put_secret_set::handle(s, &kms, s, REGION, put).await
        }
        Route::ListSecretSets => {
            let list = request("GET", key, "/v1/secrets", &[], None);
            list_secret_sets::handle(s, s, &CURSOR_KEY, REGION, list).await
        }
        Route::GetSecretSet => {
            let get = request("GET", key, "/v1/secrets/keys", &set, None);
            get_secret_set::handle(s, s, REGION, get).await
        }
        Route::DeleteSecretSet => {
            let delete = request("DELETE", key, "/v1/secrets/keys", &set, None);
            delete_secret_set::handle(s, s, delete).await
        }
        Route::DeleteSecret => {
            let params = [("setName", "keys"), ("secretKey", "API_KEY")];
            let path = "/v1/secrets/keys/API_KEY";
            delete_secret::handle(s, s, request("DELETE", key, path, &params, None)).await
        }
        Route::ListKeys => keys::handle(s, keys_request("GET", token, None, None)).await,
        Route::CreateKey => {
            let body = json!({"kind": "private", "name": "ci"});
            keys::handle(s, keys_request("POST", token, None, Some(&body))).await
        }
        Route::RevokeKey => {
            let revoke = keys_request("DELETE", token, Some(&fixture.key_id), None);
            keys::handle(s, revoke).await
        }
    }
}

/// No route makes more requests than this; a route still making more is a loop.
const MOST_REQUESTS: usize = 40;

/// What a route answered with its `fail`th request failing.
enum Run {
    /// It made fewer requests: nothing failed.
    Untouched { status: u16, body: Value },
    /// That request failed: its operation, the attempts the SDK made at it, whether the route's
    /// work was done before it, and the answer.
    Failed {
        operation: String,
        attempts: usize,
        done: bool,
        answer: Response<Body>,
    },
}

/// `route` on a fresh fixture of `tables`, its `fail`th request sent to `failing`.
async fn run(route: Route, tables: &TestStore, failing: &FailingStore, fail: usize) -> Run {
    let fixture = fixture(tables, failing.runs.fetch_add(1, Ordering::SeqCst)).await;
    let (faulty, trace) = store_failing_at(tables, fail, &failing.address);
    let before = failing.answered.load(Ordering::SeqCst);
    let answer = call(route, &faulty, &fixture).await;
    let operations = trace.operations.lock().unwrap().clone();
    let Some(operation) = operations.get(fail).cloned() else {
        let (status, body) = parts(answer);
        return Run::Untouched { status, body };
    };
    let done = route
        .done_after()
        .and_then(|done| operations.iter().position(|o| o == done))
        .is_some_and(|at| at < fail);
    Run::Failed {
        operation,
        attempts: failing.answered.load(Ordering::SeqCst) - before,
        done,
        answer,
    }
}

/// The contract's 503 (or, once the route's work is done, its success): `None`, or what it was.
fn outside_the_contract(done: bool, answer: Response<Body>) -> Option<String> {
    let status = answer.status().as_u16();
    let retry_after = answer.headers().get("retry-after").cloned();
    let body = String::from_utf8_lossy(answer.body().as_ref()).into_owned();
    let unavailable =
        status == 503 && retry_after.is_some_and(|seconds| seconds == "1") && body == UNAVAILABLE;
    let as_contract = if done {
        (200..300).contains(&status)
    } else {
        unavailable
    };
    (!as_contract).then(|| format!("{status} {body}"))
}

#[tokio::test]
async fn a_store_failure_after_retries_is_503_with_retry_after_on_every_route() {
    let tables = TestStore::new().await;
    let failing = failing_store().await;
    let mut wrong = Vec::new();
    for route in ROUTES {
        for fail in 0.. {
            assert!(
                fail < MOST_REQUESTS,
                "{route:?} made over {MOST_REQUESTS} requests"
            );
            match run(route, &tables, &failing, fail).await {
                Run::Untouched { status, body } => {
                    let ok = (200..300).contains(&status);
                    assert!(ok, "{route:?} without a failure: {status} {body}");
                    break;
                }
                Run::Failed {
                    operation,
                    attempts,
                    done,
                    answer,
                } => {
                    let retried = shared::aws::MAX_ATTEMPTS as usize;
                    assert_eq!(attempts, retried, "{route:?}: {operation} retried");
                    let answer = outside_the_contract(done, answer);
                    let failed = format!("{route:?}, request {fail} ({operation}) failed");
                    match answer {
                        None => eprintln!("{failed}: answered as the contract says"),
                        Some(answer) => wrong.push(format!("{failed}: {answer}")),
                    }
                }
            }
        }
    }
    let wrong = wrong.join("\n");
    assert!(wrong.is_empty(), "answers outside the contract:\n{wrong}");
}
