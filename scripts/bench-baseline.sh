#!/usr/bin/env bash
# make bench BASELINE=rev: release binaries of an earlier commit (the four functions and the
# bench's hello-world baselines that commit has, built as make bench builds them), for the bench
# to measure beside this tree's. Prints the directory holding them. Built in a git worktree with
# its own target directory under .local/bench-baseline/, kept between runs (a rebuild of the same
# commit is then incremental).
set -euo pipefail
cd "$(dirname "$0")/.."
rev="$(git rev-parse --short "${1:?usage: bench-baseline.sh REV}")"
root="$PWD/.local/bench-baseline"
out="$root/$rev"
if [ ! -x "$out/create-agent" ]; then
  worktree="$root/worktree"
  git worktree remove --force "$worktree" >/dev/null 2>&1 || rm -rf "$worktree"
  git worktree prune
  git worktree add --detach "$worktree" "$rev" >&2
  binaries=(create-agent agent-logs ingest-logs authorizer hello-lambda)
  # Baselines added later (hello-current-thread, hello-dynamodb) are built when rev has them.
  for extra in hello-current-thread hello-dynamodb; do
    [ -f "$worktree/bench/src/bin/$extra.rs" ] && binaries+=("$extra")
  done
  (cd "$worktree" && CARGO_TARGET_DIR="$root/target" cargo build --release --quiet \
    -p create-agent -p agent-logs -p ingest-logs -p authorizer -p agent-hosting-bench \
    "${binaries[@]/#/--bin=}") >&2
  mkdir -p "$out"
  for binary in "${binaries[@]}"; do
    cp "$root/target/release/$binary" "$out/"
  done
  git worktree remove --force "$worktree"
fi
echo "$out"
