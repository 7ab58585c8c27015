//! The requests an AWS SDK client sends, recorded by an interceptor, for the tests that check
//! what a service would be asked (and in what order) without a service that checks it.
//!
//! Any SDK client takes it: the interceptor trait is the smithy runtime's
//! (`aws_smithy_runtime_api::client::interceptors::Intercept`), which every SDK crate re-exports
//! as `config::Intercept`; it is named here through aws-sdk-dynamodb, a dependency of this crate
//! in every build.

use std::fmt;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

/// A request as the service would receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentRequest {
    pub method: String,
    /// The URI's path, without the query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body, when it is in memory (not streamed), read as UTF-8 (lossily).
    pub body: String,
}

impl SentRequest {
    /// The value of the header `name` (any case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// `METHOD /path`.
impl fmt::Display for SentRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

/// The requests a client sends, in order: an interceptor for the client's config (clones share
/// what was recorded).
#[derive(Debug, Clone, Default)]
pub struct Requests {
    sent: Arc<Mutex<Vec<SentRequest>>>,
    refuse: bool,
}

impl Requests {
    /// A recorder that refuses each request once recorded: nothing is sent, and the client's
    /// call fails.
    pub fn refusing() -> Self {
        Requests {
            refuse: true,
            ..Requests::default()
        }
    }

    /// The requests recorded since the last take, which are forgotten.
    pub fn take(&self) -> Vec<SentRequest> {
        std::mem::take(&mut self.sent.lock().unwrap())
    }

    /// [`Requests::take`], each as `METHOD /path`.
    pub fn take_lines(&self) -> Vec<String> {
        self.take().iter().map(ToString::to_string).collect()
    }

    /// Asserts `first` is sent, and before `then`, which is sent too (both `METHOD /path`).
    pub fn assert_before(sent: &[String], first: &str, then: &str) {
        let at = |wanted: &str| {
            sent.iter()
                .position(|request| request == wanted)
                .unwrap_or_else(|| panic!("{wanted} was not sent: {sent:#?}"))
        };
        assert!(at(first) < at(then), "{first} before {then}: {sent:#?}");
    }
}

impl Intercept for Requests {
    fn name(&self) -> &'static str {
        "Requests"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        let uri = request.uri();
        let path = uri
            .split("://")
            .nth(1)
            .and_then(|rest| rest.find('/').map(|at| &rest[at..]));
        let path = path.unwrap_or(uri).split('?').next().unwrap_or_default();
        self.sent.lock().unwrap().push(SentRequest {
            method: request.method().to_owned(),
            path: path.to_owned(),
            headers: request
                .headers()
                .iter()
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
                .collect(),
            body: String::from_utf8_lossy(request.body().bytes().unwrap_or_default()).into_owned(),
        });
        if self.refuse {
            return Err("stopped before sending".into());
        }
        Ok(())
    }
}
