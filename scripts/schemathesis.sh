#!/usr/bin/env bash
# Schemathesis against the service as `make run` serves it (cargo lambda watch, DynamoDB Local,
# a real key), with a fixed seed and an example budget: every check, every phase.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/local.sh cargo-lambda
scripts/local.sh sam-tools
scripts/local.sh schemathesis

dynamodb_port=$(scripts/local.sh free-port)
api_port=$(scripts/local.sh free-port)
pid=$(scripts/local.sh dynamodb-start "$dynamodb_port")
watch_pid=""
cleanup() {
  [ -n "$watch_pid" ] && { kill "$watch_pid" 2>/dev/null || true; wait "$watch_pid" 2>/dev/null || true; }
  scripts/local.sh dynamodb-stop "$pid"
}
trap cleanup EXIT
export DYNAMODB_ENDPOINT="http://127.0.0.1:$dynamodb_port"
export AGENTS_TABLE=agents ACCOUNTS_TABLE=accounts LOGS_TABLE=logs
export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local
admin() { cargo run --quiet --package agent-hosting-admin -- "$@"; }
admin create-tables 2>/dev/null
key=$(admin issue-key schemathesis --create-account --namespace schemathesis 2>/dev/null | tail -n 1)

.local/venv/bin/cargo-lambda lambda watch --quiet --ignore-changes --invoke-address 127.0.0.1 --invoke-port "$api_port" \
  --env-var "DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT,AGENTS_TABLE=$AGENTS_TABLE,ACCOUNTS_TABLE=$ACCOUNTS_TABLE,LOGS_TABLE=$LOGS_TABLE" \
  --env-var "AWS_REGION=$AWS_REGION,AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY,RUST_LOG=warn" \
  >.local/schemathesis-watch.log 2>&1 &
watch_pid=$!
# Wait for the router, then build both functions before the clock of the first test starts.
for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$api_port/" && break; sleep 0.5; done
curl -s -o /dev/null -X POST "http://127.0.0.1:$api_port/v1/agents" -H "Authorization: Bearer $key" \
  -H "Content-Type: application/json" -d '{"serviceName":"demo-agent","image":"ghcr.io/acme/agent:1.0"}'
curl -s -o /dev/null "http://127.0.0.1:$api_port/v1/agents/demo-agent/logs" -H "Authorization: Bearer $key"

# The hooks teach it the contract's cross-field rules, which OpenAPI cannot state (see the file).
dropped=.local/schemathesis-dropped.log
: >"$dropped"
status=0
PYTHONPATH=scripts SCHEMATHESIS_HOOKS=schemathesis_hooks SCHEMATHESIS_DROPPED_LOG="$dropped" \
  .local/tools-venv/bin/st run openapi.yaml --url "http://127.0.0.1:$api_port/v1" \
  --header "Authorization: Bearer $key" \
  --checks all --seed 20261122 --max-examples "${SCHEMATHESIS_EXAMPLES:-300}" \
  --generation-deterministic --workers 1 --no-color \
  --request-timeout 30 "$@" || status=$?
echo "failures dropped by scripts/schemathesis_hooks.py, by reason:"
sort "$dropped" | uniq -c | sed 's/^/  /'
exit "$status"
