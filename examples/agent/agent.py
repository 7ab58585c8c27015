#!/usr/bin/env python3
"""The example agent: the smallest program that keeps the container contract (contract.md
section 12), with Debian's python3 and the standard library alone.

The contract, as the anchor's base image serves it:
  - HTTP on $PORT (8080).
  - GET /readyz: 503 {"status": "starting"} until ready, then 200 {"status": "ok"}.
  - GET /livez: 200 {"status": "ok"}.
  - POST /bot: one session. The JSON body is the start request's `body`; the request stays open
    for the whole session, and its answer ends it (2xx: completed; another status, a broken
    connection or the process's exit: agentError).
  - SIGTERM: stop promptly.
  - What it writes to stdout and stderr is the agent's log (here, the anchor's loguru format).

Test knobs, the same as the data plane's FakeEngine's (so one scenario runs on both engines):
  - env EXAMPLE_READY_AFTER_SECONDS (default 0.3): /readyz answers 503 until then.
  - env EXAMPLE_EXIT_AT_START (an integer): exit with that code at start (a crash loop).
  - env EXAMPLE_EXIT_AFTER_READY (an integer): exit with that code one second after it is ready
    (a crash loop of a replica that answers /readyz first).
  - POST /bot body members: logLines (write that many numbered lines of about 100 bytes,
    `flood 0000000 xxx…`, on stdout as fast as it can, first), durationSeconds (default 5, at most
    600) to hold the request, then: exitCode (exit with it, no answer), allocateMiB (allocate
    that much, then hold 5 s more), status (answer with it instead of 200). Unknown members are
    ignored.
"""

import json
import os
import signal
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODULE = os.path.splitext(os.path.basename(__file__))[0]
# Variables every container has, this image sets, or Python sets itself under the C locale
# (LC_CTYPE, PEP 538): not worth naming in the log.
STANDARD_VARIABLES = {"PORT", "PATH", "HOME", "HOSTNAME", "PYTHONUNBUFFERED", "LC_CTYPE"}
MAX_DURATION_SECONDS = 600
DEFAULT_DURATION_SECONDS = 5
HOLD_AFTER_ALLOCATING_SECONDS = 5
MIB = 1024 * 1024
PAGE = 4096
FLOOD_PAD = 90

ready = threading.Event()


def log(message, session_id=None, level="INFO"):
    """One line in the anchor's loguru format, on stderr, flushed at once (the log is a stream)."""
    caller = sys._getframe(1)
    now = datetime.now()
    stamp = now.strftime("%Y-%m-%d %H:%M:%S.") + f"{now.microsecond // 1000:03d}"
    location = f"{MODULE}:{caller.f_code.co_name}:{caller.f_lineno}"
    sys.stderr.write(f"{stamp} | {level:<8} | {location} | {session_id or 'NONE'} - {message}\n")
    sys.stderr.flush()


def environment_names():
    """The names (never the values) of the variables the platform gave: the secret set's keys."""
    names = sorted(
        name
        for name in os.environ
        if name not in STANDARD_VARIABLES and not name.startswith("EXAMPLE_")
    )
    return ", ".join(names) or "(none)"


def number_knob(body, name, default, kind):
    """A knob of the body: absent gives the default; a value of another type is refused."""
    value = body.get(name, default)
    if value is None or isinstance(value, bool) or not isinstance(value, kind):
        raise ValueError(f"{name} must be a number" if kind != int else f"{name} must be an integer")
    return value


class Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/readyz":
            if ready.is_set():
                self.answer(200, {"status": "ok"})
            else:
                self.answer(503, {"status": "starting"})
        elif self.path == "/livez":
            self.answer(200, {"status": "ok"})
        else:
            self.answer(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/bot":
            self.read_body()
            self.answer(404, {"error": "not found"})
            return
        try:
            body = json.loads(self.read_body() or b"{}")
        except ValueError:
            self.answer(400, {"error": "the body is not JSON"})
            return
        if not isinstance(body, dict):
            self.answer(400, {"error": "the body is not a JSON object"})
            return
        self.bot(body)

    def bot(self, body):
        session_id = self.headers.get("X-Daily-Session-Id")
        transport = self.headers.get("X-Daily-Transport-Type", "none")
        keys = ", ".join(sorted(body))
        log(f"session started transport={transport} body keys=[{keys}]", session_id)
        log(f"environment: {environment_names()}", session_id)
        try:
            duration = number_knob(body, "durationSeconds", DEFAULT_DURATION_SECONDS, (int, float))
            exit_code = number_knob(body, "exitCode", 0, int) if "exitCode" in body else None
            allocate = number_knob(body, "allocateMiB", 0, int) if "allocateMiB" in body else None
            status = number_knob(body, "status", 200, int)
            flood = number_knob(body, "logLines", 0, int)
        except ValueError as refusal:
            log(f"refused: {refusal}", session_id, "WARNING")
            self.answer(400, {"error": str(refusal)})
            return
        if not 100 <= status <= 599:
            self.answer(400, {"error": "status must be an HTTP status (100 to 599)"})
            return
        if flood > 0:
            pad = "x" * FLOOD_PAD
            for n in range(flood):
                sys.stdout.write(f"flood {n:07d} {pad}\n")
            sys.stdout.flush()
        time.sleep(min(max(duration, 0), MAX_DURATION_SECONDS))
        if exit_code is not None:
            log(f"exiting with code {exit_code} mid-session", session_id, "ERROR")
            os._exit(exit_code)
        if allocate is not None:
            log(f"allocating {allocate} MiB", session_id)
            held = bytearray(max(allocate, 0) * MIB)
            # Write one byte a page: an untouched allocation may take no memory at all.
            held[::PAGE] = b"\x01" * len(range(0, len(held), PAGE))
            log(f"holding {allocate} MiB", session_id)
            time.sleep(HOLD_AFTER_ALLOCATING_SECONDS)
            del held
        log("session ending", session_id)
        self.answer(status, {})

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def answer(self, status, document):
        payload = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format, *args):
        # The access log would be a line every 250 ms (the data plane polls /readyz).
        pass


EXIT_AFTER_READY_SECONDS = 1.0


def become_ready():
    ready.set()
    log("ready")
    exit_after_ready = os.environ.get("EXAMPLE_EXIT_AFTER_READY")
    if exit_after_ready:
        threading.Timer(EXIT_AFTER_READY_SECONDS, exit_ready, [int(exit_after_ready)]).start()


def exit_ready(code):
    log(f"exiting with code {code} after it was ready", level="ERROR")
    os._exit(code)


def stop(signum, frame):
    log("stopping")
    os._exit(0)


def main():
    log("starting")
    log(f"environment: {environment_names()}")
    exit_at_start = os.environ.get("EXAMPLE_EXIT_AT_START")
    if exit_at_start:
        log(f"exiting at start with code {exit_at_start}", level="ERROR")
        os._exit(int(exit_at_start))
    signal.signal(signal.SIGTERM, stop)
    ready_after = float(os.environ.get("EXAMPLE_READY_AFTER_SECONDS", "0.3"))
    server = ThreadingHTTPServer(("0.0.0.0", int(os.environ.get("PORT", "8080"))), Agent)
    server.daemon_threads = True
    threading.Timer(ready_after, become_ready).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
