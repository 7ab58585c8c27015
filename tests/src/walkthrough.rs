//! The walkthroughs of the README and the docs, run as they are written: each command of a section's `sh`
//! block in one bash session against the stack, and each status written under a command
//! (`# 201 …`) checked, and so is the body written after it (`# 200 {"status":"OK"}`): its
//! pieces between `…` or a `<placeholder>` must appear in the command's output, in order. Only
//! the block's first two lines, which name the reader's API and key, are the stack's own here.

use crate::stack::{Stack, bearer};
use shared::auth::ApiKey;

/// One command of the walkthrough (continued lines joined), and the status and body written
/// under it.
#[derive(Debug)]
struct Step {
    command: String,
    expected_status: Option<u16>,
    /// The body's pieces, in order; none when the comment writes no body.
    expected_body: Vec<String>,
}

/// The pieces of a body as a comment writes it: its text between the `…` and `<placeholder>`
/// that stand for anything. A comment that is not a body (prose) has none.
fn body_pieces(written: &str) -> Vec<String> {
    let written = written.trim();
    if !written.starts_with(['{', '"']) {
        return Vec::new();
    }
    let mut pieces = vec![String::new()];
    let mut placeholder = false;
    for c in written.chars() {
        match c {
            '…' => pieces.push(String::new()),
            '<' if !placeholder => {
                placeholder = true;
                pieces.push(String::new());
            }
            '>' if placeholder => placeholder = false,
            _ if placeholder => {}
            c => pieces.last_mut().expect("one piece at least").push(c),
        }
    }
    pieces.retain(|piece| !piece.is_empty());
    pieces
}

/// Whether `output` holds every piece, in order.
fn holds_in_order(output: &str, pieces: &[String]) -> bool {
    let mut rest = output;
    pieces.iter().all(|piece| match rest.find(piece.as_str()) {
        Some(at) => {
            rest = &rest[at + piece.len()..];
            true
        }
        None => false,
    })
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
                    expected_body: Vec::new(),
                }),
            }
        } else if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim();
            let (first, written) = comment.split_once(' ').unwrap_or((comment, ""));
            let status = first.parse().ok();
            if let (Some(status), Some(last)) = (status, steps.last_mut())
                && last.expected_status.is_none()
            {
                last.expected_status = Some(status);
                last.expected_body = body_pieces(written);
            }
        } else if line.trim().is_empty() {
        } else if line.ends_with('\\') {
            continued = Some(line.to_owned());
        } else {
            steps.push(Step {
                command: line.to_owned(),
                expected_status: None,
                expected_body: Vec::new(),
            });
        }
    }
    steps
}

/// Runs the block of `file`'s section `heading` against `stack` as `key`'s account: every command
/// exits 0 and answers the status and body written under it.
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
            "echo '@@STEP {index}' >&2\necho '@@STEP {index}'\n{}\necho \"@@EXIT $?\" >&2\n",
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
        let printed = stdout
            .split(&marker)
            .nth(1)
            .map(|rest| rest.split("@@STEP ").next().unwrap_or(rest))
            .unwrap_or_default();
        assert!(
            holds_in_order(printed, &step.expected_body),
            "{}\nanswered {printed}\nnot the body written under it: {:?}",
            step.command,
            step.expected_body
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_body_is_its_pieces_between_ellipses_and_placeholders() {
        let pieces = body_pieces(r#"{…,"activeDeploymentId":"<a new id>","ready":true,…}"#);
        assert_eq!(
            pieces,
            [
                r#"{"#,
                r#","activeDeploymentId":""#,
                r#"","ready":true,"#,
                "}"
            ]
        );
        assert!(body_pieces("(prose, not a body)").is_empty());
        let answer = r#"{"name":"a","activeDeploymentId":"0193","ready":true,"x":1}"#;
        assert!(holds_in_order(answer, &pieces));
        let not_ready = r#"{"activeDeploymentId":"0193","ready":false}"#;
        assert!(!holds_in_order(not_ready, &pieces));
        let reordered = r#"{"ready":true,"activeDeploymentId":"0193"}"#;
        assert!(!holds_in_order(reordered, &pieces), "in order");
    }
}
