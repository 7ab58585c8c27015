#!/usr/bin/env bash
# The operator command (agent-hosting-admin), as the local stacks and `make api-key` run it:
#   scripts/admin.sh ARGS...
# Built in one cargo invocation with the development data plane (scripts/stack.sh runs both),
# so that the two share one build of their dependencies instead of one each.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
(cd "$root" && cargo build --quiet -p agent-hosting-admin -p dev-data-plane)
exec "$root/target/debug/agent-hosting-admin" "$@"
