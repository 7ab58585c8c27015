//! The anchor's CLI as the anchor_cli suite runs it (a module of tests/e2e/anchor_cli.rs): PyPI
//! pipecatcloud 1.4.0, unchanged, pointed at the stack with the variables of
//! docs/anchor-cli.md ("The variables"), in plain output; each command bounded in
//! time, its exit status and its lines read as a user reads them.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use integration_tests::bounded::{self, Bound, Try};
pub use integration_tests::docker::docker;
use integration_tests::stack::Stack;
use shared::auth::ApiKey;

/// What PIPECAT_ORG names: the CLI prints it, it sends nothing of it on these paths.
pub const ORG: &str = "e2e";

/// The longest a deploy may take here: a ready example agent is seen by the CLI's second poll
/// (5 s apart), a crash loop is reported after its third failure (~5 s of backoff); the CLI's
/// own bound (120 polls, 600 s) is far past it.
const DEPLOY_BOUND: Duration = Duration::from_secs(180);
/// The longest any other command may take (one or two requests).
const COMMAND_BOUND: Duration = Duration::from_secs(60);

/// The CLI of one account: its own working directory, config file and deploy config path.
pub struct Cli {
    bin: String,
    host: String,
    token: String,
    dir: PathBuf,
}

/// One command's run: its exit status and what it printed.
pub struct Run {
    pub command: String,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Cli {
    pub fn new(stack: &Stack, key: &ApiKey) -> Self {
        Cli::with_token(stack, key.expose())
    }

    /// The CLI given a person's access token as PIPECAT_TOKEN (what `organizations keys` needs).
    pub fn with_token(stack: &Stack, token: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("pcc-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), "").unwrap();
        Cli {
            bin: std::env::var("PIPECAT_BIN")
                .expect("PIPECAT_BIN: scripts/e2e.sh installs the CLI"),
            host: stack.api.trim_end_matches("/v1").to_owned(),
            token: token.to_owned(),
            dir,
        }
    }

    /// The deploy config file the CLI reads (absent unless a test writes it).
    pub fn deploy_config(&self) -> PathBuf {
        self.dir.join("pcc-deploy.toml")
    }

    /// `pipecat cloud ARGS...`, in plain output, within its bound (`timeout` kills it past it:
    /// exit 124).
    pub fn run(&self, args: &[&str]) -> Run {
        let bound = match args.contains(&"deploy") {
            true => DEPLOY_BOUND,
            false => COMMAND_BOUND,
        };
        let output = Command::new("timeout")
            .args([
                "--kill-after=10",
                &format!("{}", bound.as_secs()),
                &self.bin,
            ])
            .arg("cloud")
            .args(args)
            .current_dir(&self.dir)
            .env("PIPECAT_API_HOST", &self.host)
            .env("PIPECAT_SERVICES_PATH", "/v1/agents")
            .env(
                "PIPECAT_SERVICES_DEPLOYMENTS_PATH",
                "/v1/agents/{service}/deployments",
            )
            .env("PIPECAT_SERVICES_LOGS_PATH", "/v1/agents/{service}/logs")
            .env(
                "PIPECAT_SERVICES_SESSIONS_PATH",
                "/v1/agents/{service}/sessions",
            )
            .env("PIPECAT_SECRETS_PATH", "/v1/secrets")
            .env("PIPECAT_PROPERTIES_PATH", "/v1/properties")
            .env("PIPECAT_REGIONS_PATH", "/v1/regions")
            .env("PIPECAT_API_KEYS_PATH", "/v1/keys")
            .env("PIPECAT_TOKEN", &self.token)
            .env("PIPECAT_ORG", ORG)
            .env("PIPECAT_CONFIG_PATH", self.dir.join("config.toml"))
            .env("PIPECAT_DEPLOY_CONFIG_PATH", self.deploy_config())
            .env("PIPECAT_OUTPUT", "plain")
            .env("NO_COLOR", "1")
            // No line is wrapped at a terminal's width.
            .env("COLUMNS", "400")
            .output()
            .expect("the anchor's CLI runs");
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        Run {
            command: format!("pipecat cloud {}", args.join(" ")),
            code: output.status.code().unwrap_or(-1),
            stdout: text(&output.stdout),
            stderr: text(&output.stderr),
        }
    }

    /// `run(args)`, again every second while `done` does not hold of it (30 tries at most): for
    /// what the stack shows a moment later (a session's lines).
    pub fn run_until(&self, args: &[&str], done: impl Fn(&Run) -> bool) -> Run {
        let bound = Bound::new(30, Duration::from_secs(60));
        bounded::until_blocking(&format!("pipecat cloud {}", args.join(" ")), bound, || {
            let run = self.run(args);
            match done(&run) {
                true => Try::Done(run),
                false => Try::Again {
                    why: run.to_string(),
                    wait: Duration::from_secs(1),
                },
            }
        })
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` exited {}\n--- stdout\n{}--- stderr\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }
}

impl Run {
    /// Asserts the exit status; the run, for its lines.
    pub fn exits(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "{self}");
        self
    }

    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.stdout.lines()
    }

    /// Asserts that stdout has this line, whole.
    pub fn has_line(&self, line: &str) -> &Self {
        assert!(self.lines().any(|l| l == line), "no line {line:?}: {self}");
        self
    }

    /// The first line of stdout starting with `prefix`; panics without one.
    pub fn line_starting(&self, prefix: &str) -> &str {
        self.lines()
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?}: {self}"))
    }

    /// The lines after the one that is `header` (a listing's rows), up to an empty line.
    pub fn rows_after(&self, header: &str) -> Vec<Vec<&str>> {
        let rows = self.lines().skip_while(|line| *line != header).skip(1);
        rows.take_while(|line| !line.is_empty())
            .map(|line| line.split('\t').collect())
            .collect()
    }

    /// stdout as the one JSON object `--output json` prints.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self}"))
    }
}

/// Waits (60 s at most) until no container of the agent is left on the engine, in any state.
pub fn until_no_container(namespace: &str, agent: &str) {
    let stack = std::env::var("DATA_PLANE_STACK").expect("DATA_PLANE_STACK: scripts/e2e.sh");
    let filters = [
        format!("label=agent-hosting.stack={stack}"),
        format!("label=agent-hosting.namespace={namespace}"),
        format!("label=agent-hosting.agent={agent}"),
    ];
    let bound = Bound::new(120, Duration::from_secs(60));
    bounded::until_blocking(&format!("no container of {agent}"), bound, || {
        let mut args = vec!["ps", "-a", "-q"];
        for filter in &filters {
            args.extend(["--filter", filter.as_str()]);
        }
        let left = docker(&args);
        match left.trim().is_empty() {
            true => Try::Done(()),
            false => Try::Again {
                why: format!("containers left: {left}"),
                wait: Duration::from_millis(500),
            },
        }
    });
}
