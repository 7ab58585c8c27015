#!/usr/bin/env bash
# What cargo lambda watch does with N invocations of one function at once (docs/testing.md, make run):
# a stack of its own without a data plane, N Deployment Status reports posted together to the
# status function through the Invoke API, and GET /v1/agents timed six times meanwhile.
#
#   scripts/watch-stall.sh [N]      (default 150; under 100 every route keeps answering)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-150}
source scripts/stack.sh
export STACK_DATA_PLANE=off STACK_WATCH_IGNORE_CHANGES=1
stack_store "$(scripts/local.sh free-port)" >/dev/null
stack_watch "$(scripts/local.sh free-port)"
key=$(stack_key stall stall-probe)
report=$(mktemp)
trap 'rm -f "$report"; stack_stop' EXIT
# A report of an agent nobody has: the function answers it at once (unknownAgent).
cat >"$report" <<JSON
{"version": "0", "id": "stall", "detail-type": "Deployment Status", "source": "agent-hosting.data-plane",
 "account": "000000000000", "time": "2026-11-24T00:00:00Z", "region": "us-east-1", "resources": [],
 "detail": {"namespace": "nobody", "agent": "ghost", "deploymentId": "d", "state": "ready",
            "readyReplicas": 1, "activeSessionCount": 0, "observedAt": "2026-11-24T00:00:00Z"}}
JSON
invoke="$STACK_LAMBDA_URL/2015-03-31/functions/deployment-status/invocations"
# Both functions started before the clock runs.
curl -s -o /dev/null "$STACK_API_URL/agents" -H "Authorization: Bearer $key"
curl -s -o /dev/null -X POST --data-binary "@$report" "$invoke"
started=$(date +%s.%N)
answers=$(mktemp)
seq "$count" | xargs -P "$count" -I{} curl -s -o /dev/null -m 120 -w '%{http_code}\n' \
  -X POST --data-binary "@$report" "$invoke" >"$answers" &
sent=$!
sleep 2
for _ in 1 2 3 4 5 6; do
  curl -s -o /dev/null -m 10 -w 'GET /v1/agents during the burst: %{http_code} in %{time_total} s\n' \
    "$STACK_API_URL/agents" -H "Authorization: Bearer $key" || true
done
wait "$sent" || true
answered=$(grep -c '^200$' "$answers" || true)
echo "$count reports at once: $answered answered within $(python3 -c "import time; print(round(time.time() - $started, 1))") s (each waits at most 120 s)"
rm -f "$answers"
