//! Sessions (contract section 11): what is kept of one (`record`), whether an agent takes one
//! more (`start`: the cap, exact under any concurrency), the port a store implements (`store`),
//! what a start does over the ports (`lifecycle`), and the list of an agent's sessions (`listing`:
//! its request and its walk).

mod body;
pub mod lifecycle;
pub mod listing;
mod record;
pub mod report;
mod start;
mod store;
mod view;

pub use body::{MAX_SESSION_BODY_BYTES, start_request};
pub use record::{
    Connection, EXPIRY_GRACE, START_TIMEOUT, SessionRecord, SessionRequest, SessionState,
    Transport, completion, session_id_at, session_id_floor,
};
pub use start::{StartRefusal, admits, serving_deployment};
pub use store::{
    SessionKey, SessionStore, SessionSummary, SessionWrite, StartOutcome, StartedWithin,
    SummaryChunk, SummaryReader, most_overdue,
};
pub use view::{EndState, SessionView, StartAnswer};
