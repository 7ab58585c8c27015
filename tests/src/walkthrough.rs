//! The walkthroughs of the README and the docs, run as they are written: each command of a section's `sh`
//! block in one bash session against the stack, and each status written under a command
//! (`# 201 …`) checked. Only the block's first two lines, which name the reader's API and key,
//! are the stack's own here.

use crate::stack::{Stack, bearer};
use shared::auth::ApiKey;

/// One command of the walkthrough (continued lines joined) and the status written under it.
#[derive(Debug)]
struct Step {
    command: String,
    expected_status: Option<u16>,
}

/// The first `sh` block of the section of `file` (a path from the checkout's root) whose
/// heading starts with `heading`.
fn walkthrough_block(file: &str, heading: &str) -> String {
    let path = format!("{}/../{file}", env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(path).unwrap();
    let section = readme
        .split(&format!("\n## {heading}"))
        .nth(1)
        .unwrap_or_else(|| panic!("{file} has a section {heading}"));
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the section has a sh block");
    block.to_owned()
}

/// The block's steps, after its two opening lines (`API=…`, `AUTH=…`).
fn steps(block: &str) -> Vec<Step> {
    let mut lines = block.lines();
    assert!(lines.next().unwrap().starts_with("API="), "{block}");
    assert!(lines.next().unwrap().starts_with("AUTH="), "{block}");
    let mut steps: Vec<Step> = Vec::new();
    let mut continued: Option<String> = None;
    for line in lines {
        if let Some(head) = continued.take() {
            let command = format!("{head}\n{line}");
            match command.strip_suffix('\\') {
                Some(_) => continued = Some(command),
                None => steps.push(Step {
                    command,
                    expected_status: None,
                }),
            }
        } else if let Some(comment) = line.strip_prefix('#') {
            let status = comment
                .trim()
                .split(' ')
                .next()
                .and_then(|w| w.parse().ok());
            if let (Some(status), Some(last)) = (status, steps.last_mut())
                && last.expected_status.is_none()
            {
                last.expected_status = Some(status);
            }
        } else if line.trim().is_empty() {
        } else if line.ends_with('\\') {
            continued = Some(line.to_owned());
        } else {
            steps.push(Step {
                command: line.to_owned(),
                expected_status: None,
            });
        }
    }
    steps
}

/// Runs the block of `file`'s section `heading` against `stack` as `key`'s account: every command
/// exits 0 and answers the status written under it.
pub async fn run(stack: &Stack, key: &ApiKey, file: &str, heading: &str) {
    let steps = steps(&walkthrough_block(file, heading));
    assert!(steps.len() > 3, "{heading}: {steps:?}");
    // curl's status goes to stderr, so that a command's output stays what the reader sees.
    let mut script = format!(
        "curl() {{ command curl -w '%{{stderr}}@@STATUS %{{http_code}}\\n' \"$@\"; }}\n\
         API={}\nAUTH='Authorization: {}'\n",
        stack.api,
        bearer(key)
    );
    for (index, step) in steps.iter().enumerate() {
        script.push_str(&format!(
            "echo '@@STEP {index}' >&2\n{}\necho \"@@EXIT $?\" >&2\n",
            step.command
        ));
    }
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("timeout")
            .args(["300", "bash", "-c", &script])
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    let trace = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    for (index, step) in steps.iter().enumerate() {
        let marker = format!("@@STEP {index}\n");
        let ran = trace
            .split(&marker)
            .nth(1)
            .and_then(|rest| rest.split("@@EXIT ").next().map(|before| (rest, before)))
            .unwrap_or_else(|| panic!("step {index} did not finish: {}\n{trace}", step.command));
        let (rest, before_exit) = ran;
        let exit = rest[before_exit.len() + "@@EXIT ".len()..]
            .lines()
            .next()
            .unwrap_or_default();
        assert_eq!(exit, "0", "{}\n{trace}\n{stdout}", step.command);
        if let Some(expected) = step.expected_status {
            let status = before_exit
                .lines()
                .filter_map(|line| line.strip_prefix("@@STATUS "))
                .next_back();
            assert_eq!(
                status,
                Some(expected.to_string().as_str()),
                "{}\n{trace}\n{stdout}",
                step.command
            );
        }
    }
}
