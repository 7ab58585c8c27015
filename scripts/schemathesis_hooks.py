"""Schemathesis hooks: the contract's cross-field rules, which OpenAPI cannot state.

openapi.yaml describes each parameter and member on its own. Three rules of the contract tie two of
them together, and a cursor is an opaque token the service issued, so schemathesis can generate
schema-valid requests that the contract requires us to refuse with a 400 (its check ST202). This
hook drops such a failure only when the request really breaks one of those rules *and* the answer
is the contract's 400 naming exactly that rule's field; any other rejection still fails the run.
The rules themselves are tested in tests/ (logs.rs, create_agent.rs) and in the unit tests.

One more failure is not the service's: `cargo lambda watch` turns an HTTP request into the API
Gateway event itself, and for a JSON body that is not UTF-8 it answers its own text/plain 500
before any function runs. API Gateway hands such a body to the function base64-encoded, and the
function answers 400 (events/create-agent-not-utf8.json, tested in functions/create-agent). Only
that exact emulator answer to that exact kind of body is dropped.
"""

from __future__ import annotations

import json
import os

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


def _is_utf8(body) -> bool:
    if body is None or isinstance(body, str):
        return True
    try:
        bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _emulator_refused_the_body(response) -> bool:
    """cargo lambda watch's own 500 for a body that is not UTF-8 (no function was invoked)."""
    content_type = ",".join(response.headers.get("content-type", []))
    return (
        response.status_code == 500
        and content_type.startswith("text/plain")
        and b"https://httpstatuses.com/500" in response.content
        and not _is_utf8(response.request.body)
    )


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
    if _emulator_refused_the_body(response):
        return _record_drop(case, failure, "cargo lambda watch refused a non-UTF-8 body")
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
