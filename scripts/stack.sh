# A local stack, sourced by scripts/serve.sh (make run, make sam-local) and scripts/e2e.sh (the
# end-to-end suites): DynamoDB Local with the tables, then the functions served one of two ways:
#   watch  cargo lambda watch: the functions behind its router and the local gateway (no
#          authorizer; each function checks the key itself)
#   sam    the template as deployed, through sam local: start-api emulates the REST API with its
#          Lambda authorizer, start-lambda serves Lambda's Invoke API for functions without a
#          route (ingest-logs, deployment-status), each function in its container as
#          template.yaml declares it
# Either way the development data plane (stack_data_plane) runs beside them.
# Whatever these functions start is stopped when the sourcing script exits (Ctrl-C included),
# and, once the script called stack_contain, dies with it however it ends (SIGKILL included).
#
# After stack_watch or stack_sam, a stack is described by:
#   STACK_API_URL          base address of the API, with /v1
#   STACK_LAMBDA_URL       Lambda's Invoke API (POST .../2015-03-31/functions/NAME/invocations)
#   STACK_INGEST_FUNCTION  the ingest function's name there
#   STACK_SWEEPER_FUNCTION the session sweeper's
#   STACK_GATEWAY          what answers a denied request: none (the function) or sam-rest-api
#   STACK_LOGS             the servers' log files
#   STACK_SAM_ARCH, STACK_CONTAINER_DYNAMODB_ENDPOINT, STACK_CONTAINER_KMS_ENDPOINT (sam): the
#                          functions' architecture, and DynamoDB Local and moto (KMS, Secrets
#                          Manager) as their containers reach them
#   STACK_DATA_PLANE_BIN   the development data plane's binary (started by the stack unless
#                          STACK_DATA_PLANE=off: a suite that starts and stops its own)
#   STACK_DATA_PLANE_LOG, STACK_DATA_PLANE_PID_FILE: its log, and the file naming its current PID
#   STACK_PEOPLE_ENDPOINT, STACK_PEOPLE_POOL_ID, STACK_PEOPLE_CLIENT_ID: the console's user pool
#                          (moto's Cognito; stack_people), STACK_CONSOLE_CONFIG its config.json
#   STACK_CONSOLE_URL      the console (watch only: the local gateway serves it), when it built
#   STACK_BIN_DIR          where the stack's own binaries are (the operator command, the dev data
#                          plane and gateway: scripts/local.sh build), for suites that run them
#
# The development data plane keeps its place in the agents table's stream in STACK_CHECKPOINT
# (default: a file per DynamoDB Local port under .local/), so that a restart resumes there.

stack_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Job control: without it, a script's background processes start with SIGINT ignored, and sam
# (Python) can then only be killed, leaving its function containers behind. With it, each server
# runs in a process group of its own, and stack_stop interrupts it as Ctrl-C would.
set -m
stack_pids=()
stack_dynamodb_pid=""
stack_moto_pid=""
# Files of this stack alone (an in-memory store's checkpoint), removed when it stops.
stack_files=()
# The comment of this stack's firewall rules (stack_firewall), once installed.
stack_firewall_tag=""
STACK_LOGS=()
stack_sam_logs=()

# Interrupts every server (sam then removes its containers), terminates what is still running
# 2 s later (a server started in the background of a script ignores SIGINT unless it handles it
# itself, as the development data plane does not), and kills what is left 20 s later.
stack_stop() {
  local pid tick
  for pid in "${stack_pids[@]}"; do
    kill -INT "$pid" 2>/dev/null || true
  done
  for tick in $(seq 1 40); do
    local running=0
    for pid in "${stack_pids[@]}"; do
      kill -0 "$pid" 2>/dev/null && running=1
    done
    [ "$running" = 0 ] && break
    if [ "$tick" = 4 ]; then
      for pid in "${stack_pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
      done
    fi
    sleep 0.5
  done
  for pid in "${stack_pids[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  stack_pids=()
  # sam names each container it starts in its log; now and then one outlives the interrupt.
  local containers
  containers=$(cat "${stack_sam_logs[@]}" /dev/null 2>/dev/null | sed -n 's/^SAM_CONTAINER_ID: //p')
  # shellcheck disable=SC2086 # one id per word
  [ -z "$containers" ] || docker rm -f $containers >/dev/null 2>&1 || true
  stack_sam_logs=()
  if [ -n "$stack_dynamodb_pid" ]; then
    "$stack_root/scripts/local.sh" dynamodb-stop "$stack_dynamodb_pid"
    stack_dynamodb_pid=""
  fi
  if [ -n "$stack_moto_pid" ]; then
    kill -TERM "$stack_moto_pid" 2>/dev/null || true
    stack_moto_pid=""
  fi
  [ "${#stack_files[@]}" = 0 ] || rm -f "${stack_files[@]}"
  stack_files=()
  if [ -n "$stack_firewall_tag" ]; then
    "$stack_root/scripts/firewall.sh" remove "$stack_firewall_tag" || true
    stack_firewall_tag=""
  fi
}
trap stack_stop EXIT
trap 'exit 130' INT TERM

# stack_contain MODE SCRIPT ARGS...: runs SCRIPT ARGS in place of this script as the first process
# (PID 1) of a PID namespace of its own, so that nothing the stack starts outlives it: when that
# process ends, however it ends, the kernel kills every process left in the namespace, and
# unshare --kill-child ends it when unshare itself is killed. Signals still reach the script's
# traps (PID 1 receives those it handles; unshare blocks SIGINT and SIGTERM while it waits), so
# Ctrl-C stops the stack as before. unshare itself dies with the process that started it (a
# parent-death signal), so a SIGKILL of make alone (an OOM killer picks one process) stops the
# stack too. A PID namespace needs root, or else a user namespace
# of one's own (unprivileged user namespaces); where neither is permitted the stack runs without
# one, said on stderr. What must outlive the stack (the Docker engine) or may need sudo (apt installs) is
# set up first, outside it. Returns in the script run again inside (or when there is none).
stack_contain() {
  local mode=$1 how
  shift
  [ $$ = 1 ] && return 0
  "$stack_root/scripts/local.sh" tools
  if [ "$mode" = sam ]; then
    local arch
    arch=$(stack_sam_arch)
    "$stack_root/scripts/local.sh" lambda-image "$arch"
    [ "$arch" = "$(uname -m | sed 's/aarch64/arm64/')" ] || "$stack_root/scripts/local.sh" arm64-toolchain
  fi
  stack_reaper
  for how in "" "--user --map-current-user"; do
    # shellcheck disable=SC2086 # no option, or two
    if unshare $how --pid --fork --kill-child true 2>/dev/null; then
      exec setpriv --pdeathsig KILL unshare $how --pid --fork --kill-child "$@"
    fi
  done
  echo "warning: no PID namespace for this stack (unshare --pid is not permitted here, nor in a user" >&2
  echo "namespace): if it is killed hard (SIGKILL, a closed terminal), what it started keeps running." >&2
}

# stack_reaper: the agents' replicas run in the Docker Engine, outside the stack's PID namespace.
# The data plane stops them as its stack stops; after a hard kill (SIGKILL) nothing else would,
# so a process of its own session (not in the stack's process group) waits for this script's
# end, however it ends, removes every container and network labelled with DATA_PLANE_STACK and
# the stack's firewall rules (stack_firewall), and exits.
# An agent's log driver waits for the data plane's socket while it writes, and so does its
# container's removal: with no data plane left, the reaper reads that socket meanwhile and drops
# what it reads (scripts/drain-logs.py).
stack_reaper() {
  [ "${DATA_PLANE_ENGINE:-}" = docker ] && [ -n "${DATA_PLANE_STACK:-}" ] || return 0
  setsid bash -c 'tail --pid="$1" -f /dev/null
    ids=$(docker ps -aq --filter "label=agent-hosting.stack=$2")
    if [ -n "$ids" ]; then
      python3 "$3/scripts/drain-logs.py" "${TMPDIR:-/tmp}/agent-hosting-$2.sock" &
      drain=$!
      docker rm -f $ids
      kill "$drain"
    fi
    networks=$(docker network ls -q --filter "label=agent-hosting.stack=$2")
    [ -z "$networks" ] || docker network rm $networks
    "$3/scripts/firewall.sh" remove "agent-hosting:$2"' \
    reaper $$ "$DATA_PLANE_STACK" "$stack_root" </dev/null >/dev/null 2>&1 &
}

# stack_firewall: with the data plane on the Docker Engine, the rules that keep this stack's
# replicas off the platform (scripts/firewall.sh: nothing from a namespace bridge reaches the
# host or a link-local address), marked with the stack's name; removed when the stack stops
# (stack_stop), or by its reaper after a hard kill.
stack_firewall() {
  [ "${DATA_PLANE_ENGINE:-}" = docker ] && [ -n "${DATA_PLANE_STACK:-}" ] || return 0
  stack_firewall_tag="agent-hosting:$DATA_PLANE_STACK"
  "$stack_root/scripts/firewall.sh" add "$stack_firewall_tag"
}

# stack_claim DIR PORT TARGET: DIR (a stack's data: DynamoDB Local's files, the data plane's
# checkpoint) for this stack alone while it runs, through a lock on DIR/lock that the kernel
# releases when the last process holding it ends; a stack finding it held refuses, saying which
# one holds it (TARGET: what started this one, `make run` or `make sam-local`).
stack_claim() {
  local dir=$1 port=$2 target=$3 lock pid _
  mkdir -p "$dir"
  exec {lock}>>"$dir/lock"
  if ! flock -n "$lock"; then
    echo "$target: $dir (DynamoDB Local's data and the data plane's checkpoint) is in use by" \
      "$(cat "$dir/lock")." "Stop that one (Ctrl-C in its terminal), or give this one another PORT:" \
      "each PORT keeps its data in .local/run-PORT." >&2
    exit 1
  fi
  # This shell's PID as the machine sees it (1 in its namespace): /proc/self read by the shell
  # itself, with no process in between.
  read -r pid _ </proc/self/stat
  echo "the stack on port $port (pid $pid), started by $target" >"$dir/lock"
}

stack_admin() {
  "$stack_root/scripts/admin.sh" "$@"
}

# A free port whose next port is free too (sam serves the Invoke API on PORT+1).
stack_free_port_pair() {
  python3 -c '
import socket
for _ in range(1000):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); port = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", port + 1)); print(port); break
    except OSError:
        pass
    finally:
        a.close(); b.close()
else:
    raise SystemExit("no two free ports in a row in 1000 tries")'
}

stack_wait_for() {
  local url=$1 what=$2 pid=$3 log=$4
  for _ in $(seq 1 1200); do
    curl -s -m 5 -o /dev/null "$url" && return
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$what stopped before answering; its log ($log):" >&2
      tail -n 40 "$log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "$what did not answer on $url within 10 minutes; its log: $log" >&2
  exit 1
}

# stack_store PORT [DATA_DIR]: DynamoDB Local (in memory, or kept in DATA_DIR) with the tables.
# With DATA_DIR, a port that is taken is replaced by a free one.
stack_store() {
  local port=$1 data_dir=${2:-}
  if [ -n "$data_dir" ] && curl -s -o /dev/null "http://127.0.0.1:$port"; then
    echo "port $port is taken; using another for DynamoDB Local" >&2
    port=$("$stack_root/scripts/local.sh" free-port)
  fi
  stack_dynamodb_pid=$("$stack_root/scripts/local.sh" dynamodb-start "$port" $data_dir)
  export DYNAMODB_PORT=$port
  export DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
  export AGENTS_TABLE=${AGENTS_TABLE:-agents} ACCOUNTS_TABLE=${ACCOUNTS_TABLE:-accounts} LOGS_TABLE=${LOGS_TABLE:-logs}
  # DynamoDB Local ignores credentials, but the SDK signs requests with some.
  export AWS_REGION=${AWS_REGION:-us-east-1}
  export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-local} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-local}
  # A session start waits 3 s locally for the data plane's report (10 s deployed: the
  # SessionStartWaitSeconds parameter): long enough for the development data plane, short enough
  # that a start it never reports on answers inside schemathesis' 10 s response limit.
  export SESSION_START_WAIT_SECONDS=${SESSION_START_WAIT_SECONDS:-3}
  # The engine the stack's manifests name (spec.deploymentMode): the data plane's (the Docker
  # Engine unless told; simulated where none runs).
  export DEPLOYMENT_MODE=${DEPLOYMENT_MODE:-${DATA_PLANE_ENGINE:-docker}}
  stack_admin create-tables
  stack_moto
  stack_people
}

# stack_moto: moto's server (AWS has no emulator of KMS, Secrets Manager nor EventBridge) on a
# free port, on loopback; a sam stack's (STACK_MODE=sam) on every address, since sam's function
# containers reach it through Docker's bridge (the replicas' bridges are kept off the host by
# stack_firewall either way: DynamoDB Local, whose jar has no option to bind one address,
# listens on all of them). KMS for secret values, with a key of its own
# (KMS_ENDPOINT and SECRETS_KEY_ID), Secrets Manager with the secret cursors are signed with
# (SECRETS_MANAGER_ENDPOINT and CURSOR_SECRET_ID): one per local stack, so a cursor of an earlier
# run is refused as another deployment's would be; and EventBridge with the agents bus
# (EVENTBRIDGE_ENDPOINT, EVENT_BUS_NAME).
stack_moto() {
  local port
  port=$("$stack_root/scripts/local.sh" free-port)
  local host=127.0.0.1
  [ "${STACK_MODE:-}" != sam ] || host=0.0.0.0
  stack_moto_pid=$("$stack_root/scripts/local.sh" moto-start "$port" "$host")
  export KMS_PORT=$port KMS_ENDPOINT="http://127.0.0.1:$port"
  # KMS's JSON protocol; moto checks no signature, but tells the service from the credential
  # scope of the Authorization header.
  export SECRETS_KEY_ID
  SECRETS_KEY_ID=$(curl -sf "$KMS_ENDPOINT/" -H 'X-Amz-Target: TrentService.CreateKey' \
    -H 'Content-Type: application/x-amz-json-1.1' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/kms/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{"Description": "local secret sets"}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["KeyMetadata"]["KeyId"])')
  export SECRETS_MANAGER_ENDPOINT=$KMS_ENDPOINT
  export CURSOR_SECRET_ID
  CURSOR_SECRET_ID=$("$stack_root/scripts/local.sh" cursor-secret "$SECRETS_MANAGER_ENDPOINT")
  # The agents bus, for the stream publisher's fixture (the development data plane runs the
  # publisher's code on the stream itself and hands the events to the template's rules).
  export EVENTBRIDGE_ENDPOINT=$KMS_ENDPOINT EVENT_BUS_NAME=agents-local
  curl -sf "$EVENTBRIDGE_ENDPOINT/" -H 'X-Amz-Target: AWSEvents.CreateEventBus' \
    -H 'Content-Type: application/x-amz-json-1.1' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/events/aws4_request, SignedHeaders=host, Signature=0' \
    -d "{\"Name\": \"$EVENT_BUS_NAME\"}" >/dev/null
}

# stack_cognito ACTION JSON: one call of moto's Cognito user pools (JSON protocol; moto checks no
# signature but tells the service from the credential scope), its answer on stdout.
stack_cognito() {
  curl -sf "$COGNITO_ENDPOINT/" -H "X-Amz-Target: AWSCognitoIdentityProviderService.$1" \
    -H 'Content-Type: application/x-amz-json-1.1' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/cognito-idp/aws4_request, SignedHeaders=host, Signature=0' \
    -d "$2"
}

# stack_people: the console's user pool and app client in moto (after stack_moto, on its
# server), as template.yaml's PeoplePool and PeopleClient declare them (moto emulates the
# password policy; not lockout, TOTP codes, triggers nor e-mail: docs/people.md). A new pool
# each run: moto keeps nothing. Exports what the functions check a person's token against
# (PEOPLE_ISSUER: the AWS form, as moto's tokens name it; PEOPLE_JWKS_URL: moto's address),
# what the operator command invites people with (COGNITO_ENDPOINT, PEOPLE_POOL_ID), and the
# console's config.json (STACK_CONSOLE_CONFIG) with the STACK_PEOPLE_* the console suite reads.
stack_people() {
  export COGNITO_ENDPOINT=$KMS_ENDPOINT
  export PEOPLE_POOL_ID PEOPLE_CLIENT_ID
  PEOPLE_POOL_ID=$(stack_cognito CreateUserPool '{"PoolName": "people-local",
    "UsernameAttributes": ["email"], "AutoVerifiedAttributes": ["email"],
    "UsernameConfiguration": {"CaseSensitive": false},
    "MfaConfiguration": "OPTIONAL",
    "Policies": {"PasswordPolicy": {"MinimumLength": 12, "RequireUppercase": true,
      "RequireLowercase": true, "RequireNumbers": true, "RequireSymbols": false,
      "TemporaryPasswordValidityDays": 7}},
    "AdminCreateUserConfig": {"AllowAdminCreateUserOnly": true},
    "AccountRecoverySetting": {"RecoveryMechanisms": [{"Name": "verified_email", "Priority": 1}]}}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["UserPool"]["Id"])')
  PEOPLE_CLIENT_ID=$(stack_cognito CreateUserPoolClient "{\"UserPoolId\": \"$PEOPLE_POOL_ID\",
    \"ClientName\": \"console\", \"GenerateSecret\": false,
    \"ExplicitAuthFlows\": [\"ALLOW_USER_PASSWORD_AUTH\", \"ALLOW_REFRESH_TOKEN_AUTH\"],
    \"PreventUserExistenceErrors\": \"ENABLED\", \"EnableTokenRevocation\": true,
    \"AccessTokenValidity\": 15, \"IdTokenValidity\": 15, \"RefreshTokenValidity\": 12,
    \"TokenValidityUnits\": {\"AccessToken\": \"minutes\", \"IdToken\": \"minutes\",
      \"RefreshToken\": \"hours\"}}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["UserPoolClient"]["ClientId"])')
  export PEOPLE_ISSUER="https://cognito-idp.$AWS_REGION.amazonaws.com/$PEOPLE_POOL_ID"
  export PEOPLE_JWKS_URL="$KMS_ENDPOINT/$PEOPLE_POOL_ID/.well-known/jwks.json"
  export STACK_PEOPLE_ENDPOINT=$COGNITO_ENDPOINT STACK_PEOPLE_POOL_ID=$PEOPLE_POOL_ID
  export STACK_PEOPLE_CLIENT_ID=$PEOPLE_CLIENT_ID
  export STACK_CONSOLE_CONFIG="$stack_root/.local/console-config-$DYNAMODB_PORT.json"
  mkdir -p "$stack_root/.local"
  stack_files+=("$STACK_CONSOLE_CONFIG")
  cat >"$STACK_CONSOLE_CONFIG" <<JSON
{"apiBase": "/v1", "region": "$AWS_REGION", "userPoolId": "$PEOPLE_POOL_ID",
 "clientId": "$PEOPLE_CLIENT_ID", "cognitoEndpoint": "$COGNITO_ENDPOINT/", "selfSignUp": false}
JSON
}

# stack_key ACCOUNT NAMESPACE: prints a new key of the account (created with that namespace if new).
stack_key() {
  stack_admin issue-key "$1" --create-account --namespace "$2" 2>/dev/null | tail -n 1
}

# The host's target triple: cargo lambda watch and cargo lambda build (which always names a
# target) then build the same units, so the functions compile once for both.
stack_host_triple() {
  "$stack_root/scripts/local.sh" host-triple
}

# stack_data_plane NAMES: the development data plane (devplane/, a simulation): the stream
# publisher's code on DynamoDB Local's stream of the agents table, each requested deployment reported ready
# after DEV_READY_AFTER_MS (2000), DEV_MAX_IN_FLIGHT (4) reports at a time, through the stack's
# Invoke API; NAMES says how that API names the functions (binary for cargo lambda watch,
# logical for sam). Built either way; started unless STACK_DATA_PLANE=off, under
# stack_supervise: its PID in .local/dev-data-plane-$DYNAMODB_PORT.pid, restarted when it dies.
stack_data_plane() {
  local names=$1 log="$stack_root/.local/dev-data-plane-$DYNAMODB_PORT.log"
  # The data plane is built with the operator command, in one build.
  local bin_dir
  bin_dir=$("$stack_root/scripts/admin.sh" --build-only)
  export STACK_BIN_DIR=$bin_dir
  # Set beforehand, another build's binary (a test checked against an earlier data plane).
  export STACK_DATA_PLANE_BIN=${STACK_DATA_PLANE_BIN:-"$bin_dir/dev-data-plane"}
  [ "${STACK_DATA_PLANE:-on}" = off ] && return
  stack_firewall
  local checkpoint=${STACK_CHECKPOINT:-}
  if [ -z "$checkpoint" ]; then
    checkpoint="$stack_root/.local/dev-data-plane-$DYNAMODB_PORT.checkpoint.json"
    rm -f "$checkpoint"
    stack_files+=("$checkpoint")
  fi
  local pid_file="$stack_root/.local/dev-data-plane-$DYNAMODB_PORT.pid"
  stack_files+=("$pid_file")
  # Every exit the supervisor restarted from, and the PIDs a suite killed on purpose
  # (stack_unexpected_restarts compares them).
  export STACK_DATA_PLANE_EXITS="$stack_root/.local/dev-data-plane-$DYNAMODB_PORT.exits"
  export STACK_DATA_PLANE_KILLS="$stack_root/.local/dev-data-plane-$DYNAMODB_PORT.kills"
  : >"$STACK_DATA_PLANE_EXITS"
  : >"$STACK_DATA_PLANE_KILLS"
  stack_files+=("$STACK_DATA_PLANE_EXITS" "$STACK_DATA_PLANE_KILLS")
  (cd "$stack_root" && stack_supervise "$pid_file" "${DATA_PLANE_RESTARTS:-5}" \
    "$STACK_DATA_PLANE_BIN" --invoke-url "$STACK_LAMBDA_URL" \
    --function-names "$names" --ready-after-ms "${DEV_READY_AFTER_MS:-2000}" \
    --checkpoint "$checkpoint") >"$log" 2>&1 &
  stack_pids+=("$!")
  export STACK_DATA_PLANE_LOG=$log STACK_DATA_PLANE_PID_FILE=$pid_file
  STACK_LOGS+=("$log")
}

# stack_supervise PID_FILE MOST COMMAND...: runs COMMAND, its PID in PID_FILE, and runs it
# again 1 s after it dies (a crash, a kill: a data plane restarted as a service manager would),
# MOST times at most. Interrupted or terminated (stack_stop), it passes SIGTERM on (the data
# plane then stops its replicas), waits for the end and restarts nothing. It dies with the stack
# (stack_stop, or the stack's PID namespace).
stack_supervise() {
  local pid_file=$1 most=$2 restarts=0 pid="" status stopping=0 name
  shift 2
  name=${1##*/}
  trap 'stopping=1; kill -TERM "$pid" 2>/dev/null || true' INT TERM
  while :; do
    "$@" &
    pid=$!
    echo "$pid" >"$pid_file"
    # A trapped signal ends `wait` early: wait again until the command itself has ended.
    status=0
    wait "$pid" || status=$?
    while kill -0 "$pid" 2>/dev/null; do
      wait "$pid" || status=$?
    done
    [ "$stopping" = 0 ] || return 0
    [ -z "${STACK_DATA_PLANE_EXITS:-}" ] || echo "$pid $status" >>"$STACK_DATA_PLANE_EXITS"
    if [ "$restarts" -ge "$most" ]; then
      echo "stack: $name exited (status $status); restarted $most times already, left stopped"
      return 1
    fi
    restarts=$((restarts + 1))
    echo "stack: $name exited (status $status); starting it again in 1 s ($restarts of $most)"
    sleep 1
    [ "$stopping" = 0 ] || return 0
  done
}

# stack_unexpected_restarts: fails, saying which and showing the data plane's log, when the
# supervisor restarted the data plane after an exit no suite asked for (a crash in a suite must
# fail it, not be mended by the restart); each kill a suite makes on purpose names its PID in
# STACK_DATA_PLANE_KILLS.
stack_unexpected_restarts() {
  [ -n "${STACK_DATA_PLANE_EXITS:-}" ] && [ -s "$STACK_DATA_PLANE_EXITS" ] || return 0
  local pid status unexpected=0
  while read -r pid status; do
    grep -qx "$pid" "$STACK_DATA_PLANE_KILLS" 2>/dev/null && continue
    echo "the data plane (pid $pid) exited with status $status, no suite killed it; its log:" >&2
    unexpected=1
  done <"$STACK_DATA_PLANE_EXITS"
  [ "$unexpected" = 0 ] && return 0
  tail -n 60 "$STACK_DATA_PLANE_LOG" >&2
  return 1
}

# stack_watch PORT: the functions behind cargo lambda watch's router, on a port of its own,
# behind the local gateway on PORT (stack_gateway). cargo lambda watch runs up to
# WATCH_CONCURRENCY (8) instances of a function, one request each, as Lambda scales a function
# by instances: a start waiting on its report holds one instance, not the function. Its own
# CORS answers are off: an OPTIONS reaches the function its route names, as deployed.
# Each instance watches its working directory for changes, one inotify watch a directory; the
# checkout has tens of thousands (target/, .local/), so past about nine instances the user's
# inotify limit is reached and every later instance's watcher fails ("Native fs watcher error",
# which watchexec treats as fatal to the instance's supervision). A stack that reloads nothing
# (STACK_WATCH_IGNORE_CHANGES: the e2e suites) runs it from an empty directory (.local/watch-root) inside
# the checkout, where cargo still reads .cargo/config.toml, and names the workspace's manifest.
stack_watch() {
  local port=$1 watch_port log="$stack_root/.local/watch-$1.log" watched=$stack_root
  stack_build_functions "$(uname -m | sed 's/aarch64/arm64/')"
  mkdir -p "$stack_root/.local"
  if [ -n "${STACK_WATCH_IGNORE_CHANGES:-}" ]; then
    watched="$stack_root/.local/watch-root"
    mkdir -p "$watched"
  fi
  watch_port=$("$stack_root/scripts/local.sh" free-port)
  (cd "$watched" && exec "$stack_root/.local/venv/bin/cargo-lambda" lambda watch --quiet \
    --manifest-path "$stack_root/Cargo.toml" \
    --target "$(stack_host_triple)" --invoke-address 127.0.0.1 --invoke-port "$watch_port" \
    --concurrency "${WATCH_CONCURRENCY:-8}" --disable-cors \
    ${STACK_WATCH_IGNORE_CHANGES:+--ignore-changes} \
    --env-var "DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT,AGENTS_TABLE=$AGENTS_TABLE,ACCOUNTS_TABLE=$ACCOUNTS_TABLE,LOGS_TABLE=$LOGS_TABLE,CURSOR_SECRET_ID=$CURSOR_SECRET_ID,SECRETS_MANAGER_ENDPOINT=$SECRETS_MANAGER_ENDPOINT,KMS_ENDPOINT=$KMS_ENDPOINT,SECRETS_KEY_ID=$SECRETS_KEY_ID,SESSION_START_WAIT_SECONDS=$SESSION_START_WAIT_SECONDS,SESSION_SWEEP_AT_EVENT_TIME=true,DEPLOYMENT_MODE=$DEPLOYMENT_MODE" \
    --env-var "PEOPLE_ISSUER=$PEOPLE_ISSUER,PEOPLE_CLIENT_ID=$PEOPLE_CLIENT_ID,PEOPLE_JWKS_URL=$PEOPLE_JWKS_URL" \
    --env-var "AWS_REGION=$AWS_REGION,AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY,RUST_LOG=${RUST_LOG:-info}") \
    >"$log" 2>&1 &
  stack_pids+=("$!")
  STACK_LOGS+=("$log")
  stack_wait_for "http://127.0.0.1:$watch_port/" "cargo lambda watch" "$!" "$log"
  stack_gateway "$port" "http://127.0.0.1:$watch_port"
  # Lambda's Invoke API is cargo lambda watch's own, as on AWS it is not the API's.
  export STACK_API_URL="http://127.0.0.1:$port/v1" STACK_LAMBDA_URL="http://127.0.0.1:$watch_port"
  export STACK_INGEST_FUNCTION=ingest-logs STACK_SWEEPER_FUNCTION=session-sweeper STACK_GATEWAY=none
  stack_data_plane binary
}

# stack_gateway PORT UPSTREAM: the local gateway (devplane/src/gateway/) on PORT in front of
# cargo lambda watch at UPSTREAM: what the deployed REST API answers by itself (an unrouted
# path, a body over 10 MB) in the template's gateway responses, and a request with a byte that
# is not UTF-8 handed on as API Gateway hands it to a function.
# It also serves the console's build under /console/ with the stack's config.json
# (STACK_CONSOLE_URL), unless there is no node or npm here to build it (or the build fails:
# said on stderr, and the API runs without a console).
stack_gateway() {
  local port=$1 upstream=$2 log="$stack_root/.local/gateway-$1.log" console console_args=() bin_dir
  bin_dir=$("$stack_root/scripts/admin.sh" --build-only)
  console=$("$stack_root/scripts/local.sh" console) || {
    echo "warning: the console did not build; the stack runs without it" >&2
    console=""
  }
  if [ -n "$console" ] && [ -n "${STACK_CONSOLE_CONFIG:-}" ]; then
    console_args=(--console "$console" --console-config "$STACK_CONSOLE_CONFIG")
    export STACK_CONSOLE_URL="http://127.0.0.1:$port/console/"
  fi
  (cd "$stack_root" && exec "$bin_dir/dev-gateway" \
    --listen "127.0.0.1:$port" --upstream "$upstream" "${console_args[@]}") >"$log" 2>&1 &
  stack_pids+=("$!")
  STACK_LOGS+=("$log")
  stack_wait_for "http://127.0.0.1:$port/" "the local gateway" "$!" "$log"
}

# The architecture sam local runs the functions as: the host's by default (SAM_LOCAL_ARCH=arm64
# on an x86_64 host builds with Debian's arm64 standard library and runs under QEMU).
stack_sam_arch() {
  case "${SAM_LOCAL_ARCH:-$(uname -m)}" in
    x86_64 | amd64) echo x86_64 ;;
    arm64 | aarch64) echo arm64 ;;
    *) echo "SAM_LOCAL_ARCH is x86_64 or arm64" >&2; exit 2 ;;
  esac
}

# sam without the dummy credentials DynamoDB Local is signed with: given credentials, sam asks
# AWS who they belong to (for AWS::AccountId) and waits ~9 s for each command to time out, with
# no network. The functions then get none, and sign with dummies of their own (shared/src/aws.rs).
# (A function, so that `stack_sam_cli ... &` would put a shell between the PID and sam: servers
# are started with stack_sam_serve.)
stack_sam_cli() {
  SAM_CLI_TELEMETRY=0 env -C "$stack_root" -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
    -u AWS_SESSION_TOKEN "$stack_root/.local/tools-venv/bin/sam" "$@"
}

# stack_sam_serve LOG ARGS...: sam ARGS in the background, its PID in stack_pids.
stack_sam_serve() {
  local log=$1
  shift
  (SAM_CLI_TELEMETRY=0 exec env -C "$stack_root" -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
    -u AWS_SESSION_TOKEN "$stack_root/.local/tools-venv/bin/sam" "$@") >"$log" 2>&1 &
  stack_pids+=("$!")
  STACK_LOGS+=("$log")
  stack_sam_logs+=("$log")
}

# The variables of a build of the functions for ARCH (x86_64 or arm64): the host's architecture
# with plain cargo, the other with zig and Debian's rustc (its standard library for arm64).
stack_build_env() {
  local arch=$1
  "$stack_root/scripts/local.sh" cargo-lambda
  export PATH="$stack_root/.local/venv/bin:$PATH"
  if [ "$arch" = "$(uname -m | sed 's/aarch64/arm64/')" ]; then
    export CARGO_LAMBDA_COMPILER=cargo
  else
    "$stack_root/scripts/local.sh" arm64-toolchain
    export RUSTC=/usr/bin/rustc
  fi
}

# stack_build_functions ARCH: every function of template.yaml in one cargo invocation, debug
# profile: the units cargo lambda watch runs, and the ones sam build copies. Built before a
# server starts, so that no request waits for a compilation. One build at a time in a checkout
# (two stacks starting together): cargo waits for cargo, but cargo lambda then moves each binary
# into target/lambda/, and a second build finds it gone.
# (A subshell: the build's variables stay out of the caller's later cargo commands.)
stack_build_functions() (
  local arch=$1 binaries cargo_args=() lock
  stack_build_env "$arch"
  [ "$arch" = x86_64 ] || cargo_args+=(--arm64)
  binaries=$(awk '/^ *Binary:/ {print "--bin=" $2}' "$stack_root/template.yaml")
  mkdir -p "$stack_root/.local"
  exec {lock}>"$stack_root/.local/functions-build.lock"
  flock "$lock"
  # shellcheck disable=SC2086 # one --bin=NAME per word
  cd "$stack_root" && cargo lambda build --quiet "${cargo_args[@]}" $binaries
)

# stack_sam_build ARCH: the functions, then `sam build` on the template as it deploys, whose
# per-function `cargo lambda build` finds them built and copies them into .local/sam-build.
stack_sam_build() (
  local arch=$1
  stack_build_functions "$arch"
  "$stack_root/scripts/local.sh" sam-tools
  stack_build_env "$arch"
  SAM_BUILD_MODE=debug stack_sam_cli build --config-env local \
    --parameter-overrides "Architecture=$arch" >"$stack_root/.local/sam-build.log" 2>&1 \
    || { tail -n 40 "$stack_root/.local/sam-build.log" >&2; exit 1; }
)

# stack_sam_env FILE: the --env-vars file of the functions' containers (no GATEWAY_KEYS_FUNCTION:
# sam local has no usage plans, so the sign-up trigger asks for no gateway key): DynamoDB Local through
# Docker's bridge (sam starts function containers there; host networking is not applied by this
# sam version) and the table names, in place of the template's AWS values.
stack_sam_env() {
  export STACK_CONTAINER_DYNAMODB_ENDPOINT
  local bridge
  bridge=$("$stack_root/scripts/local.sh" docker-bridge-ip)
  STACK_CONTAINER_DYNAMODB_ENDPOINT="http://$bridge:$DYNAMODB_PORT"
  export STACK_CONTAINER_KMS_ENDPOINT="http://$bridge:$KMS_PORT"
  # A person's tokens: the local pool's (stack_people) with its keys at moto's address as the
  # containers reach it; without a pool, empty, so every token is refused (as the template's
  # AWS values would send the functions to AWS's Cognito).
  local jwks_url=""
  [ -z "${PEOPLE_POOL_ID:-}" ] || jwks_url="$STACK_CONTAINER_KMS_ENDPOINT/$PEOPLE_POOL_ID/.well-known/jwks.json"
  cat >"$1" <<JSON
{"Parameters": {"DYNAMODB_ENDPOINT": "$STACK_CONTAINER_DYNAMODB_ENDPOINT",
  "AGENTS_TABLE": "$AGENTS_TABLE", "ACCOUNTS_TABLE": "$ACCOUNTS_TABLE", "LOGS_TABLE": "$LOGS_TABLE",
  "CURSOR_SECRET_ID": "$CURSOR_SECRET_ID", "SECRETS_MANAGER_ENDPOINT": "$STACK_CONTAINER_KMS_ENDPOINT",
  "KMS_ENDPOINT": "$STACK_CONTAINER_KMS_ENDPOINT", "SECRETS_KEY_ID": "$SECRETS_KEY_ID",
  "EVENTBRIDGE_ENDPOINT": "$STACK_CONTAINER_KMS_ENDPOINT", "EVENT_BUS_NAME": "$EVENT_BUS_NAME",
  "SESSION_START_WAIT_SECONDS": "$SESSION_START_WAIT_SECONDS", "SESSION_SWEEP_AT_EVENT_TIME": "true",
  "DEPLOYMENT_MODE": "$DEPLOYMENT_MODE",
  "PEOPLE_ISSUER": "${PEOPLE_ISSUER:-}", "PEOPLE_CLIENT_ID": "${PEOPLE_CLIENT_ID:-}",
  "PEOPLE_JWKS_URL": "$jwks_url", "GATEWAY_KEYS_FUNCTION": ""}}
JSON
}

# stack_sam PORT: the API through sam local start-api on PORT and Lambda's Invoke API through
# sam local start-lambda on PORT+1, on the build of stack_sam_build.
stack_sam() {
  local port=$1 arch env_file="$stack_root/.local/sam-env.json" invoke_port=$(($1 + 1))
  arch=$(stack_sam_arch)
  "$stack_root/scripts/local.sh" lambda-image "$arch"
  stack_sam_build "$arch"
  [ -n "${STACK_SAM_ENV_FILE:-}" ] && env_file=$STACK_SAM_ENV_FILE
  stack_sam_env "$env_file"
  local common=(--config-env local --parameter-overrides "Architecture=$arch" --env-vars "$env_file")
  local api_log="$stack_root/.local/sam-api-$port.log" lambda_log="$stack_root/.local/sam-lambda-$invoke_port.log"
  stack_sam_serve "$api_log" local start-api "${common[@]}" --port "$port"
  local api_pid=$!
  stack_sam_serve "$lambda_log" local start-lambda "${common[@]}" --port "$invoke_port"
  local lambda_pid=$!
  stack_wait_for "http://127.0.0.1:$port/" "sam local start-api" "$api_pid" "$api_log"
  stack_wait_for "http://127.0.0.1:$invoke_port/" "sam local start-lambda" "$lambda_pid" "$lambda_log"
  export STACK_API_URL="http://127.0.0.1:$port/v1" STACK_LAMBDA_URL="http://127.0.0.1:$invoke_port"
  export STACK_INGEST_FUNCTION=IngestLogsFunction STACK_SWEEPER_FUNCTION=SessionSweeperFunction
  export STACK_GATEWAY=sam-rest-api STACK_SAM_ARCH=$arch
  export STACK_SAM_ENV_FILE=$env_file
  stack_data_plane logical
}

# stack_invoke FUNCTION FILE: the function's answer to the event in FILE, through the stack's
# Invoke API.
stack_invoke() {
  curl -sS --fail-with-body -X POST --data-binary "@$2" \
    "$STACK_LAMBDA_URL/2015-03-31/functions/$1/invocations"
}
