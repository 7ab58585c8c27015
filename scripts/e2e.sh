#!/usr/bin/env bash
# The end-to-end suites, against a stack of their own (scripts/stack.sh) on free ports and an
# in-memory DynamoDB Local, stopped after:
#
#   scripts/e2e.sh watch SUITE...   the functions behind cargo lambda watch
#   scripts/e2e.sh sam SUITE...     the template as deployed, through sam local
#
# Suites: http (tests/e2e/http.rs: the API over HTTP), sessions (tests/e2e/anchor_sessions.rs: the
# anchor's SDK and CLI start, list and stop sessions through the stack, its data plane on the
# Docker Engine running the example agent), invoke
# (tests/e2e/sam_invoke.rs: every fixture of events/ through `sam local invoke`; sam only),
# schemathesis (openapi.yaml against
# the API, every check and phase, deterministic; SCHEMATHESIS_EXAMPLES an operation), backlog
# (tests/e2e/backlog.rs: a burst of deployments and data plane restarts; it starts and stops
# the data plane itself, so it runs alone, on a stack without one), plaintext
# (tests/e2e/plaintext.rs: the anchor's CLI round trip on secret sets, then a value planted
# through the API looked for in every answer, log and DynamoDB Local file under .local/; it runs
# alone, on a stack whose DynamoDB Local keeps its data on disk, in .local/e2e-dynamodb, with the
# functions logging at info as deployed), dataplane (tests/e2e/dataplane.rs: the data plane on
# the Docker Engine running the example agent's image: replicas, sessions, logs, failures,
# delete), anchor-cli (tests/e2e/anchor_cli.rs: the anchor's CLI, whole, on the Docker Engine's
# data plane: deploy, update, status, deployments, a crash loop, scale, start, sessions, logs,
# stop, list, delete, and the members refused; docs/anchor-cli.md),
# dataplane-bench (tests/e2e/dataplane_bench.rs: make bench's figures of the data plane on
# Docker; not in make test), people (tests/e2e/people.rs: a person's Cognito access token from
# the stack's moto pool on the API and /v1/keys, keys refused there, expired and forged tokens),
# console (console/e2e/: the console in Debian's chromium through playwright-core, against a fake
# /v1 on the stack's moto, then issue 35's walk on the stack; screenshots in .local/e2e-console;
# docs/console.md), console-offline (the first half alone, for working on the console). Nothing the stack starts outlives the run (scripts/stack.sh,
# stack_contain).
#
# The data plane of the stack runs on the Docker Engine for the dataplane, anchor-cli and
# sessions suites (each alone, but for dataplane and anchor-cli, which may share one stack:
# `e2e.sh watch dataplane anchor-cli` starts it once, for CI's time);
# the suites written for the simulation (their agents' images are names no registry here serves:
# on a real engine they fail to pull) run it as the simulation, said in spec.deploymentMode
# (simulated).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: e2e.sh watch|sam SUITE...}
# The sessions suite runs real sessions: listed with suites written for the simulation, it runs
# first, on a stack of its own whose data plane is on Docker, then the others on theirs.
if [[ " ${*:2} " == *" sessions "* && $# -gt 2 ]]; then
  "$PWD/scripts/e2e.sh" "$mode" sessions
  others=()
  for suite in "${@:2}"; do [ "$suite" = sessions ] || others+=("$suite"); done
  exec "$PWD/scripts/e2e.sh" "$mode" "${others[@]}"
fi
source scripts/stack.sh
# Which way the stack serves the functions (stack_moto binds moto for it).
export STACK_MODE=$mode
# Whether every suite named is one that may share a stack on the Docker Engine.
docker_shared() {
  local suite
  for suite in "$@"; do
    case "$suite" in dataplane | anchor-cli | console) ;; *) return 1 ;; esac
  done
}
if [[ " ${*:2} " == *" dataplane "* || " ${*:2} " == *" dataplane-bench "* ||
  " ${*:2} " == *" sessions "* || " ${*:2} " == *" anchor-cli "* ||
  " ${*:2} " == *" console "* ]]; then
  [ $# = 2 ] || docker_shared "${@:2}" ||
    { echo "the dataplane suites run alone (dataplane, anchor-cli and console may share a stack)" >&2; exit 2; }
  if [ $$ != 1 ]; then
    # Outside the stack's PID namespace: the engine is the machine's, as a system service is.
    scripts/local.sh docker-engine
    EXAMPLE_IMAGE=$(scripts/local.sh example-image | tail -n 1)
    DATA_PLANE_HOLDER_IMAGE=$(scripts/local.sh holder-image | tail -n 1)
    export EXAMPLE_IMAGE DATA_PLANE_HOLDER_IMAGE DATA_PLANE_ENGINE=docker DEPLOYMENT_MODE=docker
    export DATA_PLANE_STACK=${DATA_PLANE_STACK:-e2e-$$}
    # A start waits as deployed (SessionStartWaitSeconds, 10 s), not the 3 s kept for
    # schemathesis' stack: cargo lambda watch spawns each new instance of a function with `cargo
    # run` (1-3 s, one at a time under cargo's lock), so a warm start whose report lands on a new
    # session-status instance can pass 3 s here, where Lambda's Rust cold start is ~0.1 s.
    export SESSION_START_WAIT_SECONDS=${SESSION_START_WAIT_SECONDS:-10}
  fi
else
  export DATA_PLANE_ENGINE=simulated DEPLOYMENT_MODE=simulated
fi
stack_contain "$mode" "$PWD/scripts/e2e.sh" "$@"
shift

if [[ " $* " == *" backlog "* ]]; then
  [ $# = 1 ] || { echo "the backlog suite runs alone" >&2; exit 2; }
  export STACK_DATA_PLANE=off
fi

# The anchor's SDK and CLI (PyPI pipecatcloud), for the suites that drive the stack with them.
if [[ " $* " == *" plaintext "* || " $* " == *" sessions "* || " $* " == *" anchor-cli "* ]]; then
  scripts/local.sh pipecat-cli
  export PIPECAT_BIN=$PWD/.local/pipecat-venv/bin/pipecat
fi

data_dir=""
if [[ " $* " == *" plaintext "* ]]; then
  [ $# = 1 ] || { echo "the plaintext suite runs alone" >&2; exit 2; }
  export RUST_LOG=info
  data_dir=.local/e2e-dynamodb
  rm -rf "$data_dir"
fi

# Built once for the whole run, as `cargo test --workspace` builds them (the same features:
# nothing is built again after it); the suites then time requests, not compilation.
step=$(date +%s)
cargo test --workspace --quiet --no-run
echo "e2e $mode: suites built in $(($(date +%s) - step)) s"
export RUST_LOG=${RUST_LOG:-warn}
STACK_WATCH_IGNORE_CHANGES=1
# Every instance cargo lambda watch starts holds an inotify instance of its own, and a user has
# 128 (fs.inotify.max_user_instances): with 8 instances a function the suites reach about 175.
# Past the limit an instance's watcher fails, which ends watchexec's supervision of it, racing the
# start of its process; cargo lambda watch (1.9.2, scheduler.rs) keeps the instance in the
# function's pool either way, so a slot may never serve. Four a function stays under the limit,
# and is what the suites need (four session starts in flight at once).
export WATCH_CONCURRENCY=${WATCH_CONCURRENCY:-4}
step=$(date +%s)
stack_store "$(scripts/local.sh free-port)" $data_dir
case "$mode" in
  watch) stack_watch "$(scripts/local.sh free-port)" ;;
  sam)
    port=$(stack_free_port_pair)
    STACK_SAM_ENV_FILE=".local/sam-env-$port.json"
    stack_sam "$port"
    ;;
  *) echo "usage: e2e.sh watch|sam SUITE..." >&2; exit 2 ;;
esac
echo "e2e $mode: stack up (its functions built) in $(($(date +%s) - step)) s"

suite_cargo() {
  # --show-output: what the suites print of passing tests (each fixture's answer, each stated
  # difference from the contract) is part of the record.
  # --workspace: the features of the build above. --ignored: the suites' tests, which a plain
  # `cargo test` skips.
  cargo test --workspace --quiet --test "$1" -- --ignored --show-output \
    --test-threads "${E2E_THREADS:-4}"
}

schemathesis() {
  scripts/local.sh schemathesis
  local key
  key=$(stack_key schemathesis schemathesis)
  # A first request to each function before the clock of the first test starts.
  curl -s -o /dev/null -X POST "$STACK_API_URL/agents" -H "Authorization: Bearer $key" \
    -H "Content-Type: application/json" -d '{"serviceName":"demo-agent","image":"ghcr.io/acme/agent:1.0"}'
  curl -s -o /dev/null "$STACK_API_URL/agents/demo-agent/logs" -H "Authorization: Bearer $key"
  # The sets openapi.yaml's examples name, so that its full create example is taken.
  curl -s -o /dev/null -X PUT "$STACK_API_URL/secrets/bot-secrets" -H "Authorization: Bearer $key" \
    -H "Content-Type: application/json" -d '{"secretKey":"OPENAI_API_KEY","secretValue":"sk-example"}'
  curl -s -o /dev/null -X PUT "$STACK_API_URL/secrets/ghcr-pull" -H "Authorization: Bearer $key" \
    -H "Content-Type: application/json" \
    -d '{"isImagePullSecret":true,"host":"ghcr.io","secretValue":"dXNlcjp0b2tlbg=="}'
  # /keys is excluded: it answers 403 to any API key by design (a person's token only), which
  # is all schemathesis could send; contract.rs and the people and console suites cover it.
  # The hooks teach it the contract's cross-field rules, which OpenAPI cannot state (see the file).
  local dropped=.local/schemathesis-dropped.log status=0
  : >"$dropped"
  PYTHONPATH=scripts SCHEMATHESIS_HOOKS=schemathesis_hooks SCHEMATHESIS_DROPPED_LOG="$dropped" \
    SCHEMATHESIS_API_URL="$STACK_API_URL" SCHEMATHESIS_API_KEY="$key" \
    .local/tools-venv/bin/st run openapi.yaml --url "$STACK_API_URL" \
    --header "Authorization: Bearer $key" \
    --exclude-path-regex '^/keys' \
    --checks all --seed 20261122 --max-examples "${SCHEMATHESIS_EXAMPLES:-300}" \
    --generation-deterministic --workers 1 --no-color \
    --request-timeout 30 || status=$?
  echo "failures dropped by scripts/schemathesis_hooks.py, by reason:"
  sort "$dropped" | uniq -c | sed 's/^/  /'
  return "$status"
}

# The console in Debian's chromium (installed on first use), driven by playwright-core from the
# console's own node_modules; the stack's variables say where the console, API and pool are.
# First against a fake /v1 on the stack's moto (what only a fake can answer: a 400 to focus, a
# TOTP set-up), then against the stack.
console_suite() {
  [ -n "${STACK_CONSOLE_URL:-}" ] || { echo "the console suite needs the stack's console (STACK_CONSOLE_URL)" >&2; return 1; }
  scripts/local.sh chromium >/dev/null
  [ -n "$(scripts/local.sh console)" ] || { echo "the console suite needs node and npm" >&2; return 1; }
  MOTO_ENDPOINT=$STACK_PEOPLE_ENDPOINT node --test --test-concurrency=1 "$@"
}

for suite in "$@"; do
  started=$(date +%s)
  case "$suite" in
    http) suite_cargo http ;;
    invoke)
      [ "$mode" = sam ] || { echo "the invoke suite runs through sam" >&2; exit 2; }
      suite_cargo sam_invoke
      ;;
    schemathesis) schemathesis ;;
    backlog) suite_cargo backlog ;;
    plaintext) suite_cargo plaintext ;;
    sessions) suite_cargo anchor_sessions ;;
    dataplane) suite_cargo dataplane ;;
    anchor-cli) suite_cargo anchor_cli ;;
    dataplane-bench) suite_cargo dataplane_bench ;;
    people) suite_cargo people_e2e ;;
    console) console_suite console/e2e/offline.test.mjs console/e2e/console.test.mjs ;;
    console-offline) console_suite console/e2e/offline.test.mjs ;;
    *) echo "unknown suite $suite" >&2; exit 2 ;;
  esac
  stack_unexpected_restarts
  echo "e2e $mode $suite: passed in $(($(date +%s) - started)) s"
done
