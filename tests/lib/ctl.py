#!/usr/bin/python3
"""Control-socket clients that behave badly, for nfbox's tests. Each command
prints one result line; every wait is bounded.

  hold SOCK N TEXT SECONDS     open N connections, send TEXT (no newline) on
                               each, say "holding N" and hold them; then
                               print how many were answered "busy",
                               "timed out", or not at all, and when (s
                               after "holding") the daemon closed the last
                               it told "timed out": "timed-out-closed N
                               last S" 
  stuck SOCK REQUEST SECONDS   send REQUEST and a newline, never read; close
                               after SECONDS
  fake SOCK SECONDS            stand in for the daemon: answer every request
                               "ok" and "generation 99"
  follow-slow SOCK DELAY SECS  `log`, then read nothing for DELAY seconds,
                               then read for SECS: "events N missed M"
  silent SOCK SECONDS          connect, ask nothing, read for SECONDS (or
                               until closed): "got N" and what came
  last SOCK N TEXT             open N connections at once, send TEXT on each,
                               print what the last one is told (a second)
"""
import os
import select
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def hold(path, n, text, seconds):
    conns, busy, timed_out, silent = [], 0, 0, 0
    for _ in range(int(n)):
        try:
            s = connect(path)
            s.sendall(text.encode())
            conns.append(s)
        except OSError:
            busy += 1
    print("holding %d" % len(conns), flush=True)
    t0 = time.time()
    got = {s: b"" for s in conns}
    closed = {}  # when the daemon closed it, s after "holding"
    while time.time() < t0 + float(seconds):
        still = [s for s in conns if s not in closed]
        if not still:
            time.sleep(0.05)
            continue
        for s in select.select(still, [], [], 0.05)[0]:
            try:
                d = s.recv(65536)
            except OSError:
                d = b""
            if d:
                got[s] = (got[s] + d)[:4096]  # what it was told; a follower's events beyond
            else:
                closed[s] = time.time() - t0
    told_timed_out = []
    for s in conns:
        text = got[s].decode(errors="replace")
        if "busy" in text:
            busy += 1
        elif "timed out" in text:
            timed_out += 1
            if s in closed:
                told_timed_out.append(closed[s])
        else:
            silent += 1
        s.close()
    print("busy %d timed-out %d silent %d" % (busy, timed_out, silent))
    print("timed-out-closed %d last %.2f" % (len(told_timed_out), max(told_timed_out, default=-1)))


def stuck(path, request, seconds):
    s = connect(path)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(request.encode() + b"\n")
    time.sleep(float(seconds))
    s.close()
    print("closed")


def fake(path, seconds):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    srv.settimeout(float(seconds))
    end = time.time() + float(seconds)
    served = 0
    while time.time() < end:
        try:
            c, _ = srv.accept()
        except socket.timeout:
            break
        c.settimeout(1)
        try:
            c.recv(4096)
            c.sendall(b"ok\ngeneration 99: faked\n")
            served += 1
        except OSError:
            pass
        c.close()
    print("served %d" % served)


def follow_slow(path, delay, secs):
    s = connect(path)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"log\n")
    time.sleep(float(delay))
    s.settimeout(float(secs))
    buf, events, missed = b"", 0, 0
    end = time.time() + float(secs)
    while time.time() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        buf += d
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line.startswith(b'{"missed":'):
                missed += int(line.split(b":")[1].split(b",")[0])
            elif line.startswith(b"{"):
                events += 1
    print("events %d missed %d" % (events, missed))


def silent(path, seconds):
    s = connect(path)
    s.settimeout(0.2)
    got, end = b"", time.time() + float(seconds)
    while time.time() < end:
        try:
            d = s.recv(4096)
        except socket.timeout:
            continue
        if not d:
            break
        got += d
    print("got %d %r" % (len(got), got[:200]))


def last(path, n, text):
    conns = []
    for _ in range(int(n)):
        s = connect(path)
        try:
            s.sendall(text.encode())
        except OSError:
            pass  # turned away already: what it was told is still there to read
        conns.append(s)
    time.sleep(0.3)
    conns[-1].settimeout(1)
    try:
        print(conns[-1].recv(200).decode(errors="replace"))
    except OSError as e:
        print("nothing: %s" % e)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"hold": hold, "stuck": stuck, "fake": fake, "follow-slow": follow_slow,
     "silent": silent, "last": last}[cmd](*args)


if __name__ == "__main__":
    main()
