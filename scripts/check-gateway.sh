#!/usr/bin/env bash
# Contract section 9 on a deployed stack: what sam local does not emulate (gateway responses,
# usage plans, throttling) checked against the real API Gateway.
#
#   scripts/check-gateway.sh API_URL KEY [OTHER_ACCOUNT_KEY]
#
# API_URL is the stack's ApiUrl output (https://<id>.execute-api.<region>.amazonaws.com/<stage>/v1),
# KEY an active key of an account, OTHER_ACCOUNT_KEY one of another account. The throttling check
# sends bursts with KEY until the gateway answers 429, so give KEY's account low limits first:
#
#   agent-hosting-admin set-limits <account> --rate 1 --burst 1     # reset-limits afterwards
#
# Every check prints ok or FAILED; the exit status is the number of failed checks.
set -uo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
api=${1%/}
key=$2
other_key=${3:-}
failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# request NAME [curl args...]: status in $work/NAME.status, headers and body beside it.
request() {
  local name=$1
  shift
  curl -sS -o "$work/$name.body" -D "$work/$name.headers" -w '%{http_code}' "$@" \
    >"$work/$name.status" 2>"$work/$name.error" || echo 000 >"$work/$name.status"
}

header() { # header NAME HEADER: its value, if any
  grep -i "^$2:" "$work/$1.headers" | head -n 1 | cut -d' ' -f2- | tr -d '\r'
}

code() { # code NAME: the body's "code", if it is the contract's error body
  python3 -c 'import json,sys
body = json.load(open(sys.argv[1]))
assert set(body) <= {"error", "code", "field"} and isinstance(body["error"], str), body
print(body["code"])' "$work/$1.body" 2>/dev/null
}

check() { # check DESCRIPTION CONDITION...
  local what=$1
  shift
  if "$@"; then
    echo "ok      $what"
  else
    echo "FAILED  $what"
    failed=$((failed + 1))
  fi
}

is() { [ "$1" = "$2" ]; }

denied() { # denied NAME: the contract's 401
  is "$(cat "$work/$1.status")" 401 &&
    is "$(header "$1" WWW-Authenticate)" Bearer &&
    is "$(code "$1")" UNAUTHORIZED &&
    header "$1" Content-Type | grep -q '^application/json'
}

request no-key "$api/agents"
check "no Authorization header: 401 UNAUTHORIZED, WWW-Authenticate: Bearer" denied no-key
request malformed -H "Authorization: Basic dXNlcjpwYXNz" "$api/agents"
check "a Basic credential: 401 UNAUTHORIZED, WWW-Authenticate: Bearer" denied malformed
request unknown -H "Authorization: Bearer ahk_DevExampleKeyNotARealSecret0003fKREU" "$api/agents"
check "an unknown key: 401 UNAUTHORIZED, WWW-Authenticate: Bearer" denied unknown

request allowed -H "Authorization: Bearer $key" "$api/agents"
check "the key: 200 (its account has a gateway key in a usage plan)" is "$(cat "$work/allowed.status")" 200

request unknown-path -H "Authorization: Bearer $key" "$api/no-such-resource"
check "an unknown path: 404 NOT_FOUND in the contract's body" \
  is "$(cat "$work/unknown-path.status") $(code unknown-path)" "404 NOT_FOUND"

# Bursts of 30 concurrent requests with KEY until one is throttled (at most 10 bursts).
throttled=
for burst in $(seq 1 10); do
  for i in $(seq 1 30); do
    request "burst-$i" -H "Authorization: Bearer $key" "$api/agents" &
  done
  wait
  for i in $(seq 1 30); do
    if is "$(cat "$work/burst-$i.status")" 429; then
      throttled=burst-$i
      break 2
    fi
  done
done
if [ -n "$throttled" ]; then
  check "a throttled request: 429 TOO_MANY_REQUESTS with Retry-After" \
    is "$(code "$throttled") $(header "$throttled" Retry-After | grep -cE '^[0-9]+$')" "TOO_MANY_REQUESTS 1"
  if [ -n "$other_key" ]; then
    request other -H "Authorization: Bearer $other_key" "$api/agents"
    check "another account, right after: 200 (its own limits)" is "$(cat "$work/other.status")" 200
  fi
else
  check "bursts of 30 with KEY are throttled (set-limits its account low first)" false
fi

echo "$failed check(s) failed"
exit "$failed"
