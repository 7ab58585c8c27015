#!/usr/bin/env bash
# make test: starts an in-memory DynamoDB Local on a free port, runs every test against it, and
# stops it whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

port=$(scripts/local.sh free-port)
pid=$(scripts/local.sh dynamodb-start "$port")
trap 'scripts/local.sh dynamodb-stop "$pid"' EXIT
export DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
echo "DynamoDB Local on $DYNAMODB_ENDPOINT (pid $pid)"

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --quiet
