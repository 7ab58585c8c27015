#!/usr/bin/env bash
# make run (watch) and make sam-local (sam): DynamoDB Local with its data in .local/run-PORT/,
# the tables, the dev account and a new key, then the API (scripts/stack.sh says how each serves
# it) and a demo agent, whose warm replica writes its own lines. Ctrl-C stops all of it; nothing
# it starts outlives it (stack_contain). A second stack on the same PORT refuses.
#
#   scripts/serve.sh watch|sam PORT DYNAMODB_PORT
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: serve.sh watch|sam PORT DYNAMODB_PORT}
api_port=${2:-9000}
dynamodb_port=${3:-8000}
source scripts/stack.sh
# Which way the stack serves the functions (stack_moto binds moto for it).
export STACK_MODE=$mode
# The data plane runs the agents on the Docker Engine (the machine's, started outside the stack's
# PID namespace as a system service is), the demo agent on the example agent's image; where no
# engine can start, a simulation stands in and says so (spec.deploymentMode: simulated).
if [ $$ != 1 ] && [ -z "${DATA_PLANE_ENGINE:-}" ]; then
  if scripts/local.sh docker-engine && EXAMPLE_IMAGE=$(scripts/local.sh example-image | tail -n 1) &&
    DATA_PLANE_HOLDER_IMAGE=$(scripts/local.sh holder-image | tail -n 1); then
    export DATA_PLANE_ENGINE=docker DEPLOYMENT_MODE=docker EXAMPLE_IMAGE DATA_PLANE_HOLDER_IMAGE
  else
    echo "warning: no Docker Engine could be started here: the data plane runs as a simulation" >&2
    echo "(spec.deploymentMode: simulated); no agent's container runs." >&2
    export DATA_PLANE_ENGINE=simulated DEPLOYMENT_MODE=simulated
  fi
  export DATA_PLANE_STACK=run-$api_port
fi
stack_contain "$mode" "$PWD/scripts/serve.sh" "$@"

target="make run"
[ "$mode" = sam ] && target="make sam-local"
data=.local/run-$api_port
stack_claim "$data" "$api_port" "$target"
# The default PORT's stack keeps the data of a checkout from before each PORT had its own.
if [ "$api_port" = 9000 ] && [ ! -e "$data/dynamodb-data" ] && [ -d .local/dynamodb-data ]; then
  mv .local/dynamodb-data "$data/dynamodb-data"
  [ ! -e .local/dev-data-plane.checkpoint.json ] || mv .local/dev-data-plane.checkpoint.json "$data/"
  echo "moved .local/dynamodb-data (and the data plane's checkpoint) into $data"
fi
stack_store "$dynamodb_port" "$data/dynamodb-data"
# Where this stack's store is, for make api-key PORT=… (scripts/api-key.sh) while it runs.
printf 'DYNAMODB_ENDPOINT=%s\nAGENTS_TABLE=%s\nACCOUNTS_TABLE=%s\nLOGS_TABLE=%s\n' \
  "$DYNAMODB_ENDPOINT" "$AGENTS_TABLE" "$ACCOUNTS_TABLE" "$LOGS_TABLE" >"$data/store.env"
stack_files+=("$data/store.env")
# The data plane's place in that store's stream, kept beside it: a restart resumes there.
export STACK_CHECKPOINT=$data/dev-data-plane.checkpoint.json
export STACK_SAM_ENV_FILE=$data/sam-env.json
echo "DynamoDB Local on $DYNAMODB_ENDPOINT, data in $data/dynamodb-data"
# The dev account's namespace is fixed, so the events/ fixtures name its agents.
key=$(stack_key dev dev-local)

case "$mode" in
  watch) stack_watch "$api_port" ;;
  sam)
    echo "building the functions and starting sam local (first run: Docker engine, image, build)"
    stack_sam "$api_port"
    ;;
  *) echo "usage: serve.sh watch|sam PORT DYNAMODB_PORT" >&2; exit 2 ;;
esac

demo_image=${EXAMPLE_IMAGE:-ghcr.io/acme/demo-agent:1.0}
status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$STACK_API_URL/agents" \
  -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
  -d "{\"serviceName\":\"demo-agent\",\"image\":\"$demo_image\",\"autoScaling\":{\"minAgents\":1,\"maxAgents\":2}}")
echo "demo-agent: $status (201 created, 409 already there)"
if [ "$status" = 409 ] && [ -n "${EXAMPLE_IMAGE:-}" ]; then
  # Made by an earlier make run: it runs this checkout's example agent (the same image again
  # changes nothing; a changed agent.py is a new image, so a new deployment).
  status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$STACK_API_URL/agents/demo-agent" \
    -H "Authorization: Bearer $key" -H "Content-Type: application/json" \
    -d "{\"image\":\"$demo_image\"}")
  echo "demo-agent on $demo_image: $status"
fi
# The agents of a store written by the first slice (before agents had versions and
# deployments) are read once migrated (docs/operations.md, Upgrading).
if ! curl -sf "$STACK_API_URL/agents/demo-agent" -H "Authorization: Bearer $key" >/dev/null; then
  cat >&2 <<WARN
demo-agent cannot be read: $data/dynamodb-data may hold agents written by the first slice's store.
Migrate them (idempotent) while this runs, in another terminal:
  AGENTS_TABLE=$AGENTS_TABLE LOGS_TABLE=$LOGS_TABLE DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT \\
    scripts/admin.sh migrate-first-slice
or start from empty data: stop it and run  mv $data $data.old && $target PORT=$api_port
WARN
fi

# A person of the dev account for the console (docs/people.md): the pool is new each run (moto
# keeps nothing), so is the password (the policy's upper and lower case and digit included).
console_password="Dev-$(python3 -c 'import secrets; print(secrets.token_urlsafe(12))')-1a"
stack_admin invite-person dev dev@example.com --password "$console_password" >/dev/null

cat <<INFO

  API:         $STACK_API_URL
  Dev API key: $key
INFO
# sam local serves the API only: the console is the local gateway's (make run).
if [ -n "${STACK_CONSOLE_URL:-}" ]; then
  echo "  Console:     $STACK_CONSOLE_URL  (dev@example.com / $console_password)"
else
  echo "  Console:     not served here (make run serves it; docs/console.md)"
fi
if [ "$mode" = sam ]; then
  cat <<INFO
  Served by sam local ($STACK_SAM_ARCH) on the template as deployed: start-api (the gateway and
  its authorizer) on $STACK_API_URL, start-lambda (Lambda's Invoke API) on $STACK_LAMBDA_URL.
  Logs: .local/sam-api-$api_port.log, .local/sam-lambda-$((api_port + 1)).log
INFO
fi
cat <<INFO

  curl -X POST $STACK_API_URL/agents -H "Authorization: Bearer $key" \\
       -H "Content-Type: application/json" \\
       -d '{"serviceName":"my-agent","image":"ghcr.io/acme/agent:1.0"}'

  curl "$STACK_API_URL/agents/demo-agent/logs?limit=5&order=asc" \\
       -H "Authorization: Bearer $key"

INFO

# The servers' logs (each function's included) from here on, until Ctrl-C or until a server
# stops by itself.
servers=("${stack_pids[@]}")
tail -n 0 -F "${STACK_LOGS[@]}" &
stack_pids+=("$!")
disown "$!" # stopped with the rest, without a job notice
wait -n "${servers[@]}"
