//! What the agents table's stream publishes to the agents bus (contract sections 7 and 11): of
//! each committed write, the event the data plane hears of it by, published after the commit
//! and at least once (consumers deduplicate by deploymentId or sessionId).
//!
//! | record | event |
//! |---|---|
//! | a deployment's INSERT (create, update) | `Deployment Requested` |
//! | an agent's REMOVE (delete) | `Agent Deleted` |
//! | a session's INSERT (start) | `Session Requested` |
//! | the MODIFY that first gives a session `stopRequestedAt` | `Session Stop Requested` |
//!
//! A record is read as Lambda hands it over (DynamoDB's typed JSON under `dynamodb`), and the
//! manifest and a session's request travel in that typed JSON, as the stream holds them. The
//! template's event source mapping filters records by the same four patterns
//! ([`FILTERS`]), so the publisher is invoked for these writes only; a test holds the two to
//! one answer.

use std::future::Future;

use serde_json::{Map, Value, json};

use crate::error::StoreError;

/// The `source` of every event the control plane publishes.
pub const SOURCE: &str = "agent-hosting";
/// PutEvents takes at most 10 entries, of at most 256 KB together.
pub const MAX_BATCH: usize = 10;
pub const MAX_BATCH_BYTES: usize = 256 * 1024;

/// The event source mapping's filter patterns (template.yaml holds the same text).
pub const FILTERS: [&str; 4] = [
    r#"{"eventName":["INSERT"],"dynamodb":{"NewImage":{"kind":{"S":["deployment"]}}}}"#,
    r#"{"eventName":["REMOVE"],"dynamodb":{"OldImage":{"kind":{"S":["agent"]}}}}"#,
    r#"{"eventName":["INSERT"],"dynamodb":{"NewImage":{"kind":{"S":["session"]}}}}"#,
    r#"{"eventName":["MODIFY"],"dynamodb":{"NewImage":{"kind":{"S":["session"]},"stopRequestedAt":{"S":[{"exists":true}]}},"OldImage":{"stopRequestedAt":{"S":[{"exists":false}]}}}}"#,
];

/// The detail-types of the data plane's reports onto the same bus, the other way (contract
/// section 7): read by the status functions, sent by every data plane.
pub const DEPLOYMENT_STATUS: &str = "Deployment Status";
pub const SESSION_STATUS: &str = "Session Status";

/// The detail-types of the control plane's events (the table above).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailType {
    DeploymentRequested,
    AgentDeleted,
    SessionRequested,
    SessionStopRequested,
}

impl DetailType {
    pub const ALL: [DetailType; 4] = [
        DetailType::DeploymentRequested,
        DetailType::AgentDeleted,
        DetailType::SessionRequested,
        DetailType::SessionStopRequested,
    ];

    /// The detail-type of a bus event (its `detail-type` member), if it is one of the four.
    pub fn of(event: &Value) -> Option<DetailType> {
        let name = event["detail-type"].as_str()?;
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DetailType::DeploymentRequested => "Deployment Requested",
            DetailType::AgentDeleted => "Agent Deleted",
            DetailType::SessionRequested => "Session Requested",
            DetailType::SessionStopRequested => "Session Stop Requested",
        }
    }
}

/// One event for the bus.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub detail_type: DetailType,
    pub detail: Value,
}

impl Published {
    /// Its size as PutEvents counts it against [`MAX_BATCH_BYTES`]: source, detail-type and
    /// detail, in bytes.
    pub fn entry_bytes(&self) -> usize {
        SOURCE.len() + self.detail_type.as_str().len() + self.detail.to_string().len()
    }
}

/// A record of one of the four writes that lacks what its event carries: no event can be made
/// of it (a store's bug, or a record not of this table).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a {detail_type} record without {path}")]
pub struct Unpublishable {
    pub detail_type: &'static str,
    pub path: &'static str,
}

/// The typed attribute at `path` (a JSON pointer into the record) as the event carries it: a
/// string's text, a map as typed JSON.
fn member(
    record: &Value,
    detail_type: DetailType,
    path: &'static str,
) -> Result<Value, Unpublishable> {
    let missing = || Unpublishable {
        detail_type: detail_type.as_str(),
        path,
    };
    let value = record.pointer(path).ok_or_else(missing)?;
    match path.rsplit('/').next() {
        Some("S") => value.as_str().map(|text| json!(text)).ok_or_else(missing),
        Some("M") => value.is_object().then(|| value.clone()).ok_or_else(missing),
        _ => Err(missing()),
    }
}

fn text_at<'a>(record: &'a Value, path: &str) -> Option<&'a str> {
    record.pointer(path).and_then(Value::as_str)
}

/// Which event a record is, if any (the same as [`FILTERS`] select).
fn detail_type_of(record: &Value) -> Option<DetailType> {
    let new_kind = text_at(record, "/dynamodb/NewImage/kind/S");
    let old_kind = text_at(record, "/dynamodb/OldImage/kind/S");
    let stop_asked = |image: &str| {
        record
            .pointer(&format!("/dynamodb/{image}/stopRequestedAt/S"))
            .is_some()
    };
    match (text_at(record, "/eventName")?, new_kind, old_kind) {
        ("INSERT", Some("deployment"), _) => Some(DetailType::DeploymentRequested),
        ("REMOVE", _, Some("agent")) => Some(DetailType::AgentDeleted),
        ("INSERT", Some("session"), _) => Some(DetailType::SessionRequested),
        ("MODIFY", Some("session"), _) if stop_asked("NewImage") && !stop_asked("OldImage") => {
            Some(DetailType::SessionStopRequested)
        }
        _ => None,
    }
}

/// The event of a stream record, if the data plane hears of that write.
pub fn event_of(record: &Value) -> Result<Option<Published>, Unpublishable> {
    let Some(detail_type) = detail_type_of(record) else {
        return Ok(None);
    };
    let members: &[(&str, &'static str)] = match detail_type {
        DetailType::DeploymentRequested => &[
            ("namespace", "/dynamodb/NewImage/namespace/S"),
            ("agentName", "/dynamodb/NewImage/agentName/S"),
            ("serviceId", "/dynamodb/NewImage/serviceId/S"),
            ("deploymentId", "/dynamodb/NewImage/deploymentId/S"),
            ("manifest", "/dynamodb/NewImage/deployment/M/manifest/M"),
        ],
        DetailType::AgentDeleted => &[
            ("namespace", "/dynamodb/OldImage/namespace/S"),
            ("agentName", "/dynamodb/OldImage/agentName/S"),
            ("serviceId", "/dynamodb/OldImage/serviceId/S"),
            (
                "deploymentId",
                "/dynamodb/OldImage/active/M/deployment/M/id/S",
            ),
            (
                "manifest",
                "/dynamodb/OldImage/active/M/deployment/M/manifest/M",
            ),
        ],
        DetailType::SessionRequested => &[
            ("namespace", "/dynamodb/NewImage/namespace/S"),
            ("agentName", "/dynamodb/NewImage/agentName/S"),
            ("serviceId", "/dynamodb/NewImage/serviceId/S"),
            ("deploymentId", "/dynamodb/NewImage/deploymentId/S"),
            ("sessionId", "/dynamodb/NewImage/sessionId/S"),
            ("request", "/dynamodb/NewImage/request/M"),
        ],
        DetailType::SessionStopRequested => &[
            ("namespace", "/dynamodb/NewImage/namespace/S"),
            ("agentName", "/dynamodb/NewImage/agentName/S"),
            ("serviceId", "/dynamodb/NewImage/serviceId/S"),
            ("deploymentId", "/dynamodb/NewImage/deploymentId/S"),
            ("sessionId", "/dynamodb/NewImage/sessionId/S"),
        ],
    };
    let mut detail = Map::new();
    for (name, path) in members {
        detail.insert((*name).to_owned(), member(record, detail_type, path)?);
    }
    Ok(Some(Published {
        detail_type,
        detail: Value::Object(detail),
    }))
}

/// The bus the events go to.
pub trait EventBus: Send + Sync {
    /// Puts `events` (at most [`MAX_BATCH`]) on the bus; for each, in order, whether the bus
    /// refused it (EventBridge answers entry by entry).
    fn put(
        &self,
        events: &[Published],
    ) -> impl Future<Output = Result<Vec<bool>, StoreError>> + Send;
}

/// What became of a batch of records.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BatchOutcome {
    pub published: usize,
    /// Records of the four writes no event can be made of (or whose event is past PutEvents'
    /// bound): retrying cannot help, and holding the shard for them would hold every later
    /// event, so they are logged (an alarm watches for it) and passed.
    pub unpublishable: usize,
    /// The identifiers of the records whose event the bus refused or could not take. Lambda
    /// retries the batch from the lowest of them, then hands it to the failure destination.
    pub failed: Vec<String>,
}

/// The message an unpublishable record is logged with (template.yaml's metric filter reads it).
pub const UNPUBLISHABLE: &str = "a record no event can be made of";

/// Batches of events for PutEvents: in order, at most [`MAX_BATCH`] and [`MAX_BATCH_BYTES`] each,
/// each event given with its [`Published::entry_bytes`].
fn batches<T>(events: Vec<(T, Published, usize)>) -> Vec<Vec<(T, Published)>> {
    let mut batches: Vec<Vec<(T, Published)>> = Vec::new();
    let mut bytes = 0;
    for (id, event, size) in events {
        match batches.last_mut() {
            Some(batch) if batch.len() < MAX_BATCH && bytes + size <= MAX_BATCH_BYTES => {
                bytes += size;
                batch.push((id, event));
            }
            _ => {
                bytes = size;
                batches.push(vec![(id, event)]);
            }
        }
    }
    batches
}

/// Publishes the events of `records` (each with its identifier: its sequence number), in order.
pub async fn publish<B: EventBus>(bus: &B, records: &[(String, Value)]) -> BatchOutcome {
    let mut outcome = BatchOutcome::default();
    let mut pending: Vec<(&str, Published, usize)> = Vec::new();
    for (id, record) in records {
        let made = event_of(record).and_then(|event| {
            let Some(event) = event else { return Ok(None) };
            match event.entry_bytes() {
                size if size > MAX_BATCH_BYTES => Err(Unpublishable {
                    detail_type: event.detail_type.as_str(),
                    path: "(the whole event: over PutEvents' 256 KB)",
                }),
                size => Ok(Some((event, size))),
            }
        });
        match made {
            Ok(Some((event, size))) => pending.push((id, event, size)),
            Ok(None) => {}
            Err(error) => {
                tracing::error!(record = %id, %error, "{UNPUBLISHABLE}");
                outcome.unpublishable += 1;
            }
        }
    }
    for batch in batches(pending) {
        let (ids, events): (Vec<&str>, Vec<Published>) = batch.into_iter().unzip();
        match bus.put(&events).await {
            Ok(refused) => {
                for ((id, event), refused) in ids.iter().zip(&events).zip(refused) {
                    if refused {
                        tracing::warn!(record = %id, detail_type = event.detail_type.as_str(), "the bus refused an event");
                        outcome.failed.push((*id).to_owned());
                    } else {
                        outcome.published += 1;
                    }
                }
            }
            Err(error) => {
                tracing::warn!(error = %crate::error::DisplayErrorContext(&error), "the bus could not be reached");
                outcome.failed.extend(ids.iter().map(|id| (*id).to_owned()));
            }
        }
    }
    outcome
}

/// Plain JSON of DynamoDB's typed JSON (what a consumer of the published events does with the
/// manifest): `{"S": "a"}` → `"a"`, `{"N": "1"}` → `1`, `{"M": {...}}` → an object, and a map of
/// typed values (an item image) → an object.
pub fn untyped(value: &Value) -> Value {
    let Value::Object(fields) = value else {
        return value.clone();
    };
    let plain_map = |map: &Map<String, Value>| {
        Value::Object(map.iter().map(|(k, v)| (k.clone(), untyped(v))).collect())
    };
    match (fields.len(), fields.iter().next()) {
        (1, Some((kind, inner))) => match (kind.as_str(), inner) {
            ("S", text @ Value::String(_)) => text.clone(),
            ("N", Value::String(number)) => serde_json::from_str(number).unwrap_or(Value::Null),
            ("BOOL", flag @ Value::Bool(_)) => flag.clone(),
            ("NULL", _) => Value::Null,
            ("M", Value::Object(map)) => plain_map(map),
            ("L", Value::Array(items)) => Value::Array(items.iter().map(untyped).collect()),
            ("SS" | "BS" | "B", other) => other.clone(),
            ("NS", Value::Array(items)) => Value::Array(
                items
                    .iter()
                    .map(|n| {
                        serde_json::from_str(n.as_str().unwrap_or("null")).unwrap_or(Value::Null)
                    })
                    .collect(),
            ),
            _ => plain_map(fields),
        },
        _ => plain_map(fields),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session_insert() -> Value {
        json!({"eventName": "INSERT", "dynamodb": {"NewImage": {
            "kind": {"S": "session"}, "namespace": {"S": "ns"}, "agentName": {"S": "a"},
            "serviceId": {"S": "svc"}, "deploymentId": {"S": "d"}, "sessionId": {"S": "s"},
            "request": {"M": {"createDailyRoom": {"BOOL": false}}}}}})
    }

    #[test]
    fn a_session_s_insert_is_session_requested_with_its_request_as_stored() {
        let event = event_of(&session_insert()).unwrap().unwrap();
        assert_eq!(event.detail_type, DetailType::SessionRequested);
        assert_eq!(
            event.detail,
            json!({"namespace": "ns", "agentName": "a", "serviceId": "svc", "deploymentId": "d",
                   "sessionId": "s", "request": {"createDailyRoom": {"BOOL": false}}})
        );
    }

    #[test]
    fn a_stop_is_published_once_and_other_writes_not_at_all() {
        let mut modify = session_insert();
        modify["eventName"] = json!("MODIFY");
        modify["dynamodb"]["OldImage"] = modify["dynamodb"]["NewImage"].clone();
        assert_eq!(event_of(&modify).unwrap(), None, "no stop asked");
        modify["dynamodb"]["NewImage"]["stopRequestedAt"] = json!({"S": "t"});
        let stop = event_of(&modify).unwrap().unwrap();
        assert_eq!(stop.detail_type, DetailType::SessionStopRequested);
        assert!(stop.detail.get("request").is_none());
        modify["dynamodb"]["OldImage"]["stopRequestedAt"] = json!({"S": "t"});
        assert_eq!(event_of(&modify).unwrap(), None, "asked before");
        let agent_put =
            json!({"eventName": "INSERT", "dynamodb": {"NewImage": {"kind": {"S": "agent"}}}});
        assert_eq!(event_of(&agent_put).unwrap(), None);
    }

    #[test]
    fn a_record_missing_what_its_event_carries_is_unpublishable() {
        let mut record = session_insert();
        record["dynamodb"]["NewImage"]
            .as_object_mut()
            .unwrap()
            .remove("sessionId");
        assert_eq!(
            event_of(&record),
            Err(Unpublishable {
                detail_type: "Session Requested",
                path: "/dynamodb/NewImage/sessionId/S"
            })
        );
    }

    /// A bus that refuses the events of one session id, or is down.
    struct FakeBus {
        refused: &'static str,
        down: bool,
    }

    impl EventBus for FakeBus {
        async fn put(&self, events: &[Published]) -> Result<Vec<bool>, StoreError> {
            assert!(events.len() <= MAX_BATCH);
            if self.down {
                return Err(StoreError::Timeout("no bus".into()));
            }
            Ok(events
                .iter()
                .map(|event| event.detail["sessionId"] == self.refused)
                .collect())
        }
    }

    #[test]
    fn batches_keep_to_ten_entries_and_256_kb() {
        let event = |kb: usize| {
            let mut record = session_insert();
            record["dynamodb"]["NewImage"]["request"]["M"]["body"] =
                json!({"S": "x".repeat(kb * 1024)});
            event_of(&record).unwrap().unwrap()
        };
        let sized = |kb: usize, i: usize| {
            let event = event(kb);
            let size = event.entry_bytes();
            (i, event, size)
        };
        let small: Vec<(usize, Published, usize)> = (0..25).map(|i| sized(0, i)).collect();
        let sizes: Vec<usize> = batches(small).iter().map(Vec::len).collect();
        assert_eq!(sizes, [10, 10, 5]);
        let large: Vec<(usize, Published, usize)> = (0..7).map(|i| sized(48, i)).collect();
        for batch in batches(large) {
            let bytes: usize = batch.iter().map(|(_, e)| e.entry_bytes()).sum();
            assert!(bytes <= MAX_BATCH_BYTES, "{bytes}");
        }
    }

    #[tokio::test]
    async fn a_record_no_event_can_be_made_of_is_passed_not_retried() {
        let mut broken = session_insert();
        broken["dynamodb"]["NewImage"]
            .as_object_mut()
            .unwrap()
            .remove("namespace");
        let records = vec![
            ("seq-1".to_owned(), broken),
            ("seq-2".to_owned(), session_insert()),
        ];
        let bus = FakeBus {
            refused: "",
            down: false,
        };
        let outcome = publish(&bus, &records).await;
        assert_eq!(
            outcome,
            BatchOutcome {
                published: 1,
                unpublishable: 1,
                failed: vec![]
            }
        );
    }

    #[tokio::test]
    async fn what_the_bus_refuses_or_cannot_take_is_named_by_its_record() {
        let records: Vec<(String, Value)> = (0..25)
            .map(|i| {
                let mut record = session_insert();
                record["dynamodb"]["NewImage"]["sessionId"] = json!({"S": format!("s{i}")});
                (format!("seq-{i}"), record)
            })
            .collect();
        let bus = FakeBus {
            refused: "s13",
            down: false,
        };
        let outcome = publish(&bus, &records).await;
        assert_eq!(outcome.published, 24);
        assert_eq!(outcome.failed, ["seq-13"]);
        let down = FakeBus {
            refused: "",
            down: true,
        };
        assert_eq!(publish(&down, &records[..3]).await.failed.len(), 3);
    }
}
