#!/usr/bin/env bash
# make bench BASELINE=rev: release binaries of an earlier commit (the four functions and the
# bench's hello-world baselines that commit has, built as make bench builds them), for the bench
# to measure beside this tree's. Prints the directory holding them. Built by build-at.sh under
# .local/bench-baseline/.
set -euo pipefail
cd "$(dirname "$0")/.."
rev="$(git rev-parse --short "${1:?usage: bench-baseline.sh REV}")"
root="$PWD/.local/bench-baseline"
out="$root/$rev"
if [ ! -x "$out/create-agent" ]; then
  binaries=(create-agent agent-logs ingest-logs authorizer hello-lambda)
  # Baselines added later (hello-current-thread, hello-dynamodb) are built when rev has them.
  for extra in hello-current-thread hello-dynamodb; do
    git cat-file -e "$rev:bench/src/bin/$extra.rs" 2>/dev/null && binaries+=("$extra")
  done
  scripts/build-at.sh "$rev" "$root" --release \
    -p create-agent -p agent-logs -p ingest-logs -p authorizer -p agent-hosting-bench \
    "${binaries[@]/#/--bin=}"
  mkdir -p "$out"
  for binary in "${binaries[@]}"; do
    cp "$root/target/release/$binary" "$out/"
  done
fi
echo "$out"
