#!/usr/bin/python3
"""A stand-in for journald's native socket, for tests: bind SOCKET (an
AF_UNIX datagram socket), decode each entry (KEY=VALUE lines, and the
binary form KEY, newline, 64-bit little-endian length, bytes, newline) and
append it to OUT as one JSON object per line, until SIGTERM or SECONDS.

    journal.py SOCKET OUT SECONDS
"""
import json
import os
import select
import signal
import socket
import struct
import sys
import time


def decode(data):
    fields = {}
    i = 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            fields[k.decode()] = v.decode("utf-8", "replace")
            i = nl + 1
        else:
            (n,) = struct.unpack("<Q", data[nl + 1:nl + 9])
            fields[line.decode()] = data[nl + 9:nl + 9 + n].decode("utf-8", "replace")
            i = nl + 9 + n + 1
    return fields


def main():
    path, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    print("listening", flush=True)
    end = time.time() + seconds
    with open(out, "a") as f:
        while time.time() < end and not stop:
            ready, _, _ = select.select([s], [], [], 0.1)
            if ready:
                f.write(json.dumps(decode(s.recv(1 << 20))) + "\n")
                f.flush()


if __name__ == "__main__":
    main()
