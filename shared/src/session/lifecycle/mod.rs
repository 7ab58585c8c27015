//! What the session routes and reports do over the ports: a start and its bounded wait for the
//! data plane (`start`), a session found and stopped (`stop`), and the data plane's reports
//! applied (`reports`). Each write is conditioned on what was read, read again after a lost race.

mod reports;
mod start;
mod stop;
mod stored;

pub use reports::{SessionRetention, apply_report};
pub use start::{StartWait, reported, start};
pub use stop::{find, stop};
