#!/usr/bin/env bash
# make logs-cost [BASELINE=rev]: what logs cost (tests/src/bin/logs-cost.rs) on a DynamoDB Local
# of its own. With BASELINE, that commit's logs-cost runs first on the same DynamoDB Local, in the
# same run: before and after, side by side. The baseline is built (debug, as this tree's) by
# build-at.sh under .local/logs-cost-baseline/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/local.sh dynamodb-tools
baseline=""
if [ -n "${BASELINE:-}" ]; then
  rev="$(git rev-parse --short "$BASELINE")"
  root="$PWD/.local/logs-cost-baseline"
  baseline="$root/$rev/logs-cost"
  if [ ! -x "$baseline" ]; then
    scripts/build-at.sh "$rev" "$root" --package integration-tests --bin logs-cost
    mkdir -p "$root/$rev"
    cp "$root/target/debug/logs-cost" "$baseline"
  fi
fi
cargo build --quiet --package integration-tests --bin logs-cost
LOGS_COST_BASELINE="$baseline" LOGS_COST_BASELINE_REV="${BASELINE:-}" \
  scripts/with-dynamodb.sh bash -c '
    if [ -n "$LOGS_COST_BASELINE" ]; then
      echo "## Before: $LOGS_COST_BASELINE_REV"; echo
      "$LOGS_COST_BASELINE"
      echo; echo "## After: this tree"; echo
    fi
    target/debug/logs-cost'
