//! What the session routes and reports do over the ports: a start and its bounded wait for the
//! data plane (`start`), a session found and stopped (`stop`), and the data plane's reports
//! applied (`reports`); what the data plane never ends, ended at its deadline or with its agent
//! (`deadlines`). Each write is conditioned on what was read, read again after a lost race.

mod deadlines;
mod reports;
mod start;
mod stop;
mod stored;

pub use deadlines::{Ended, NotAllEnded, SWEEP_BATCH, end_sessions_of, longest_active, sweep};
pub use reports::{SessionRetention, apply_report};
pub use start::{StartWait, reported, start};
pub use stop::{find, stop};
