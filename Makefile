# The two commands a fresh machine needs:
#   make run    the API on http://127.0.0.1:$(PORT)/v1 (cargo lambda watch) on DynamoDB Local
#   make test   every test, against a DynamoDB Local started (and stopped) for the run, then the
#               end-to-end suites over HTTP through cargo lambda watch (with schemathesis) and
#               through sam local (the template as deployed)
# Everything they need is installed on first use under .local/ (git-ignored), or with apt (Java,
# a Docker engine).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PORT ?= 9000
DYNAMODB_PORT ?= 8000
ACCOUNT ?= dev
# private (every route) or public (only session starts).
KIND ?= private
LOCAL := .local
CARGO_LAMBDA := $(LOCAL)/venv/bin/cargo-lambda

# Table names of the local store (make run).
export AGENTS_TABLE ?= agents
export ACCOUNTS_TABLE ?= accounts
export LOGS_TABLE ?= logs

.PHONY: help tools run sam-local test e2e validate build images images-push schemathesis fuzz bench api-key logs-cost lint fmt clean

help:
	@echo "make run      start the API on http://127.0.0.1:$(PORT)/v1 with DynamoDB Local, print a dev API key"
	@echo "              and the console on http://127.0.0.1:$(PORT)/console/ with a person to sign in as"
	@echo "make sam-local   the same through sam local (the template as deployed: gateway, authorizer,"
	@echo "              containers; Lambda's Invoke API on port $(PORT)+1; SAM_LOCAL_ARCH=arm64 to emulate arm64)"
	@echo "make test     run every test (starts its own DynamoDB Local, cargo lambda watch and sam local)"
	@echo "make e2e      only the end-to-end suites (through cargo lambda watch, then sam local)"
	@echo "make api-key ACCOUNT=<name> [KIND=public] [PORT=9000]   create the account if needed, print"
	@echo "              a new key (last line) in the store of the stack on PORT; KIND=public: a key"
	@echo "              that may only start sessions"
	@echo "make logs-cost [VOLUMES=1000,10000,100000] [BASELINE=rev]   write units and bytes per line,"
	@echo "              a 5,000 lines/s load's write units per key, lines read per page"
	@echo "make validate sam validate --lint, cfn-lint and checkov on template.yaml"
	@echo "make build    sam build: arm64 release bootstrap of every function (6-10 min a build)"
	@echo "make images   the platform's two arm64 images for AWS (holder, data plane), tagged with HEAD's commit"
	@echo "make images-push   the same, pushed to ECR agent-hosting-platform; prints DataPlaneImageTag/HolderImageTag"
	@echo "make schemathesis   schemathesis against the local service (also in make test; SCHEMATHESIS_EXAMPLES=300)"
	@echo "make bench    cold init, latency and sizes of the release binaries (BENCH_STARTS=21, BENCH_REQUESTS=200, BASELINE=rev)"
	@echo "             then the data plane on Docker: create -> ready, warm and cold starts, beside docker run (scripts/e2e.sh watch dataplane-bench)"
	@echo "make fuzz     cargo fuzz: body parser, key checker, logs query (FUZZ_SECONDS=60 each; nightly)"
	@echo "make lint     rustfmt and clippy"

tools:
	@scripts/local.sh tools

# The platform's images for AWS from HEAD as committed (scripts/images.sh; docs/operations.md).
images:
	@scripts/images.sh build

images-push:
	@scripts/images.sh push

run:
	@scripts/serve.sh watch "$(PORT)" "$(DYNAMODB_PORT)"

sam-local:
	@scripts/serve.sh sam "$(PORT)" "$(DYNAMODB_PORT)"

# A one-off build reuses nothing from incremental state, which took 1.4 GB of target/ on a clean
# clone: off for the test run (make run keeps it, for cargo lambda watch's rebuilds).
test e2e: export CARGO_INCREMENTAL := 0

# Each step says how long it took (scripts/timed.sh): the CI log shows where the minutes go.
test:
	@scripts/timed.sh validate $(MAKE) --no-print-directory validate
	@scripts/timed.sh dynamodb-tools scripts/local.sh dynamodb-tools
	@scripts/timed.sh "fmt, clippy, cargo test" scripts/test.sh
	@$(MAKE) --no-print-directory e2e

e2e:
	@scripts/timed.sh "e2e watch http sessions schemathesis people" scripts/e2e.sh watch http sessions schemathesis people
	@scripts/timed.sh "e2e watch backlog" scripts/e2e.sh watch backlog
	@scripts/timed.sh "e2e watch plaintext" scripts/e2e.sh watch plaintext
	@scripts/timed.sh "e2e watch dataplane anchor-cli console (Docker Engine)" scripts/e2e.sh watch dataplane anchor-cli console
	@scripts/timed.sh "e2e make run twice, killed, interrupted" cargo test --workspace --quiet \
		--test local_stack -- --ignored --show-output
	@scripts/timed.sh "e2e sam invoke http sessions people" scripts/e2e.sh sam invoke http sessions people

# sam and cfn-lint from PyPI, in .local/tools-venv; checkov in .local/checkov-venv, with the
# checks docs/security.md answers skipped (.checkov.yaml): any other finding fails.
validate:
	@scripts/local.sh sam-tools
	@scripts/local.sh checkov
	@SAM_CLI_TELEMETRY=0 $(LOCAL)/tools-venv/bin/sam validate --lint --region us-east-1
	@$(LOCAL)/tools-venv/bin/cfn-lint template.yaml && echo "cfn-lint: template.yaml clean"
	@$(LOCAL)/checkov-venv/bin/checkov -f template.yaml --config-file .checkov.yaml

build:
	@scripts/build.sh

fuzz:
	@scripts/fuzz.sh

# Release builds of the four functions and of three baselines: a hello-world lambda_runtime
# binary, the same on the current-thread runtime, and that with the DynamoDB client built at init
# (one cargo invocation, one profile), then the table;
# handler CPU with criterion (cargo bench); then the data plane on the Docker Engine
# (tests/e2e/dataplane_bench.rs, docs/performance.md).
# BASELINE=rev also measures that commit's binaries in the same run (before/after).
bench:
	@scripts/local.sh dynamodb-tools
	cargo build --release --quiet -p create-agent -p get-agent -p agent-logs -p start-session -p ingest-logs -p authorizer \
		-p agent-hosting-bench --bin create-agent --bin get-agent --bin agent-logs --bin start-session --bin ingest-logs --bin authorizer \
		--bin hello-lambda --bin hello-current-thread --bin hello-dynamodb
	@if [ -n "$(BASELINE)" ]; then \
		BENCH_BASELINE="$$(scripts/bench-baseline.sh $(BASELINE))" BENCH_BASELINE_LABEL="$(BASELINE)" \
			scripts/with-dynamodb.sh scripts/with-moto.sh cargo run --quiet -p agent-hosting-bench --bin bench; \
	else scripts/with-dynamodb.sh scripts/with-moto.sh cargo run --quiet -p agent-hosting-bench --bin bench; fi
	cargo bench --quiet -p agent-hosting-bench --bench handlers -- --noplot
	@scripts/e2e.sh watch dataplane-bench

schemathesis:
	@scripts/e2e.sh watch schemathesis

# Against the store of the stack serving on PORT (or any DYNAMODB_ENDPOINT / AWS tables given
# by name).
api-key:
	@scripts/api-key.sh "$(PORT)" "$(ACCOUNT)" "$(KIND)"

# What a line costs to write and keep, a load run's per-key write units, and lines read per logs
# page by filter and volume, on a DynamoDB Local of its own; BASELINE=rev runs that commit's
# logs-cost first, on the same DynamoDB Local (before and after in one run).
logs-cost:
	@BASELINE="$(BASELINE)" scripts/logs-cost.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --all-features -- -D warnings

fmt:
	cargo fmt --all

clean:
	cargo clean
	rm -rf $(LOCAL)
