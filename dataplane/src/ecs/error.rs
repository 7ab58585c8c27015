//! The AWS SDKs' failures as the engine port says them: no answer (a connection, a timeout, a
//! 5xx or throttling after the SDK's retries) is `Unavailable`; anything else AWS refused, with
//! its error code and message.

use std::error::Error;

use aws_sdk_ecs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::engine::EngineError;

/// Sorts an SDK error (ECS, Secrets Manager and CloudWatch Logs share the type).
pub fn sdk_error<E>(err: SdkError<E>) -> EngineError
where
    E: ProvideErrorMetadata + Error + Send + Sync + 'static,
{
    let status = err
        .raw_response()
        .map(|response| response.status().as_u16());
    match &err {
        SdkError::ServiceError(service) if status.is_none_or(|status| status < 500) => {
            let service = service.err();
            EngineError::Refused(format!(
                "{}: {}",
                service.code().unwrap_or("unknown"),
                service.message().unwrap_or("no message")
            ))
        }
        _ => EngineError::Unavailable(DisplayErrorContext(&err).to_string()),
    }
}

/// Whether an ECS error says the task named does not exist (StopTask, DescribeTasks).
pub fn is_task_not_found<E>(err: &SdkError<E>) -> bool
where
    E: ProvideErrorMetadata,
{
    err.as_service_error().is_some_and(|service| {
        service.code() == Some("InvalidParameterException")
            && service
                .message()
                .is_some_and(|message| message.contains("not found"))
    })
}
