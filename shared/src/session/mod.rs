//! Sessions (contract section 11): what is kept of one (`record`), whether an agent takes one
//! more (`start`: the cap, exact under any concurrency), the port a store implements (`store`),
//! and what a start does over the ports (`lifecycle`).

mod body;
pub mod lifecycle;
mod record;
pub mod report;
mod start;
mod store;
mod view;

pub use body::{MAX_SESSION_BODY_BYTES, start_request};
pub use record::{Connection, SessionRecord, SessionRequest, SessionState, Transport};
pub use start::{StartRefusal, admits, serving_deployment};
pub use store::{SessionStore, SessionWrite, StartOutcome};
pub use view::{EndState, SessionView, StartAnswer, completion};
