//! GET /v1/agents/{agentName}/logs: an agent's log lines, filtered, ordered and paged, with a
//! total (contract section 4). The reading strategy and its cost bounds are in
//! `shared::logs::read`.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use shared::ApiError;
use shared::auth;
use shared::logs::{self, LogFilter, LogQuery, LogsPage};
use shared::store::{KeyStore, LogStore};
use shared::validation::is_dns_label;

/// Settings read once at cold start.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub retention_days: u32,
}

pub async fn handle<L: LogStore, K: KeyStore>(
    logs: &L,
    keys: &K,
    settings: Settings,
    request: Request,
) -> Response<Body> {
    shared::http::respond(agent_logs(logs, keys, settings, &request).await)
}

/// The agent name from the route's path parameter, or from the path itself when the router did
/// not fill the parameter in.
fn agent_name(request: &Request) -> Option<String> {
    if let Some(name) = request
        .path_parameters_ref()
        .and_then(|params| params.first("agentName"))
    {
        return Some(name.to_owned());
    }
    let path = request.raw_http_path();
    let name = path.strip_prefix("/v1/agents/")?.strip_suffix("/logs")?;
    Some(name.to_owned())
}

#[tracing::instrument(skip_all, fields(namespace, agent))]
async fn agent_logs<L: LogStore, K: KeyStore>(
    logs: &L,
    keys: &K,
    settings: Settings,
    request: &Request,
) -> Result<(StatusCode, LogsPage), ApiError> {
    let caller = auth::caller(request, keys).await?;
    let span = tracing::Span::current();
    span.record("namespace", caller.namespace.as_str());

    let not_found = || ApiError::NotFound("No agent of that name in this account".to_owned());
    let name = agent_name(request)
        .filter(|name| is_dns_label(name))
        .ok_or_else(not_found)?;
    span.record("agent", name.as_str());

    let params = request.query_string_parameters_ref();
    let query = LogQuery::from_params(params.into_iter().flat_map(|params| params.iter()))?;

    if !logs.agent_exists(&caller.namespace, &name).await? {
        return Err(not_found());
    }
    let filter = LogFilter::new(
        &caller.namespace,
        &name,
        &query,
        time::OffsetDateTime::now_utc(),
        settings.retention_days,
    );
    let (page, cost) = logs::read(logs, &filter, &query).await?;
    tracing::info!(
        returned = page.logs.len(),
        page_items_read = cost.page_items_read,
        total_items_read = cost.total_items_read,
        "logs read"
    );
    Ok((StatusCode::OK, page))
}
