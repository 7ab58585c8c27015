//! template.yaml's functions as the simulation calls them: by the name the stack's Invoke API
//! knows (sam: the logical id; cargo lambda watch: the binary), and the schedules that invoke
//! them (the sweeper's), run locally as EventBridge runs them on AWS.

use std::time::Duration;

use serde_json::Value;

use crate::rules::{RuleError, delivered, resources, template_error};

/// A function of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub logical: String,
    pub binary: String,
}

/// A function invoked on a schedule (a SAM `Type: Schedule` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub function: Function,
    pub every: Duration,
}

pub(crate) fn functions(text: &str) -> Result<Vec<(Function, serde_yaml::Value)>, RuleError> {
    Ok(resources(text)?
        .iter()
        .filter(|(_, resource)| resource["Type"].as_str() == Some("AWS::Serverless::Function"))
        .filter_map(|(name, resource)| {
            let binary = resource["Metadata"]["BuildProperties"]["Binary"].as_str()?;
            let function = Function {
                logical: name.as_str()?.to_owned(),
                binary: binary.to_owned(),
            };
            Some((function, resource["Properties"]["Events"].clone()))
        })
        .collect())
}

/// The function built from `binary`.
pub fn by_binary(text: &str, binary: &str) -> Result<Function, RuleError> {
    functions(text)?
        .into_iter()
        .map(|(function, _)| function)
        .find(|function| function.binary == binary)
        .ok_or_else(|| template_error(format!("no function is built from {binary}")))
}

/// `rate(N minute)`, `rate(N minutes)`, and the same of hours and days (EventBridge's units).
fn rate(expression: &str) -> Option<Duration> {
    let inner = expression.strip_prefix("rate(")?.strip_suffix(')')?;
    let (count, unit) = inner.split_once(' ')?;
    let count: u64 = count.parse().ok()?;
    let seconds = match unit.trim_end_matches('s') {
        "minute" => 60,
        "hour" => 3_600,
        "day" => 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(count * seconds))
}

/// Every schedule of the template.
pub fn schedules(text: &str) -> Result<Vec<Schedule>, RuleError> {
    let mut found = Vec::new();
    for (function, events) in functions(text)? {
        for (name, event) in events.as_mapping().into_iter().flatten() {
            if event["Type"].as_str() != Some("Schedule") {
                continue;
            }
            let expression = event["Properties"]["Schedule"].as_str().unwrap_or_default();
            let every = rate(expression).ok_or_else(|| {
                template_error(format!(
                    "{}.{}: a schedule of rate(...) only, not {expression:?}",
                    function.logical,
                    name.as_str().unwrap_or_default()
                ))
            })?;
            found.push(Schedule {
                function: function.clone(),
                every,
            });
        }
    }
    Ok(found)
}

/// The event a rule's schedule sends its function, fired `now`.
pub fn scheduled_event(now: time::OffsetDateTime) -> Value {
    let time = now
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    delivered(
        "aws.events",
        "Scheduled Event",
        &serde_json::json!({}),
        &time,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> String {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap()
    }

    #[test]
    fn the_sweeper_runs_every_minute_and_the_ingest_function_is_found_by_its_binary() {
        let schedules = schedules(&template()).unwrap();
        assert_eq!(
            schedules,
            [Schedule {
                function: Function {
                    logical: "SessionSweeperFunction".into(),
                    binary: "session-sweeper".into()
                },
                every: Duration::from_secs(60)
            }]
        );
        let ingest = by_binary(&template(), "ingest-logs").unwrap();
        assert_eq!(ingest.logical, "IngestLogsFunction");
        assert_eq!(rate("rate(5 minutes)"), Some(Duration::from_secs(300)));
        assert_eq!(rate("cron(0 * * * ? *)"), None);
    }

    #[test]
    fn a_scheduled_event_is_what_the_sweeper_reads() {
        let at = time::macros::datetime!(2026-11-25 10:00 UTC);
        let event = scheduled_event(at);
        assert_eq!(event["detail-type"], "Scheduled Event");
        assert_eq!(event["time"], "2026-11-25T10:00:00Z");
    }
}
