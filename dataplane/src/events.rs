//! The control plane's events as the data plane takes them (contract section 7, as the stream
//! publisher puts them on the bus and the bus's rules deliver them): the manifest and a
//! session's request in DynamoDB's typed JSON, read with `shared::stream_events::untyped`.

use serde_json::Value;
use shared::manifest::Manifest;
use shared::session::SessionRequest;
use shared::stream_events::DetailType;

/// What the data plane is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlEvent {
    DeploymentRequested {
        agent: AgentRef,
        service_id: String,
        deployment_id: String,
        manifest: Box<Manifest>,
    },
    AgentDeleted {
        agent: AgentRef,
    },
    SessionRequested {
        agent: AgentRef,
        deployment_id: String,
        session_id: String,
        request: SessionRequest,
    },
    SessionStopRequested {
        agent: AgentRef,
        session_id: String,
    },
}

/// The agent an event is about (the agent port's reference).
pub use shared::agent::AgentRef;

/// Why an event could not be taken.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EventError {
    #[error("the event has no {0}")]
    Missing(&'static str),
    #[error("the event's {0} is malformed: {1}")]
    Malformed(&'static str, String),
}

impl ControlEvent {
    /// The event of a delivered bus event; `Ok(None)` for a detail-type the data plane does
    /// not take (its own reports).
    pub fn from_bus(event: &Value) -> Result<Option<Self>, EventError> {
        let detail = &event["detail"];
        let text = |name: &'static str| {
            detail[name]
                .as_str()
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
                .ok_or(EventError::Missing(name))
        };
        let agent = || -> Result<AgentRef, EventError> {
            Ok(AgentRef {
                namespace: text("namespace")?,
                name: text("agentName")?,
            })
        };
        let typed = |name: &'static str| {
            let plain = shared::stream_events::untyped(&detail[name]);
            if plain.is_null() {
                return Err(EventError::Missing(name));
            }
            Ok(plain)
        };
        Ok(Some(match DetailType::of(event) {
            Some(DetailType::DeploymentRequested) => ControlEvent::DeploymentRequested {
                agent: agent()?,
                service_id: text("serviceId")?,
                deployment_id: text("deploymentId")?,
                manifest: serde_json::from_value(typed("manifest")?)
                    .map_err(|error| EventError::Malformed("manifest", error.to_string()))?,
            },
            Some(DetailType::AgentDeleted) => ControlEvent::AgentDeleted { agent: agent()? },
            Some(DetailType::SessionRequested) => ControlEvent::SessionRequested {
                agent: agent()?,
                deployment_id: text("deploymentId")?,
                session_id: text("sessionId")?,
                request: serde_json::from_value(typed("request")?)
                    .map_err(|error| EventError::Malformed("request", error.to_string()))?,
            },
            Some(DetailType::SessionStopRequested) => ControlEvent::SessionStopRequested {
                agent: agent()?,
                session_id: text("sessionId")?,
            },
            None => return Ok(None),
        }))
    }
}
