#!/usr/bin/env bash
# Runs a command with an in-memory DynamoDB Local of its own (DYNAMODB_ENDPOINT), stopped after.
set -euo pipefail
cd "$(dirname "$0")/.."
port=$(scripts/local.sh free-port)
pid=$(scripts/local.sh dynamodb-start "$port")
trap 'scripts/local.sh dynamodb-stop "$pid"' EXIT
export DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
echo "DynamoDB Local on $DYNAMODB_ENDPOINT (pid $pid)" >&2
"$@"
