//! The `docker` command, as an operator runs it: what the e2e suites read of the engine (labels,
//! limits, which containers exist) they read this way, not through the data plane's own client.

use std::process::Command;

/// `docker ARGS...`: its stdout; panics when it fails.
pub fn docker(args: &[&str]) -> String {
    let output = Command::new("docker")
        .args(args)
        .output()
        .expect("the docker command runs");
    assert!(
        output.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}
