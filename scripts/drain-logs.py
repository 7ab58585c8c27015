#!/usr/bin/env python3
"""Reads and drops what Docker's log drivers send to a stack's log socket, until killed.

A stack's reaper (scripts/stack.sh) runs it while it removes the replicas of a stack whose data
plane is gone: an agent's fluentd log driver waits for that socket while the agent writes, and
so does the removal of its container.

    scripts/drain-logs.py SOCKET
"""

import os
import signal
import socket
import sys
import threading


def drain(connection):
    with connection:
        while connection.recv(1 << 16):
            pass


def main():
    path = sys.argv[1]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(64)
    try:
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=drain, args=(connection,), daemon=True).start()
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
