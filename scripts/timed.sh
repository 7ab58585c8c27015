#!/usr/bin/env bash
# Runs a command and says how long it took, so that a CI log shows where its minutes went:
#   scripts/timed.sh LABEL COMMAND...
set -uo pipefail
label=$1
shift
started=$SECONDS
"$@"
status=$?
echo "timed: $label took $((SECONDS - started)) s (exit $status)" >&2
exit $status
