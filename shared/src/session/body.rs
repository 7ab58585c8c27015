//! Reading a session start's body (contract section 11): every member optional, each checked,
//! an unknown member refused as everywhere else.

use serde_json::Value;

use super::record::{SessionRequest, Transport};
use crate::ApiError;
use crate::validation::JsonObject;

/// The most `body` may take, serialized: it travels to the data plane inside one event, whose
/// entry EventBridge caps at 256 KiB.
pub const MAX_SESSION_BODY_BYTES: usize = 48 * 1024;

/// Reads a start's body, already parsed as JSON; `None` (no body at all) starts a session with
/// nothing handed over.
pub fn start_request(body: Option<Value>) -> Result<SessionRequest, ApiError> {
    let Some(body) = body else {
        return Ok(SessionRequest::default());
    };
    let mut body = JsonObject::root(body)?;
    let request = SessionRequest {
        body: body
            .take_object("body")?
            .given()
            .map(|object| sized_body(object.into_json()))
            .transpose()?,
        create_daily_room: body.take_bool("createDailyRoom")?.given().unwrap_or(false),
        daily_room_properties: body
            .take_object("dailyRoomProperties")?
            .given()
            .map(|object| object.into_json().to_string()),
        transport: body
            .take_string("transport")?
            .given()
            .map(|name| transport(&name))
            .transpose()?,
    };
    body.finish()?;
    Ok(request)
}

/// `body` as the JSON text handed over, at most [`MAX_SESSION_BODY_BYTES`].
fn sized_body(body: Value) -> Result<String, ApiError> {
    let text = body.to_string();
    if text.len() > MAX_SESSION_BODY_BYTES {
        return Err(ApiError::bad_request(
            "body",
            format!(
                "body must be at most {MAX_SESSION_BODY_BYTES} bytes as JSON, not {}",
                text.len()
            ),
        ));
    }
    Ok(text)
}

fn transport(name: &str) -> Result<Transport, ApiError> {
    serde_json::from_value(Value::String(name.to_owned())).map_err(|_| {
        ApiError::bad_request(
            "transport",
            "transport must be 'daily', 'webrtc' or 'websocket'",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(body: Value) -> Option<String> {
        match start_request(Some(body)) {
            Err(ApiError::BadRequest { field, .. }) => field,
            other => panic!("expected a 400, got {other:?}"),
        }
    }

    #[test]
    fn no_body_and_an_empty_object_start_with_nothing_handed_over() {
        assert_eq!(start_request(None).unwrap(), SessionRequest::default());
        assert_eq!(
            start_request(Some(json!({}))).unwrap(),
            SessionRequest::default()
        );
    }

    #[test]
    fn the_sdk_s_body_is_kept_as_given() {
        let request = start_request(Some(json!({
            "createDailyRoom": true,
            "dailyRoomProperties": {"exp": 1_800_000_000, "enable_recording": "cloud"},
            "body": {"user": {"name": "Ada"}, "tags": [1, 2.5, null]},
            "transport": "daily",
        })))
        .unwrap();
        assert!(request.create_daily_room);
        assert_eq!(request.transport, Some(Transport::Daily));
        let body: Value = serde_json::from_str(request.body.as_deref().unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"user": {"name": "Ada"}, "tags": [1, 2.5, null]})
        );
        let properties: Value =
            serde_json::from_str(request.daily_room_properties.as_deref().unwrap()).unwrap();
        assert_eq!(properties["enable_recording"], "cloud");
    }

    #[test]
    fn null_members_are_left_out() {
        let request = start_request(Some(json!({
            "body": null, "createDailyRoom": null, "dailyRoomProperties": null, "transport": null
        })))
        .unwrap();
        assert_eq!(request, SessionRequest::default());
    }

    #[test]
    fn every_rule_names_its_member() {
        assert_eq!(field_of(json!({"body": "hi"})).as_deref(), Some("body"));
        assert_eq!(field_of(json!({"body": [1]})).as_deref(), Some("body"));
        assert_eq!(
            field_of(json!({"createDailyRoom": "yes"})).as_deref(),
            Some("createDailyRoom")
        );
        assert_eq!(
            field_of(json!({"dailyRoomProperties": 3})).as_deref(),
            Some("dailyRoomProperties")
        );
        assert_eq!(
            field_of(json!({"transport": "carrier-pigeon"})).as_deref(),
            Some("transport")
        );
        assert_eq!(
            field_of(json!({"transport": 1})).as_deref(),
            Some("transport")
        );
        assert_eq!(field_of(json!({"room": true})).as_deref(), Some("room"));
        assert!(matches!(
            start_request(Some(json!([]))),
            Err(ApiError::BadRequest { field: None, .. })
        ));
    }

    #[test]
    fn each_transport_is_taken_by_its_name_and_written_as_it() {
        for transport in [Transport::Daily, Transport::Webrtc, Transport::Websocket] {
            let request = start_request(Some(json!({"transport": transport.name()}))).unwrap();
            assert_eq!(request.transport, Some(transport));
            assert_eq!(serde_json::to_value(transport).unwrap(), transport.name());
        }
    }

    #[test]
    fn a_body_of_48_kib_is_taken_and_one_byte_more_is_not() {
        // {"k":"…"} is 8 bytes around the string.
        let at_limit = json!({"body": {"k": "x".repeat(MAX_SESSION_BODY_BYTES - 8)}});
        let taken = start_request(Some(at_limit)).unwrap();
        assert_eq!(taken.body.unwrap().len(), MAX_SESSION_BODY_BYTES);
        let over = json!({"body": {"k": "x".repeat(MAX_SESSION_BODY_BYTES - 7)}});
        assert_eq!(field_of(over).as_deref(), Some("body"));
    }
}
