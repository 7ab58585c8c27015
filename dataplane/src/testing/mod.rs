//! What the data plane's tests share: a scriptable engine whose replicas are in-process agents
//! speaking the container contract (`fake`), reports recorded as sent (`reports`), and the
//! scenarios every engine must pass (`scenarios`).

pub mod fake;
pub mod reports;
pub mod scenarios;

/// What each line of the agents' flood begins with, before its number: the `logLines` knob of
/// examples/agent/agent.py and of the fake agent, which the scenarios count.
pub const FLOOD_PREFIX: &str = "flood ";
