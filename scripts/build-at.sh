#!/usr/bin/env bash
# scripts/build-at.sh REV ROOT CARGO_BUILD_ARGS...: `cargo build CARGO_BUILD_ARGS` of commit REV,
# in a git worktree ROOT/worktree (removed after) with its own target directory ROOT/target (kept,
# so a rebuild of the same commit is incremental). For the baselines of make bench and make
# logs-cost (BASELINE=rev); the caller copies what it needs out of ROOT/target.
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:?usage: build-at.sh REV ROOT CARGO_BUILD_ARGS...}"
root="${2:?usage: build-at.sh REV ROOT CARGO_BUILD_ARGS...}"
shift 2
worktree="$root/worktree"
git worktree remove --force "$worktree" >/dev/null 2>&1 || rm -rf "$worktree"
git worktree prune
git worktree add --detach "$worktree" "$rev" >&2
(cd "$worktree" && CARGO_TARGET_DIR="$root/target" cargo build --quiet "$@") >&2
git worktree remove --force "$worktree"
