#!/usr/bin/env python3
"""Prints a CloudWatch Logs subscription event (awslogs.data: base64 of gzip of JSON) with a few
CRI and plain lines stamped just now, for an agent's log group:

    scripts/demo-logs-event.py NAMESPACE AGENT DEPLOYMENT_ID[/SESSION_ID] > event.json
    cargo lambda invoke ingest-logs --data-file event.json

The deployment must be one the agent ran (its activeDeploymentId, say): lines of any other are
dropped by the ingest function.
"""
import base64
import gzip
import json
import sys
import time

if len(sys.argv) != 4:
    sys.exit(__doc__)
namespace, agent, stream = sys.argv[1], sys.argv[2], sys.argv[3]
now_ns = time.time_ns()
texts = [
    ("stdout", "agent starting, version 1.0"),
    ("stdout", "loading model noise-viva-tel-v2"),
    ("stderr", "WARN slow warm-up: 412 ms"),
    ("stdout", "session joined by caller"),
    (None, "plain line without CRI prefix: ERROR upstream timeout"),
    ("stdout", "session ended after 3 s"),
]
events = []
for i, (stream_name, text) in enumerate(texts):
    ns = now_ns - (len(texts) - i) * 250_000_000
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000)) + f".{ns % 1_000_000_000:09d}Z"
    message = f"{stamp} {stream_name} F {text}" if stream_name else text
    events.append({"id": f"{ns // 1000:056d}", "timestamp": ns // 1_000_000, "message": message})
payload = {
    "messageType": "DATA_MESSAGE",
    "owner": "123456789012",
    "logGroup": f"/agent-hosting/{namespace}/{agent}",
    "logStream": stream,
    "subscriptionFilters": ["agent-hosting-ingest"],
    "logEvents": events,
}
data = base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()
json.dump({"awslogs": {"data": data}}, sys.stdout)
print()
