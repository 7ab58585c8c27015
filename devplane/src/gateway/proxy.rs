//! The local gateway's server: HTTP/1 on a listener, each request answered by the template's
//! gateway response or handed on to cargo lambda watch (see the module above).

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderName};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::console::Console;
use super::template::{GatewayResponse, ResponseType, Routes};
use super::{INTEGRATION_TIMEOUT, MAX_BODY_BYTES, as_handed_over};
use crate::rules::RuleError;

/// Why a gateway cannot start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(transparent)]
    Template(#[from] RuleError),
    #[error("an HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// What the gateway answers and where it hands requests on.
pub struct Gateway {
    routes: Routes,
    not_found: GatewayResponse,
    too_large: GatewayResponse,
    unreachable: GatewayResponse,
    timed_out: GatewayResponse,
    /// cargo lambda watch's address, without a trailing `/`.
    upstream: String,
    http: reqwest::Client,
    /// The console's files under `/console/` (`--console`), if served.
    console: Option<Console>,
}

impl Gateway {
    pub fn new(template: &str, upstream: &str) -> Result<Self, GatewayError> {
        Self::with_timeout(template, upstream, INTEGRATION_TIMEOUT)
    }

    /// The gateway with another integration timeout than API Gateway's (a test's).
    pub fn with_timeout(
        template: &str,
        upstream: &str,
        timeout: Duration,
    ) -> Result<Self, GatewayError> {
        let response = |kind| GatewayResponse::from_template(template, kind);
        Ok(Gateway {
            routes: Routes::from_template(template)?,
            not_found: response(ResponseType::MissingAuthenticationToken)?,
            too_large: response(ResponseType::RequestTooLarge)?,
            unreachable: response(ResponseType::IntegrationFailure)?,
            timed_out: response(ResponseType::IntegrationTimeout)?,
            upstream: upstream.trim_end_matches('/').to_owned(),
            // A redirect is the client's to follow, as any answer of the function.
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(timeout)
                .build()?,
            console: None,
        })
    }

    /// The gateway serving `console` under `/console/` too.
    pub fn with_console(mut self, console: Console) -> Self {
        self.console = Some(console);
        self
    }

    /// Serves connections on `listener` until the process ends.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) -> std::io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            let gateway = self.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let gateway = gateway.clone();
                    async move { gateway.answer(request).await }
                });
                let served = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                if let Err(error) = served {
                    tracing::debug!(%error, "connection closed");
                }
            });
        }
    }

    /// The answer to a request; an error (the request's body broke off) closes the connection.
    async fn answer(&self, request: Request<Incoming>) -> std::io::Result<Response<Full<Bytes>>> {
        if let Some(console) = &self.console
            && let Some(answer) = console.answer(request.method(), request.uri().path())
        {
            return Ok(answer.unwrap_or_else(|()| respond(&self.not_found)));
        }
        if !self.routes.has(request.uri().path()) {
            return Ok(respond(&self.not_found));
        }
        let (mut parts, body) = request.into_parts();
        let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) if error.is::<LengthLimitError>() => return Ok(respond(&self.too_large)),
            Err(error) => return Err(std::io::Error::other(error)),
        };
        as_handed_over(&mut parts.headers, &body);
        let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
        let handed = self
            .http
            .request(parts.method.clone(), format!("{}{path}", self.upstream))
            .headers(end_to_end(parts.headers))
            .body(body)
            .send()
            .await;
        Ok(relay(handed).await.unwrap_or_else(|error| {
            let method = &parts.method;
            if error.is_timeout() {
                tracing::error!(%method, path, "the function did not answer in time");
                return respond(&self.timed_out);
            }
            tracing::error!(%error, %method, path, "cargo lambda watch did not answer");
            respond(&self.unreachable)
        }))
    }
}

/// cargo lambda watch's answer, as the client receives it.
async fn relay(
    handed: reqwest::Result<reqwest::Response>,
) -> reqwest::Result<Response<Full<Bytes>>> {
    let answer = handed?;
    let status = answer.status();
    let headers = end_to_end(answer.headers().clone());
    let body = answer.bytes().await?;
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

fn respond(gateway_response: &GatewayResponse) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(gateway_response.body.clone()));
    *response.status_mut() = gateway_response.status;
    response
        .headers_mut()
        .extend(gateway_response.headers.iter().cloned());
    response
}

/// The headers of a message without those of its connection (RFC 9110 section 7.6.1) and
/// without what the next hop sets itself (Host, Content-Length).
fn end_to_end(mut headers: HeaderMap) -> HeaderMap {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|names| names.split(','))
        .filter_map(|name| HeaderName::try_from(name.trim()).ok())
        .collect();
    for name in listed.iter().chain(&[
        header::CONNECTION,
        HeaderName::from_static("keep-alive"),
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::HOST,
        header::CONTENT_LENGTH,
    ]) {
        headers.remove(name);
    }
    headers
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::net::TcpListener;

    use super::Gateway;

    fn template() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap()
    }

    /// A function that takes the request and never answers (cargo lambda watch with a lost
    /// invocation): the client gets the template's INTEGRATION_TIMEOUT response, as from API
    /// Gateway, not a request that never ends.
    #[tokio::test]
    async fn a_function_that_never_answers_is_the_templates_integration_timeout() {
        let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = format!("http://{}", silent.local_addr().unwrap());
        let held = tokio::spawn(async move {
            let mut connections = Vec::new();
            loop {
                let (stream, _) = silent.accept().await.unwrap();
                connections.push(stream);
            }
        });
        let gateway =
            Gateway::with_timeout(&template(), &upstream, Duration::from_millis(300)).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let served = tokio::spawn(Arc::new(gateway).serve(listener));

        let answer = reqwest::Client::new()
            .get(format!("http://{address}/v1/agents"))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("the gateway answers");

        assert_eq!(answer.status(), 503);
        assert_eq!(answer.headers()["retry-after"], "1");
        let body: serde_json::Value = answer.json().await.unwrap();
        assert_eq!(body["code"], "SERVICE_UNAVAILABLE");
        held.abort();
        served.abort();
    }
}
