#!/usr/bin/env python3
"""Cold init of release binaries under several environments, interleaved, in one run: the time
from spawn to the first byte of the binary's first Runtime API poll, median of N starts (default
21). For attributing init time to one cause (make bench gives the full table).

    scripts/init-probe.py BINARY[,VAR=value...] ...
    e.g. scripts/init-probe.py target/release/create-agent \
           target/release/create-agent,SSL_CERT_DIR=/nonexistent

Each binary gets Lambda's variables (as make bench sets them) plus its own VAR=value pairs. It
never gets an event: the measurement ends at the first poll, so no store is needed; the paged
functions read their cursor secret at init, from CURSOR_SECRET_ID on SECRETS_MANAGER_ENDPOINT
when this script's environment has them (scripts/local.sh moto-start, then cursor-secret).
"""
import os
import socket
import statistics
import subprocess
import sys
import time

LAMBDA_ENV = {
    "AWS_LAMBDA_FUNCTION_NAME": "bench",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
    "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
    "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/bench",
    "AWS_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AGENTS_TABLE": "agents",
    "ACCOUNTS_TABLE": "accounts",
    "LOGS_TABLE": "logs",
    "DYNAMODB_ENDPOINT": "http://127.0.0.1:8000",
    "RUST_LOG": "warn",
}
LAMBDA_ENV.update(
    (name, os.environ[name])
    for name in ("CURSOR_SECRET_ID", "SECRETS_MANAGER_ENDPOINT")
    if name in os.environ
)


def init_once(binary, extra):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        env = dict(LAMBDA_ENV, **extra)
        env["AWS_LAMBDA_RUNTIME_API"] = "127.0.0.1:%d" % listener.getsockname()[1]
        started = time.perf_counter()
        process = subprocess.Popen(
            [binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        connection, _ = listener.accept()
        connection.recv(1)
        elapsed = time.perf_counter() - started
        process.kill()
        process.wait()
        connection.close()
        return elapsed


def main():
    starts = int(os.environ.get("N", "21"))
    variants = []
    for argument in sys.argv[1:]:
        binary, *pairs = argument.split(",")
        variants.append((argument, binary, dict(pair.split("=", 1) for pair in pairs)))
    if not variants:
        sys.exit(__doc__)
    times = {argument: [] for argument, _, _ in variants}
    for _ in range(starts):
        for argument, binary, extra in variants:
            times[argument].append(init_once(binary, extra))
    print("| binary and environment | init median (%d starts) |" % starts)
    print("|---|---:|")
    for argument, _, _ in variants:
        print("| %s | %.2f ms |" % (argument, statistics.median(times[argument]) * 1000))


if __name__ == "__main__":
    main()
