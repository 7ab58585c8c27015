//! The HTTP edge shared by every endpoint: how a request enters a handler ([`route`]: who calls,
//! and whether the route takes them, [`Callers`]), what its path names, reading a JSON body
//! safely, and building every response (success or error) in one place ([`respond`]).

mod body;
mod caller;
mod params;
mod response;
mod route;

pub use body::{MAX_BODY_BYTES, json_body, request_json};
pub use caller::Callers;
pub use params::{agent_name, if_match, path_parameter, session_id};
pub use response::{
    Json, Reply, StatusOk, error_response, json_bytes_response, json_response, respond, status_ok,
};
pub use route::{agent_route, allow, route};
