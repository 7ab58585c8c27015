#!/usr/bin/env bash
# Runs a command with moto's server of its own, holding the secret cursors are signed with
# (SECRETS_MANAGER_ENDPOINT, CURSOR_SECRET_ID: what the paged functions read at cold start),
# stopped after.
set -euo pipefail
cd "$(dirname "$0")/.."
port=$(scripts/local.sh free-port)
pid=$(scripts/local.sh moto-start "$port")
trap 'kill "$pid" 2>/dev/null || true' EXIT
export SECRETS_MANAGER_ENDPOINT="http://127.0.0.1:$port"
CURSOR_SECRET_ID=$(scripts/local.sh cursor-secret "$SECRETS_MANAGER_ENDPOINT")
export CURSOR_SECRET_ID
echo "moto on $SECRETS_MANAGER_ENDPOINT (pid $pid)" >&2
"$@"
