//! The Docker Engine's failures as the engine port says them: the daemon out of reach is
//! `Unavailable`, a 404 is the caller's to name (a replica, a network), anything else the
//! daemon refused, with its message.

use bollard::errors::Error;

use crate::engine::EngineError;
use crate::replica::ReplicaId;

/// A daemon's answer sorted: not found (its message), or another failure.
#[derive(Debug)]
pub enum Failure {
    NotFound(String),
    Other(EngineError),
}

impl Failure {
    /// A 404 about something that is not a replica is a refusal like any other.
    pub fn into_engine_error(self) -> EngineError {
        match self {
            Failure::NotFound(message) => EngineError::Refused(message),
            Failure::Other(err) => err,
        }
    }

    /// A 404 about `replica` is `NoSuchReplica`.
    pub fn about(self, replica: &ReplicaId) -> EngineError {
        match self {
            Failure::NotFound(_) => EngineError::NoSuchReplica(replica.clone()),
            Failure::Other(err) => err,
        }
    }
}

/// Sorts a bollard error.
pub fn failure(err: Error) -> Failure {
    match err {
        Error::DockerResponseServerError {
            status_code: 404,
            message,
        } => Failure::NotFound(message),
        Error::DockerResponseServerError { message, .. }
        | Error::DockerStreamError { error: message } => {
            Failure::Other(EngineError::Refused(message))
        }
        other if is_unreachable(&other) => {
            Failure::Other(EngineError::Unavailable(other.to_string()))
        }
        other => Failure::Other(EngineError::Refused(other.to_string())),
    }
}

/// A 409: what was to be made exists already (a network, a container's name).
pub fn is_conflict(err: &Error) -> bool {
    matches!(
        err,
        Error::DockerResponseServerError {
            status_code: 409,
            ..
        }
    )
}

/// Whether the daemon could not be reached at all (the socket, the connection, no answer).
pub fn is_unreachable(err: &Error) -> bool {
    matches!(
        err,
        Error::HyperLegacyError { .. }
            | Error::HyperResponseError { .. }
            | Error::IOError { .. }
            | Error::RequestTimeoutError
            | Error::SocketNotFoundError(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(status_code: u16, message: &str) -> Error {
        Error::DockerResponseServerError {
            status_code,
            message: message.to_owned(),
        }
    }

    #[test]
    fn a_404_about_a_replica_is_no_such_replica() {
        let replica = ReplicaId("abc".into());
        assert!(matches!(
            failure(server(404, "No such container: abc")).about(&replica),
            EngineError::NoSuchReplica(id) if id == replica
        ));
    }

    #[test]
    fn another_answer_is_refused_with_the_daemons_message() {
        let replica = ReplicaId("abc".into());
        assert!(matches!(
            failure(server(500, "driver failed")).about(&replica),
            EngineError::Refused(message) if message == "driver failed"
        ));
        assert!(matches!(
            failure(server(404, "network x not found")).into_engine_error(),
            EngineError::Refused(message) if message == "network x not found"
        ));
    }

    #[test]
    fn a_daemon_out_of_reach_is_unavailable() {
        let err = Error::SocketNotFoundError("/var/run/docker.sock".into());
        assert!(is_unreachable(&err));
        assert!(matches!(
            failure(err).into_engine_error(),
            EngineError::Unavailable(_)
        ));
        assert!(matches!(
            failure(Error::RequestTimeoutError).into_engine_error(),
            EngineError::Unavailable(_)
        ));
        assert!(!is_unreachable(&server(500, "x")));
    }
}
