#!/usr/bin/env bash
# make api-key: a new key of ACCOUNT (made if new) in the store of the stack serving on PORT
# (make run or make sam-local), printed last. That stack wrote its store's address beside its
# data (.local/run-PORT/store.env) while it runs; a DynamoDB Local it moved off DYNAMODB_PORT
# (taken by another stack) is found there. DYNAMODB_ENDPOINT given in the environment (another
# store, AWS's tables by name) is used as it is.
#
#   scripts/api-key.sh PORT ACCOUNT KIND
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
port=${1:?usage: api-key.sh PORT ACCOUNT KIND}
account=${2:?usage: api-key.sh PORT ACCOUNT KIND}
kind=${3:-private}
if [ -z "${DYNAMODB_ENDPOINT:-}" ]; then
  data="$root/.local/run-$port"
  # The stack holds the lock on its data while it runs: free, there is none on this PORT.
  if [ ! -f "$data/store.env" ] || flock -n "$data/lock" true 2>/dev/null; then
    echo "make api-key: no stack serves on PORT=$port (start it with make run PORT=$port, or give" \
      "DYNAMODB_ENDPOINT for another store)." >&2
    exit 1
  fi
  # shellcheck source=/dev/null # written by scripts/serve.sh
  source "$data/store.env"
  export DYNAMODB_ENDPOINT AGENTS_TABLE ACCOUNTS_TABLE LOGS_TABLE
fi
exec "$root/scripts/admin.sh" issue-key "$account" --create-account --kind "$kind"
