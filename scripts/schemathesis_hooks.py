"""Schemathesis hooks: the contract's cross-field rules, which OpenAPI cannot state.

openapi.yaml describes each parameter and member on its own. Three rules of the contract tie two of
them together, and a cursor is an opaque token the service issued, so schemathesis can generate
schema-valid requests that the contract requires us to refuse with a 400 (its check ST202). This
hook drops such a failure only when the request really breaks one of those rules *and* the answer
is the contract's 400 naming exactly that rule's field; any other rejection still fails the run.
The rules themselves are tested in tests/ (logs.rs, create_agent.rs) and in the unit tests.

An `If-Match` names a version (ETag) the service issued, as a cursor is a token it issued: a
generated one names no version of the agent, and the contract answers 412 PRECONDITION_FAILED.
The hook drops that 412 only for a request that sent If-Match (the 412 itself is tested in
tests/tests/lifecycle.rs and events/update-agent-stale-if-match.json).

Likewise an `Idempotency-Key` is bound to the first body sent with it (24 hours): a later request
with that key and another body is a 422 by the contract of the header. The hook remembers the
first body of every key that got a 201, and drops the 422 only when the body really differs.

One more failure is not the service's: `cargo lambda watch` turns an HTTP request into the API
Gateway event itself, and for a JSON body or a header value that is not UTF-8 it answers its own
text/plain 500 before any function runs. API Gateway hands such a body to the function
base64-encoded, and the function answers 400 (events/create-agent-not-utf8.json, tested in
functions/create-agent; a non-ASCII Idempotency-Key is a 400 too, shared::idempotency). Only that
exact emulator answer to that exact kind of request is dropped.
"""

from __future__ import annotations

import json
import os
import re
import uuid

import schemathesis

RESULT_WINDOW = 10_000  # offset + limit at most this (contract section 4)
DEFAULT_LIMIT = 10
DEFAULT_MIN_AGENTS = 0
DEFAULT_MAX_AGENTS = 50


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
    elif method == "POST" and isinstance(case.body, dict):
        scaling = case.body.get("autoScaling")
        if isinstance(scaling, dict):
            low = _integer(scaling.get("minAgents"), DEFAULT_MIN_AGENTS)
            high = _integer(scaling.get("maxAgents"), DEFAULT_MAX_AGENTS)
            if low is not None and high is not None and high < low:
                broken.add("autoScaling.maxAgents")
    return broken


def _is_utf8(data) -> bool:
    if data is None:
        return True
    if isinstance(data, str):
        # requests sends a str header value as latin-1 and a str body as UTF-8.
        return True
    try:
        bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _header_bytes(value) -> bytes:
    """A header value as requests puts it on the wire (latin-1 for str)."""
    return value if isinstance(value, bytes) else str(value).encode("latin-1", errors="replace")


def _emulator_refused_the_request(response) -> bool:
    """cargo lambda watch's own 500 for a body or a header value that is not UTF-8: it cannot put
    them in the JSON event, and no function was invoked."""
    content_type = ",".join(response.headers.get("content-type", []))
    if not (
        response.status_code == 500
        and content_type.startswith("text/plain")
        and b"https://httpstatuses.com/500" in response.content
    ):
        return False
    request = response.request
    headers_utf8 = all(_is_utf8(_header_bytes(value)) for value in request.headers.values())
    return not (_is_utf8(request.body) and headers_utf8)


# Idempotency-Key → canonical JSON of the body whose create got a 201 with it.
_first_body_of_key: dict[str, str] = {}


def _canonical(body) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


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
    if key is not None and response.status_code == 201 and key not in _first_body_of_key:
        _first_body_of_key[key] = _canonical(case.body)


def _header(case, wanted: str):
    for name, value in (case.headers or {}).items():
        if name.lower() == wanted:
            return value
    return None


def _is_generated_if_match(failure, case, response) -> bool:
    if failure.code != "ST202" or response.status_code != 412:
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
    return key in _first_body_of_key and _first_body_of_key[key] != _canonical(case.body)


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
    if _emulator_refused_the_request(response):
        return _record_drop(case, failure, "cargo lambda watch refused a non-UTF-8 body or header")
    if _is_reused_idempotency_key(failure, case, response):
        return _record_drop(case, failure, "422 for an Idempotency-Key reused with another body")
    if _is_generated_if_match(failure, case, response):
        return _record_drop(case, failure, "412 for an If-Match the service never issued")
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
