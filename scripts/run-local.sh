#!/usr/bin/env bash
# make run: DynamoDB Local (data kept under .local/), the tables, a dev account and key, then
# the API through cargo lambda watch. Ctrl-C stops everything this started.
set -euo pipefail
cd "$(dirname "$0")/.."

api_port=${1:-9000}
dynamodb_port=${2:-8000}
admin() { cargo run --quiet --package agent-hosting-admin -- "$@"; }

if curl -s -o /dev/null "http://127.0.0.1:$dynamodb_port"; then
  echo "port $dynamodb_port is taken; using another for DynamoDB Local" >&2
  dynamodb_port=$(scripts/local.sh free-port)
fi
pid=$(scripts/local.sh dynamodb-start "$dynamodb_port" .local/dynamodb-data)
trap 'scripts/local.sh dynamodb-stop "$pid"' EXIT INT TERM
export DYNAMODB_ENDPOINT="http://127.0.0.1:$dynamodb_port"
export AGENTS_TABLE=${AGENTS_TABLE:-agents} ACCOUNTS_TABLE=${ACCOUNTS_TABLE:-accounts} LOGS_TABLE=${LOGS_TABLE:-logs}
# DynamoDB Local ignores credentials, but the SDK signs requests with some.
export AWS_REGION=${AWS_REGION:-us-east-1}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-local} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-local}

echo "DynamoDB Local on $DYNAMODB_ENDPOINT, data in .local/dynamodb-data"
admin create-tables
# The dev account's namespace is fixed, so the events/ fixtures name its agents.
key=$(admin issue-key dev --create-account --namespace dev-local | tail -n 1)

cat <<INFO

  API:         http://127.0.0.1:$api_port/v1
  Dev API key: $key

  curl -X POST http://127.0.0.1:$api_port/v1/agents -H "Authorization: Bearer $key" \\
       -H "Content-Type: application/json" \\
       -d '{"serviceName":"my-agent","image":"ghcr.io/acme/agent:1.0"}'

  curl "http://127.0.0.1:$api_port/v1/agents/demo-agent/logs?limit=5&order=asc" \\
       -H "Authorization: Bearer $key"

INFO

# Not exec: the trap above must stop DynamoDB Local when watch ends.
.local/venv/bin/cargo-lambda lambda watch --invoke-address 127.0.0.1 --invoke-port "$api_port" \
  --env-var "DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT,AGENTS_TABLE=$AGENTS_TABLE,ACCOUNTS_TABLE=$ACCOUNTS_TABLE,LOGS_TABLE=$LOGS_TABLE" \
  --env-var "AWS_REGION=$AWS_REGION,AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY" &
watch_pid=$!
trap 'kill "$watch_pid" 2>/dev/null || true; wait "$watch_pid" 2>/dev/null || true; scripts/local.sh dynamodb-stop "$pid"' EXIT INT TERM

# Seed the demo agent and a few log lines through the functions themselves.
for _ in $(seq 1 600); do
  curl -s -o /dev/null "http://127.0.0.1:$api_port/" && break
  sleep 0.5
done
status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$api_port/v1/agents" \
  -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
  -d '{"serviceName":"demo-agent","image":"ghcr.io/acme/demo-agent:1.0"}')
echo "demo-agent: $status (201 created, 409 already there)"
scripts/demo-logs-event.py dev-local demo-agent > .local/demo-logs-event.json
.local/venv/bin/cargo-lambda lambda invoke ingest-logs --invoke-address 127.0.0.1 --invoke-port "$api_port" \
  --data-file .local/demo-logs-event.json && echo "demo log lines ingested"

wait "$watch_pid"
