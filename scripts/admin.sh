#!/usr/bin/env bash
# The operator command (agent-hosting-admin), as the local stacks and `make api-key` run it:
#   scripts/admin.sh ARGS...
#   scripts/admin.sh --build-only   builds it (and the development data plane) and stops
# Built with the development data plane and gateway (scripts/stack.sh runs all three) by
# scripts/local.sh build, which shares one build of their dependencies with the functions';
# --build-only prints the directory they are in.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$("$root/scripts/local.sh" build agent-hosting-admin dev-data-plane dev-gateway)
[ "${1:-}" = --build-only ] && { echo "$dir"; exit 0; }
exec "$dir/agent-hosting-admin" "$@"
