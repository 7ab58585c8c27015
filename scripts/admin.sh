#!/usr/bin/env bash
# The operator command (agent-hosting-admin), as the local stacks and `make api-key` run it:
#   scripts/admin.sh ARGS...
#   scripts/admin.sh --build-only   builds it (and the development data plane) and stops
# Built in one cargo invocation with the development data plane (scripts/stack.sh runs both),
# so that the two share one build of their dependencies instead of one each.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
(cd "$root" && cargo build --quiet -p agent-hosting-admin -p dev-data-plane)
[ "${1:-}" = --build-only ] && exit 0
exec "$root/target/debug/agent-hosting-admin" "$@"
