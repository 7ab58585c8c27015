//! A running stack, for the suites under tests/e2e/ (feature `e2e`): the API over HTTP, Lambda's
//! Invoke API for the functions without a route, and the stack's own tables for what only the
//! operator does (accounts, keys, revocation). scripts/e2e.sh starts the stack and describes it
//! in the environment (see scripts/stack.sh):
//!
//! - `STACK_API_URL`, `STACK_LAMBDA_URL`, `STACK_INGEST_FUNCTION`, `STACK_GATEWAY`;
//! - `DYNAMODB_ENDPOINT`, `AGENTS_TABLE`, `ACCOUNTS_TABLE`, `LOGS_TABLE`: the store it serves.

use std::time::Duration;

use serde_json::{Value, json};
use shared::auth::{ApiKey, Principal};
use shared::config::TableNames;
use shared::store::dynamodb::DynamoStore;

/// What answers a request that the key check refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gateway {
    /// No gateway (cargo lambda watch): the function checks the key itself.
    None,
    /// sam local start-api's emulation of the REST API and its Lambda authorizer.
    SamRestApi,
}

/// Why a request is refused before it reaches a route's function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// No `Authorization` header at all.
    MissingKey,
    /// A header whose key is malformed, unknown or revoked.
    RefusedKey,
}

/// An answer as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    /// `WWW-Authenticate`, when present.
    pub www_authenticate: Option<String>,
    /// Every header, lowercase names.
    pub headers: Vec<(String, String)>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The contract's answer to a denied request (sections 1, 2 and 9).
    pub fn contract_denial() -> Self {
        Answer {
            status: 401,
            body: json!({"error": "Unauthorized", "code": "UNAUTHORIZED"}),
            www_authenticate: Some("Bearer".to_owned()),
            headers: Vec::new(),
        }
    }

    /// Status, body and challenge: what a denial is compared on.
    pub fn denial_parts(&self) -> (u16, &Value, Option<&str>) {
        (self.status, &self.body, self.www_authenticate.as_deref())
    }
}

impl Gateway {
    fn from_env(name: &str) -> Self {
        match name {
            "none" => Gateway::None,
            "sam-rest-api" => Gateway::SamRestApi,
            other => panic!("STACK_GATEWAY={other}: expected none or sam-rest-api"),
        }
    }

    /// What this stack answers a denied request. Where that is not the contract's answer, it is
    /// a known difference of the gateway in front (contract section 9: every denial, also the
    /// gateway's own, has the contract's status, body and challenge), stated here so that the
    /// suite checks it instead of skipping it.
    pub fn denial(&self, denial: Denial) -> Answer {
        match (self, denial) {
            (Gateway::None, _) => Answer::contract_denial(),
            // sam runs the authorizer but does not emulate gateway responses: it answers with API
            // Gateway's unshaped defaults. The deployed API answers these with template.yaml's
            // gateway responses, the contract's denial (tests/tests/gateway_template.rs checks
            // them against the functions' own answer; scripts/check-gateway.sh on a deployed
            // stack).
            (Gateway::SamRestApi, Denial::MissingKey) => Answer {
                status: 401,
                body: json!({"message": "Unauthorized"}),
                www_authenticate: None,
                headers: Vec::new(),
            },
            (Gateway::SamRestApi, Denial::RefusedKey) => Answer {
                status: 403,
                body: json!({"message": "User is not authorized to access this resource"}),
                www_authenticate: None,
                headers: Vec::new(),
            },
        }
    }
}

/// The stack under test.
pub struct Stack {
    pub api: String,
    pub lambda: String,
    pub ingest_function: String,
    pub gateway: Gateway,
    pub store: DynamoStore,
    http: reqwest::Client,
}

fn variable(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: the e2e suites run against a stack that scripts/e2e.sh starts")
    })
}

impl Stack {
    pub fn from_env() -> Self {
        let client =
            shared::aws::dynamodb_client(Some(&variable(shared::config::DYNAMODB_ENDPOINT)))
                .expect("a client for the stack's DynamoDB Local");
        let tables = TableNames {
            agents: variable(shared::config::AGENTS_TABLE),
            accounts: variable(shared::config::ACCOUNTS_TABLE),
            logs: variable(shared::config::LOGS_TABLE),
        };
        Stack {
            api: variable("STACK_API_URL"),
            lambda: variable("STACK_LAMBDA_URL"),
            ingest_function: variable("STACK_INGEST_FUNCTION"),
            gateway: Gateway::from_env(&variable("STACK_GATEWAY")),
            store: DynamoStore::new(client, tables),
            // sam starts a container on a function's first request; the first answers are slow.
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("an HTTP client"),
        }
    }

    /// A new account of its own (a unique id per run) and a key for it, as the operator command
    /// makes them.
    pub async fn account(&self, name: &str) -> (Principal, ApiKey) {
        let id = format!(
            "e2e-{name}-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let account = shared::account::ensure_account(&self.store, &id, None)
            .await
            .unwrap();
        let (key, _) = shared::account::issue_key(&self.store, &id, shared::auth::KeyKind::Private)
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

    /// Another key of an existing account, of `kind`.
    pub async fn key_of(&self, account_id: &str, kind: shared::auth::KeyKind) -> ApiKey {
        let (key, _) = shared::account::issue_key(&self.store, account_id, kind)
            .await
            .unwrap();
        key
    }

    /// Asserts that `answer` is what this stack answers a `denial`, and says so when that
    /// differs from the contract.
    pub fn assert_denied(&self, what: &str, denial: Denial, answer: &Answer) {
        let expected = self.gateway.denial(denial);
        assert_eq!(answer.denial_parts(), expected.denial_parts(), "{what}");
        let contract = Answer::contract_denial();
        if expected.denial_parts() != contract.denial_parts() {
            eprintln!(
                "known difference from contract section 9 ({:?}): {what}: {} {} instead of {} {} \
                 with WWW-Authenticate: Bearer",
                self.gateway, answer.status, answer.body, contract.status, contract.body
            );
        }
    }

    /// A request to `{STACK_API_URL}{path}` with `authorization` as the header's value, if any.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        authorization: Option<&str>,
        build: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Answer {
        let mut request = self.http.request(method, format!("{}{path}", self.api));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        self.send(path, build(request)).await
    }

    /// A request to `path` under the stack's root (its API's address without `/v1`): any path,
    /// as a client may send it.
    pub async fn call_root(
        &self,
        method: reqwest::Method,
        path: &str,
        build: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Answer {
        let root = self.api.trim_end_matches("/v1");
        let request = self.http.request(method, format!("{root}{path}"));
        self.send(path, build(request)).await
    }

    async fn send(&self, path: &str, request: reqwest::RequestBuilder) -> Answer {
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        let bytes = response.bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{path}: the {status} body is not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        Answer {
            status,
            body,
            www_authenticate: headers
                .iter()
                .find(|(name, _)| name == "www-authenticate")
                .map(|(_, value)| value.clone()),
            headers,
        }
    }

    /// `method` `path` with `key`'s bearer and, when given, a JSON body.
    pub async fn send_as(
        &self,
        key: &ApiKey,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Answer {
        self.call(method, path, Some(&bearer(key)), |request| match body {
            Some(body) => request.json(body),
            None => request,
        })
        .await
    }

    /// GETs `path` with `key`'s bearer every `every` until `done` holds of a 200 answer, within
    /// `bound`; the answer's body.
    pub async fn read_until(
        &self,
        key: &ApiKey,
        path: &str,
        (bound, every): (crate::bounded::Bound, Duration),
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        crate::bounded::until(path, bound, || async {
            let answer = self.send_as(key, reqwest::Method::GET, path, None).await;
            match answer.status == 200 && done(&answer.body) {
                true => crate::bounded::Try::Done(answer.body),
                false => crate::bounded::Try::Again {
                    why: format!("{} {}", answer.status, answer.body),
                    wait: every,
                },
            }
        })
        .await
    }

    /// POST /agents with a JSON body.
    pub async fn create(&self, key: &ApiKey, body: &Value) -> Answer {
        self.call(
            reqwest::Method::POST,
            "/agents",
            Some(&bearer(key)),
            |request| request.json(body),
        )
        .await
    }

    /// GET /agents/{agent}.
    pub async fn get(&self, key: &ApiKey, agent: &str) -> Answer {
        self.call(
            reqwest::Method::GET,
            &format!("/agents/{agent}"),
            Some(&bearer(key)),
            |request| request,
        )
        .await
    }

    /// POST /agents/{agent} (an update) with a JSON body.
    pub async fn update(&self, key: &ApiKey, agent: &str, body: &Value) -> Answer {
        self.call(
            reqwest::Method::POST,
            &format!("/agents/{agent}"),
            Some(&bearer(key)),
            |request| request.json(body),
        )
        .await
    }

    /// GET /agents/{agent}/logs with `params`.
    pub async fn logs(&self, key: &ApiKey, agent: &str, params: &[(&str, String)]) -> Answer {
        self.logs_as(Some(&bearer(key)), agent, params).await
    }

    pub async fn logs_as(
        &self,
        authorization: Option<&str>,
        agent: &str,
        params: &[(&str, String)],
    ) -> Answer {
        self.call(
            reqwest::Method::GET,
            &format!("/agents/{agent}/logs"),
            authorization,
            |request| request.query(params),
        )
        .await
    }

    /// The answer of the function named `function` to `event`, through the stack's Invoke API.
    pub async fn invoke(&self, function: &str, event: &Value) -> Value {
        let url = format!(
            "{}/2015-03-31/functions/{function}/invocations",
            self.lambda
        );
        let response = self
            .http
            .post(&url)
            .json(event)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(status.is_success(), "{url}: {status} {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: not JSON ({e}): {text}"))
    }

    /// Lines delivered to the ingest function as one CloudWatch Logs subscription batch of
    /// `/agent-hosting/{namespace}/{agent}`, stream `stream`; events are (id, ms, message).
    /// Answers the function's report.
    pub async fn ingest(
        &self,
        namespace: &str,
        agent: &str,
        stream: &str,
        events: &[(String, i64, String)],
    ) -> Value {
        let data = crate::log_data(
            &format!("{}{namespace}/{agent}", shared::logs::LOG_GROUP_PREFIX),
            stream,
            events,
        );
        self.invoke(&self.ingest_function, &subscription_event(&data))
            .await
    }
}

pub use crate::subscription_event;

pub fn bearer(key: &ApiKey) -> String {
    crate::bearer(key)
}

/// Every file under `root` (the checkout's .local/) but the tools installed there (venvs,
/// DynamoDB Local's jar, builds): where a stack keeps its data and logs.
pub fn local_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    const TOOLS: &[&str] = &[
        "venv",
        "tools-venv",
        "moto-venv",
        "pipecat-venv",
        "dynamodb-local",
        "sam-build",
    ];
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                let name = entry.file_name();
                if !(dir == root && TOOLS.iter().any(|tool| name == *tool)) {
                    pending.push(path);
                }
            } else if kind.is_file() {
                files.push(path);
            }
        }
    }
    files
}
