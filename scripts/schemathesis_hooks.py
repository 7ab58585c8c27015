"""Schemathesis hooks: the contract's cross-field rules, which OpenAPI cannot state.

openapi.yaml describes each parameter and member on its own. Some rules of the contract tie two of
them together (an update's serviceName is the path's agent name, among them), and a cursor is an
opaque token the service issued, so schemathesis can generate schema-valid requests that the
contract requires us to refuse with a 400 (its check ST202). This hook drops such a failure only when the request really breaks one of those rules *and* the answer
is the contract's 400 naming exactly that rule's field; any other rejection still fails the run.
The rules themselves are tested in tests/ (logs.rs, create_agent.rs) and in the unit tests.

An `If-Match` names a version (ETag) the service issued, as a cursor is a token it issued: a
generated one names no version of the agent, and the contract answers 412 PRECONDITION_FAILED,
also when the body breaks a rule (the precondition comes before the content, RFC 9110 13.2.1).
The hook drops that 412 only for a request that sent If-Match (the 412 itself is tested in
tests/tests/lifecycle.rs and events/update-agent-stale-if-match.json).

Likewise an `Idempotency-Key` is bound to the first request sent with it (24 hours): a later
request with that key and another body, or an update of another agent, is a 422 by the contract
of the header. The hook remembers the first request of every key that got a 201 (a create) or a
200 (an update: POST /agents/{agentName}, or PUT /agents naming its agent in serviceName, the same
operation), and drops the 422 only when the request really differs.

A secret set PUT has rules of the same kind (contract section 10): `name` must be the path's set
name and `region` the stack's; an image pull secret's value must be the base64 of `user:token`
and its host's port at most 65535; a value is at most 32,768 bytes (OpenAPI counts characters);
each key comes once. And what earlier requests of the run left in a set is state the generator
cannot see: a set of the other type (409), a set full at 100 keys or 64 KiB, an account full at
200 sets (400s). Each is dropped only when the stack, asked after the answer (`GET
/v1/secrets/{name}`, `GET /v1/secrets`), holds that state and the answer is the contract's naming
it: the set's type, its keys, the account's sets. Values are write-only, so a set's bytes are
counted from the values the run itself wrote; a key the run did not write keeps the failure.

An agent's `region` (the anchor CLI's member) must be the stack's region, as a secret set's must,
on a create and on either update (POST /agents/{agentName}, PUT /agents).

An agent's `secretSet` and `imagePullSecretSet` must name a set of that type in the account
(contract section 10), which the generator cannot know: a 400 naming one of them is dropped only
when the hook, asking the stack (`GET /v1/secrets/{name}` with the run's key), finds no such set
of that type. The two members never name one set (a set has one type), a rule between members.

And a session's DELETE stops the session, it does not delete it (contract section 11): the
session stays readable, ended once the data plane reports it. Schemathesis' stateful check
ST301 expects a 404 after every DELETE; its failure is dropped only for a 200 that is the read
of that very session.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid

import schemathesis

RESULT_WINDOW = 10_000  # offset + limit at most this (contract section 4)
DEFAULT_LIMIT = 10
DEFAULT_MIN_AGENTS = 0
DEFAULT_MAX_AGENTS = 50
MAX_VALUE_BYTES = 32_768  # a secret value, in bytes (contract section 10); OpenAPI counts characters
STACK_REGION = os.environ.get("AWS_REGION", "us-east-1")


def _is_user_and_token(value) -> bool:
    """Whether an image pull secret's value is the base64 of `user:token`, both non-empty."""
    try:
        text = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError, TypeError):
        return False
    user, colon, token = text.partition(":")
    return bool(colon and user and token)


def _is_registry_host(host) -> bool:
    name, _, port = str(host).rpartition(":") if ":" in str(host) else (str(host), "", "")
    return not port or (port.isdigit() and 1 <= int(port) <= 65_535)


def _broken_secret_set_rules(case) -> set[str]:
    """The fields of a secret set PUT's rules OpenAPI cannot state: `name` must be the path's set
    name, `region` the stack's, an image pull secret's value the base64 of user:token and its
    port at most 65535, a value at most 32,768 bytes (not characters), each key given once."""
    body = case.body if isinstance(case.body, dict) else {}
    broken = set()
    set_name = (case.path_parameters or {}).get("setName")
    if "name" in body and body.get("name") != set_name:
        broken.add("name")
    if "region" in body and body.get("region") != STACK_REGION:
        broken.add("region")
    if body.get("isImagePullSecret") is True:
        if not _is_user_and_token(body.get("secretValue")):
            broken.add("secretValue")
        if "host" in body and not _is_registry_host(body["host"]):
            broken.add("host")
    value = body.get("secretValue")
    if isinstance(value, str) and len(value.encode("utf-8")) > MAX_VALUE_BYTES:
        broken.add("secretValue")
    seen = set()
    for index, entry in enumerate(body.get("secrets") or []):
        if not isinstance(entry, dict):
            continue
        value = entry.get("secretValue")
        if isinstance(value, str) and len(value.encode("utf-8")) > MAX_VALUE_BYTES:
            broken.add(f"secrets[{index}].secretValue")
        key = entry.get("secretKey")
        if key in seen:
            broken.add(f"secrets[{index}].secretKey")
        seen.add(key)
    return broken


def _integer(value, default):
    """A query value or member as an integer, `default` when absent or empty, None when not one."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _broken_cross_field_rules(case) -> set[str]:
    """The fields of the cross-field rules (and opaque-token rule) this request breaks."""
    broken = set()
    method = case.operation.method.upper()
    if method == "GET":
        query = case.query or {}
        start = _integer(query.get("startTime"), None)
        end = _integer(query.get("endTime"), None)
        if start is not None and end is not None and end <= start:
            broken.add("endTime")
        offset = _integer(query.get("offset"), 0)
        limit = _integer(query.get("limit"), DEFAULT_LIMIT)
        if offset is not None and limit is not None and offset + limit > RESULT_WINDOW:
            broken.add("offset")
        if query.get("cursor"):
            # Only a nextCursor the service issued is accepted; a generated one never is.
            broken.add("cursor")
    elif method == "PUT" and case.operation.path.startswith("/secrets/"):
        broken |= _broken_secret_set_rules(case)
    elif method in ("POST", "PUT") and case.operation.path.startswith("/agents") and isinstance(case.body, dict):
        # A create's or an update's region (the anchor CLI's member) is the stack's.
        region = case.body.get("region")
        if region is not None and region != STACK_REGION:
            broken.add("region")
        # An update's serviceName, if given, is the path's name: an agent cannot be renamed (PUT
        # /agents has no path name: serviceName names the agent).
        agent = (case.path_parameters or {}).get("agentName")
        name = case.body.get("serviceName")
        if agent is not None and name is not None and name != agent:
            broken.add("serviceName")
        secret_set, pull_set = case.body.get("secretSet"), case.body.get("imagePullSecretSet")
        if secret_set is not None and secret_set == pull_set:
            broken.add("imagePullSecretSet")
        scaling = case.body.get("autoScaling")
        if isinstance(scaling, dict):
            low = _integer(scaling.get("minAgents"), DEFAULT_MIN_AGENTS)
            high = _integer(scaling.get("maxAgents"), DEFAULT_MAX_AGENTS)
            if low is not None and high is not None and high < low:
                broken.add("autoScaling.maxAgents")
    return broken


# Idempotency-Key → what the service bound it to (_bound_request) when it first answered it.
_first_body_of_key: dict[str, str] = {}


def _canonical(body) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _json_body(case):
    """The case's body when it is JSON (schemathesis marks a request without one NotSet)."""
    body = case.body
    return body if isinstance(body, (dict, list, str, int, float, bool, type(None))) else None


def _bound_request(case):
    """What the service binds an Idempotency-Key to, as canonical JSON: a create's body, or an
    update's agent and body (PUT /agents names its agent in serviceName, as POST
    /agents/{agentName} does in its path: one operation, so a retry by either is the same)."""
    method, path, body = case.operation.method.upper(), case.operation.path, _json_body(case)
    if method == "POST" and path == "/agents":
        return _canonical(body)
    if method == "POST" and path == "/agents/{agentName}":
        agent = (case.path_parameters or {}).get("agentName")
    elif method == "PUT" and path == "/agents":
        agent = body.get("serviceName") if isinstance(body, dict) else None
    else:
        return None
    return _canonical({"update": agent, "body": body})


def _idempotency_key(case):
    return _header(case, "idempotency-key")


_VALID_KEY = re.compile(r"[!-~]{1,255}")


@schemathesis.hook
def map_headers(context, headers):
    """Makes each valid generated Idempotency-Key unique, as a client does (one key per intended
    create): otherwise the few values the generator favours would bind most creates to an earlier
    body, and the run would test the 422 instead of the create. Invalid keys stay invalid."""
    if not isinstance(headers, dict):
        return headers
    for name, value in list(headers.items()):
        if name.lower() == "idempotency-key" and isinstance(value, str) and _VALID_KEY.fullmatch(value):
            headers[name] = f"{value[:200]}-{uuid.uuid4().hex}"
    return headers


@schemathesis.hook
def after_call(context, case, response) -> None:
    key = _idempotency_key(case)
    bound = _bound_request(case)
    if key is not None and bound is not None and response.status_code in (200, 201):
        _first_body_of_key.setdefault(key, bound)
    _note_set_write(case, response)


def _header(case, wanted: str):
    for name, value in (case.headers or {}).items():
        if name.lower() == wanted:
            return value
    return None


def _is_generated_if_match(failure, case, response) -> bool:
    # ST201 too: a body the update would refuse, sent with an If-Match no version has, is a 412,
    # since the precondition is evaluated before the request's content (RFC 9110, 13.2.1).
    if failure.code not in ("ST201", "ST202") or response.status_code != 412:
        return False
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    return (
        isinstance(body, dict)
        and body.get("code") == "PRECONDITION_FAILED"
        and _header(case, "if-match") is not None
    )


def _is_reused_idempotency_key(failure, case, response) -> bool:
    if failure.code != "ST202" or response.status_code != 422:
        return False
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    if not isinstance(body, dict) or body.get("code") != "IDEMPOTENCY_KEY_REUSED":
        return False
    key = _idempotency_key(case)
    return key in _first_body_of_key and _first_body_of_key[key] != _bound_request(case)


# What a secret set PUT can meet in the sets earlier requests of the run made: the set's other
# type (409), a set full at 100 keys or 64 KiB of values, an account full at 200 sets (400s).
MAX_KEYS_PER_SET = 100
MAX_SET_VALUE_BYTES = 64 * 1024
MAX_SETS_PER_ACCOUNT = 200
MAX_LIST_PAGES = 10  # 200 sets are 2 pages of 100: a list that goes on is not the stack's

# Set name → key → the bytes of the value the run last set it to (a 200 to the PUT): a value is
# write-only, so its size is known only to whoever wrote it.
_value_bytes: dict[str, dict[str, int]] = {}


def _sent_keys(body) -> dict[str, int]:
    """The keys a secret set PUT sets, each with its value's bytes."""
    if body.get("isImagePullSecret") is True:
        return {}
    if isinstance(body.get("secrets"), list):
        entries = [entry for entry in body["secrets"] if isinstance(entry, dict)]
    else:
        entries = [body]
    return {
        entry["secretKey"]: len(entry["secretValue"].encode("utf-8"))
        for entry in entries
        if isinstance(entry.get("secretKey"), str) and isinstance(entry.get("secretValue"), str)
    }


def _note_set_write(case, response) -> None:
    """Remembers the value sizes a PUT that got a 200 wrote (an image pull secret has no keys)."""
    if case.operation.method.upper() != "PUT" or not case.operation.path.startswith("/secrets/"):
        return
    if response.status_code != 200 or not isinstance(case.body, dict):
        return
    name = (case.path_parameters or {}).get("setName")
    if case.body.get("isImagePullSecret") is True:
        _value_bytes.pop(name, None)
    else:
        _value_bytes.setdefault(name, {}).update(_sent_keys(case.body))


def _stack_get(path: str):
    """The stack's JSON answer to GET `path` with the run's key, None for a 404."""
    base, key = os.environ.get("SCHEMATHESIS_API_URL"), os.environ.get("SCHEMATHESIS_API_KEY")
    if not base or not key:
        raise RuntimeError("SCHEMATHESIS_API_URL and SCHEMATHESIS_API_KEY name the stack to ask")
    request = urllib.request.Request(f"{base}{path}", headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def _stack_set(name: str):
    """The account's set `name` as the stack answers it, None when it has none."""
    return _stack_get(f"/secrets/{urllib.parse.quote(name, safe='')}")


def _stack_set_names() -> set[str]:
    """The names of every set of the account, read to the last page (a bounded walk)."""
    names, cursor = set(), None
    for _ in range(MAX_LIST_PAGES):
        query = urllib.parse.urlencode({"limit": 100, **({"cursor": cursor} if cursor else {})})
        page = _stack_get(f"/secrets?{query}")
        names |= {entry["name"] for entry in page["sets"]}
        cursor = page.get("nextCursor")
        if not cursor:
            return names
    raise RuntimeError(f"GET /v1/secrets still has a next page after {MAX_LIST_PAGES}")


def _state_refusal(name: str, body: dict):
    """What the stack's state, as it answers now, refuses this PUT of set `name` with, as
    (status, the member a 400 names): a set of the other type (409); a set whose keys or value
    bytes, with this PUT's, pass 100 or 64 KiB (400 naming the body's form, `secrets` or
    `secretKey`); an account at 200 sets without this one (400 naming `setName`). None when the
    state refuses nothing."""
    held = _stack_set(name)
    wanted = "imagePullSecret" if body.get("isImagePullSecret") is True else "secret"
    if held is None:
        full = len(_stack_set_names()) >= MAX_SETS_PER_ACCOUNT
        return (400, "setName") if full else None
    if held.get("type") != wanted:
        return (409, None)
    if wanted != "secret":
        return None
    member = "secrets" if "secrets" in body else "secretKey"
    sent = _sent_keys(body)
    keys = {entry["fieldName"] for entry in held.get("secrets", [])} | set(sent)
    if len(keys) > MAX_KEYS_PER_SET:
        return (400, member)
    written = _value_bytes.get(name, {})
    if any(key not in written and key not in sent for key in keys):
        return None  # a value the run did not write: its size is not known here
    total = sum(sent.get(key, written.get(key, 0)) for key in keys)
    return (400, member) if total > MAX_SET_VALUE_BYTES else None


def _is_secret_set_state(failure, case, response) -> bool:
    """A 409 CONFLICT or a 400 of a secret set PUT that the stack's state explains, asked of the
    stack after the answer (the run sends one request at a time), not read from the message."""
    if failure.code != "ST202" or case.operation.method.upper() != "PUT":
        return False
    if not case.operation.path.startswith("/secrets/") or not isinstance(case.body, dict):
        return False
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    expected = {409: "CONFLICT", 400: "GENERIC_BAD_REQUEST"}.get(response.status_code)
    if not isinstance(body, dict) or expected is None or body.get("code") != expected:
        return False
    name = (case.path_parameters or {}).get("setName")
    if not isinstance(name, str):
        return False
    refusal = _state_refusal(name, case.body)
    named = body.get("field") if response.status_code == 400 else None
    return refusal == (response.status_code, named)


_SET_MEMBERS = {"secretSet": "secret", "imagePullSecretSet": "imagePullSecret"}


def _stack_set_type(name: str):
    """The type of the account's set `name` as the stack answers it, None when it has none."""
    held = _stack_set(name)
    return None if held is None else held.get("type")


def _is_set_not_held(failure, case, response) -> bool:
    """A 400 naming secretSet or imagePullSecretSet, for a set the account does not hold with
    that type (asked of the stack, not taken from the answer)."""
    if failure.code != "ST202" or response.status_code != 400:
        return False
    if case.operation.method.upper() not in ("POST", "PUT") or not isinstance(case.body, dict):
        return False
    if not case.operation.path.startswith("/agents"):
        return False
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    field = body.get("field") if isinstance(body, dict) else None
    name = case.body.get(field) if field in _SET_MEMBERS else None
    if not isinstance(name, str) or body.get("code") != "GENERIC_BAD_REQUEST":
        return False
    return _stack_set_type(name) != _SET_MEMBERS[field]


MAX_BODY_BYTES = 64 * 1024  # bodies over this are a 413 before they are parsed (contract section 1)


def _is_too_large_body(failure, response) -> bool:
    """A schema-violating body (too many items, say) that is also over 64 KiB gets the
    contract's 413 before anything reads it: refused, as it should be, with the size's status."""
    if failure.code != "ST201" or response.status_code != 413:
        return False
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    sent = response.request.body or b""
    size = len(sent.encode("utf-8") if isinstance(sent, str) else sent)
    return isinstance(body, dict) and body.get("code") == "PAYLOAD_TOO_LARGE" and size > MAX_BODY_BYTES


def _is_stopped_session_read(failure, case, response) -> bool:
    """A session's DELETE stops it; it does not delete it: the session stays readable, ended
    once the data plane's report (or the sweep) ends it (contract section 11: "an ended session
    answers 200 again"). Schemathesis' use-after-free check expects a 404 after any DELETE."""
    if failure.code != "ST301" or response.status_code != 200:
        return False
    if case.operation.method.upper() != "GET" or case.operation.path != "/agents/{agentName}/sessions/{sessionId}":
        return False
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("sessionId") == (case.path_parameters or {}).get("sessionId")


def _record_drop(case, failure, reason: str) -> bool:
    """Notes a dropped failure for the run's summary (scripts/schemathesis.sh prints the counts)."""
    path = os.environ.get("SCHEMATHESIS_DROPPED_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{failure.code} {case.operation.label}: {reason}\n")
    return False


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    """Keep every failure except a 400 that names the cross-field rule the request broke, and
    the emulator's refusal of a non-UTF-8 body."""
    if _is_reused_idempotency_key(failure, case, response):
        return _record_drop(case, failure, "422 for an Idempotency-Key reused with another body")
    if _is_generated_if_match(failure, case, response):
        return _record_drop(case, failure, "412 for an If-Match the service never issued")
    if _is_too_large_body(failure, response):
        return _record_drop(case, failure, "413 for a body over 64 KiB (refused before parsing)")
    if _is_set_not_held(failure, case, response):
        return _record_drop(case, failure, "400 for a set the account does not hold")
    if _is_secret_set_state(failure, case, response):
        return _record_drop(case, failure, "a secret set's state left by earlier requests")
    if _is_stopped_session_read(failure, case, response):
        return _record_drop(case, failure, "a stopped session stays readable (a stop is no delete)")
    if failure.code != "ST202" or response.status_code != 400:
        return True
    try:
        body = json.loads(response.content)
    except ValueError:
        return True
    if not isinstance(body, dict) or body.get("code") != "GENERIC_BAD_REQUEST":
        return True
    field = body.get("field")
    if field in _broken_cross_field_rules(case):
        return _record_drop(case, failure, f"400 for the cross-field rule of {field}")
    return True
