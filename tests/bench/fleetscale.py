#!/usr/bin/python3
"""Helpers of tests/bench/fleetscale.sh (a fleet of N nodes on etcd).

  bans NFBOX SOCK RATE OUT ADDR...
      `nfbox set add blocklist ADDR --timeout 10m --socket SOCK`, one ban
      each 1/RATE s (each its own process, started on time whatever the
      last is doing); OUT gets "ADDR T0" (T0: the epoch, just before it
      started). Exit 1 if one failed.
  fanout STARTS LOGDIR ORIGIN NODES WAIT
      The nodes' own records ("fleet: set S: N shared entries in force at
      TIME: PREFIX...", in LOGDIR/nK.err) of the bans in STARTS, waited
      for up to WAIT s: for every ban and node but ORIGIN, the record's
      time minus the ban's T0. Prints "p50 p95 worst missing pairs" (ms).
  bulk OFFSETS LOGDIR ORIGIN COUNT T0_US WAIT
      The nodes' records after the log offsets in OFFSETS ("nK BYTES"):
      when each node but ORIGIN had COUNT entries in force (the sum of its
      records' N), from T0_US (epoch, microseconds), waited for up to WAIT
      s. Prints "p50 p95 worst nodes-short" (ms).
  sample SECONDS OUT CA CERT KEY URL...
      etcd's /metrics of each member URL once a second for SECONDS:
      lines of JSON {"t", "url", "cpu", "rss", "db", "req", "watch"}
      appended to OUT (a member that does not answer is left out).
  rates OUT [FROM [TO]]
      From the samples in OUT (between epochs FROM and TO): the members'
      requests a second (mean and the worst second), CPU (share of a core,
      mean and the worst second), and the last RSS and database size.
"""
import datetime
import json
import math
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.request


def bans(nfbox, sock, rate, out, addrs):
    procs, lines = [], []
    step = 1.0 / float(rate)
    t_next = time.time()
    for a in addrs:
        now = time.time()
        if now < t_next:
            time.sleep(t_next - now)
        t0 = time.time()
        p = subprocess.Popen([nfbox, "set", "add", "blocklist", a, "--timeout", "10m", "--socket", sock],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append((a, p))
        lines.append("%s %.6f\n" % (a, t0))
        t_next += step
    bad = 0
    for a, p in procs:
        err = p.communicate()[1]
        if p.returncode != 0:
            bad += 1
            sys.stderr.write("set add %s: %s\n" % (a, err.decode(errors="replace").strip()))
    with open(out, "w") as f:
        f.writelines(lines)
    return 1 if bad else 0


RECORD = re.compile(r"fleet: set \S+: (\d+) shared (?:entry|entries) in force at (\S+)Z: (.*)$")


def record_lines(path, offset=0):
    """(epoch, count, [prefix...]) of each record in the log, from offset"""
    try:
        with open(path, "rb") as f:
            f.seek(int(offset))
            for line in f:
                m = RECORD.search(line.decode(errors="replace"))
                if m:
                    t = datetime.datetime.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S.%f")
                    yield (t.replace(tzinfo=datetime.timezone.utc).timestamp(), int(m.group(1)),
                           [p.split("/")[0] for p in m.group(3).split() if p != "..."])
    except OSError:
        return


def records(path):
    """{prefix: the first epoch at which the node's record says it was in force}"""
    seen = {}
    for t, _, prefixes in record_lines(path):
        for p in prefixes:
            seen.setdefault(p, t)
    return seen


def bulk(offsets, logdir, origin, count, t0_us, wait):
    offs = dict(line.split() for line in open(offsets))
    names = [n for n in offs if n != origin]
    end = time.time() + float(wait)
    while True:
        done = {}
        for n in names:
            total = 0
            for t, c, _ in record_lines(os.path.join(logdir, n + ".err"), offs[n]):
                total += c
                if total >= int(count):
                    done[n] = (t - int(t0_us) / 1e6) * 1000
                    break
        if len(done) == len(names) or time.time() > end:
            break
        time.sleep(2)
    lat = sorted(done.values())
    print("%.0f %.0f %.0f %d" % (pct(lat, 0.5), pct(lat, 0.95), lat[-1] if lat else float("nan"),
                                 len(names) - len(done)))
    return 0


def pct(v, q):
    """the q-quantile of the sorted v (nearest rank)"""
    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))] if v else float("nan")


def fanout(starts, logdir, origin, nodes, wait):
    t0 = {}
    with open(starts) as f:
        for line in f:
            a, t = line.split()
            t0[a] = float(t)
    names = ["n%d" % k for k in range(1, int(nodes) + 1) if "n%d" % k != origin]
    end = time.time() + float(wait)
    while True:
        recs = {n: records(os.path.join(logdir, n + ".err")) for n in names}
        missing = sum(1 for n in names for a in t0 if a not in recs[n])
        if not missing or time.time() > end:
            break
        time.sleep(1)
    lat = sorted((recs[n][a] - t0[a]) * 1000 for n in names for a in t0 if a in recs[n])
    print("%.0f %.0f %.0f %d %d" % (pct(lat, 0.5), pct(lat, 0.95), lat[-1] if lat else float("nan"), missing,
                                    len(lat)))
    return 0


def metric(text, name, match=""):
    total, found = 0.0, False
    for line in text.splitlines():
        if line.startswith(name) and (line[len(name)] in " {") and match in line:
            total += float(line.rsplit(" ", 1)[1])
            found = True
    return total if found else None


def sample(seconds, out, ca, cert, key, urls):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    end = time.time() + float(seconds)
    with open(out, "a") as f:
        while time.time() < end:
            t_next = time.time() + 1
            for u in urls:
                try:
                    text = urllib.request.urlopen(u + "/metrics", context=ctx, timeout=0.8).read().decode()
                except Exception:
                    continue
                f.write(json.dumps({
                    "t": time.time(), "url": u,
                    "cpu": metric(text, "process_cpu_seconds_total"),
                    "rss": metric(text, "process_resident_memory_bytes"),
                    "db": metric(text, "etcd_mvcc_db_total_size_in_bytes"),
                    "req": metric(text, "grpc_server_started_total"),
                    "watch": metric(text, "etcd_debugging_mvcc_watcher_total"),
                }) + "\n")
            f.flush()
            time.sleep(max(0, t_next - time.time()))
    return 0


def rates(out, t_from=0.0, t_to=1e12):
    by = {}
    with open(out) as f:
        for line in f:
            s = json.loads(line)
            if float(t_from) <= s["t"] <= float(t_to):
                by.setdefault(s["url"], []).append(s)
    # per second, summed over the members: the deltas of each member's counters
    req_s, cpu_s, last = {}, {}, {}
    for u, v in by.items():
        for a, b in zip(v, v[1:]):
            sec = int(b["t"])
            dt = b["t"] - a["t"]
            if dt <= 0 or a["req"] is None or b["req"] is None or b["req"] < a["req"]:
                continue  # a restarted member counts from 0 again
            req_s[sec] = req_s.get(sec, 0) + (b["req"] - a["req"]) / dt
            cpu_s[sec] = cpu_s.get(sec, 0) + (b["cpu"] - a["cpu"]) / dt
        last[u] = v[-1]
    if not req_s:
        print("nan nan nan nan nan nan")
        return 1
    rv, cv = list(req_s.values()), list(cpu_s.values())
    rss = sum(s["rss"] or 0 for s in last.values())
    db = max(s["db"] or 0 for s in last.values())
    print("%.0f %.0f %.2f %.2f %.0f %.0f" % (sum(rv) / len(rv), max(rv), sum(cv) / len(cv), max(cv), rss, db))
    return 0


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "bans":
        return bans(args[0], args[1], args[2], args[3], args[4:])
    if cmd == "fanout":
        return fanout(*args)
    if cmd == "bulk":
        return bulk(*args)
    if cmd == "sample":
        return sample(args[0], args[1], args[2], args[3], args[4], args[5:])
    if cmd == "rates":
        return rates(*args)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
