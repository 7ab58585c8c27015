//! A task's agent lines read back from its awslogs stream (CloudWatch Logs GetLogEvents,
//! forward from `since`), followed until the task is stopped. awslogs keeps one stream for
//! stdout and stderr and no marker of which: every line is `Stdout` here. Each event is one
//! line with its millisecond timestamp (awslogs splits lines over 256 KiB; not marked partial).

use std::collections::VecDeque;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use time::OffsetDateTime;

use super::definition::{AGENT_CONTAINER, GROUP_OPTION, PREFIX_OPTION, log_stream};
use super::error::sdk_error;
use super::tasks::{describe_one, task_id};
use super::{EcsClients, EcsConfig};
use crate::engine::{EngineError, LogLine, Output};
use crate::replica::ReplicaId;

/// Where a task's lines are, and how far they were read.
struct Reader {
    clients: EcsClients,
    config: Arc<EcsConfig>,
    replica: ReplicaId,
    since: Option<OffsetDateTime>,
    group: String,
    stream: String,
    token: Option<String>,
    buffered: VecDeque<LogLine>,
    /// The task was seen stopped: one more read, then the end.
    last_read: bool,
}

/// What a task's lines are read from, before its group and stream are known.
struct Opening {
    clients: EcsClients,
    config: Arc<EcsConfig>,
    replica: ReplicaId,
    since: Option<OffsetDateTime>,
}

enum State {
    Start(Box<Opening>),
    Reading(Box<Reader>),
    Done,
}

type Step = Option<(Result<LogLine, EngineError>, State)>;

/// The lines of `replica` from `since` (all when `None`), following.
pub fn follow(
    clients: EcsClients,
    config: Arc<EcsConfig>,
    replica: ReplicaId,
    since: Option<OffsetDateTime>,
) -> BoxStream<'static, Result<LogLine, EngineError>> {
    let opening = Opening {
        clients,
        config,
        replica,
        since,
    };
    stream::unfold(State::Start(Box::new(opening)), |state| async move {
        match state {
            State::Done => None,
            State::Start(opening) => match open(*opening).await {
                Ok(reader) => next(reader).await,
                Err(err) => Some((Err(err), State::Done)),
            },
            State::Reading(reader) => next(reader).await,
        }
    })
    .boxed()
}

/// Finds the task's log group and stream from its task definition's awslogs options (a task
/// stopped on AWS has lost its tags; its definition keeps them).
async fn open(opening: Opening) -> Result<Box<Reader>, EngineError> {
    let Opening {
        clients,
        config,
        replica,
        since,
    } = opening;
    let task = describe_one(&clients.ecs, &config.cluster, &replica)
        .await?
        .ok_or_else(|| EngineError::NoSuchReplica(replica.clone()))?;
    let definition = task
        .task_definition_arn()
        .ok_or_else(|| EngineError::NoSuchReplica(replica.clone()))?;
    let (group, prefix) = awslogs(&clients, definition).await?;
    let stream = log_stream(&prefix, task_id(&replica.0));
    Ok(Box::new(Reader {
        clients,
        config,
        replica,
        since,
        group,
        stream,
        token: None,
        buffered: VecDeque::new(),
        last_read: false,
    }))
}

/// The agent container's awslogs group and stream prefix.
async fn awslogs(clients: &EcsClients, definition: &str) -> Result<(String, String), EngineError> {
    let described = clients
        .ecs
        .describe_task_definition()
        .task_definition(definition)
        .send()
        .await
        .map_err(sdk_error)?;
    let options = described
        .task_definition()
        .into_iter()
        .flat_map(|definition| definition.container_definitions())
        .find(|container| container.name() == Some(AGENT_CONTAINER))
        .and_then(|container| container.log_configuration()?.options());
    let option = |name: &str| options.and_then(|options| options.get(name)).cloned();
    match (option(GROUP_OPTION), option(PREFIX_OPTION)) {
        (Some(group), Some(prefix)) => Ok((group, prefix)),
        _ => Err(EngineError::Refused(format!(
            "{definition} names no awslogs group and prefix for its agent"
        ))),
    }
}

/// The next line: a buffered one, else read (waiting between empty reads) until the task stops.
async fn next(mut reader: Box<Reader>) -> Step {
    loop {
        if let Some(line) = reader.buffered.pop_front() {
            return Some((Ok(line), State::Reading(reader)));
        }
        match read(&mut reader).await {
            Err(err) => return Some((Err(err), State::Done)),
            Ok(true) => continue,
            Ok(false) if reader.last_read => return None,
            Ok(false) => {}
        }
        match stopped(&reader).await {
            Err(err) => return Some((Err(err), State::Done)),
            Ok(true) => reader.last_read = true,
            Ok(false) => {}
        }
        tokio::time::sleep(reader.config.poll).await;
    }
}

/// One GetLogEvents forward; whether it found lines. A stream awslogs has not made yet is
/// empty.
async fn read(reader: &mut Reader) -> Result<bool, EngineError> {
    let mut request = reader
        .clients
        .logs
        .get_log_events()
        .log_group_name(&reader.group)
        .log_stream_name(&reader.stream)
        .start_from_head(true);
    // The start time with every token: moto counts its tokens within the time range.
    if let Some(since) = reader.since {
        request = request.start_time(millis(since));
    }
    if let Some(token) = &reader.token {
        request = request.next_token(token);
    }
    let page = match request.send().await {
        Ok(page) => page,
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|service| service.is_resource_not_found_exception()) =>
        {
            return Ok(false);
        }
        Err(err) => return Err(sdk_error(err)),
    };
    // CloudWatch keeps milliseconds: a line of the millisecond `since` falls in is kept.
    let since = reader.since.map(millis);
    let lines = page
        .events()
        .iter()
        .filter(|event| since.is_none_or(|since| event.timestamp() >= Some(since)))
        .filter_map(|event| {
            let at = at(event.timestamp()?)?;
            Some(LogLine {
                at,
                output: Output::Stdout,
                partial: false,
                text: event.message()?.to_owned(),
            })
        });
    let before = reader.buffered.len();
    reader.buffered.extend(lines);
    if let Some(token) = page.next_forward_token() {
        reader.token = Some(token.to_owned());
    }
    Ok(reader.buffered.len() > before)
}

/// Whether the task is stopped or gone (nothing more will be written).
async fn stopped(reader: &Reader) -> Result<bool, EngineError> {
    let task = describe_one(&reader.clients.ecs, &reader.config.cluster, &reader.replica).await?;
    Ok(task.is_none_or(|task| task.last_status() == Some("STOPPED")))
}

fn millis(at: OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

fn at(millis: i64) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000).ok()
}
