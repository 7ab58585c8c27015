#!/usr/bin/env bash
# make build: sam build of every function for arm64 (provided.al2023), with cargo-lambda and zig
# from .local/venv and Debian's rustc with its arm64 standard library.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/local.sh cargo-lambda
scripts/local.sh sam-tools
scripts/local.sh arm64-toolchain
export PATH="$PWD/.local/venv/bin:$PATH"
export RUSTC=/usr/bin/rustc
# Measured: the first randomness costs ~32 ms of init without it (aws-lc's jitter entropy).
export AWS_LC_SYS_NO_JITTER_ENTROPY=1
export SAM_CLI_TELEMETRY=0
.local/tools-venv/bin/sam build "$@"
for zip_dir in .aws-sam/build/*Function; do
  [ -f "$zip_dir/bootstrap" ] || continue
  printf '%-40s %s bytes\n' "$zip_dir/bootstrap" "$(stat -c %s "$zip_dir/bootstrap")"
  file "$zip_dir/bootstrap" 2>/dev/null | sed 's/^/  /' || true
done
