#!/usr/bin/env bash
# make test: formatting, lints, then every test against an in-memory DynamoDB Local of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
# --all-features: every optional part (the in-memory store, the EventBridge adapter) is linted.
scripts/timed.sh clippy cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings
# The data plane's tests run replicas on the Docker Engine, of the example agent's image.
scripts/timed.sh "docker engine, example agent image" scripts/local.sh example-image >/dev/null
scripts/timed.sh "holder image" scripts/local.sh holder-image >/dev/null
scripts/timed.sh "cargo test" scripts/with-dynamodb.sh cargo test --workspace --quiet
