#!/bin/bash
# Connection limit that bans (issue 28): a client holds N connections to a
# port limited to N per source with an overload set; its next SYN goes over
# the limit. Measured, for each backend: the time from that SYN (the
# connect() call) to the address being in the overload set, as `nfbox set
# list` shows it (polled from the client's namespace as fast as the CLI
# answers: the poll interval is printed beside), and whether the client's
# next SYN, to another port, is dropped. Target: in the set within 100 ms,
# and the next SYN dropped, every run.
# Usage: tests/bench/connlimit.sh [BUILD_DIR] (root). BENCH_CL_RUNS (20).
set -u
cd "$(dirname "$0")/../.."
BIN=${1:-build}
NS_PREFIX=nfbcl$$
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
NFBOX=$(realpath "$BIN/nfbox")
RUNS=${BENCH_CL_RUNS:-20}
N=3
FAILS=0

ns_setup || { echo "bench: FAILED: cannot build the namespaces" >&2; exit 1; }
for be in bpf nftables; do
	cat >"$NS_TMP/$be.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
sets:
  servers: [$S4]
  overloaded: { dynamic: true }
hooks:
  forward: { default: drop }
options: { established: accept, backend: $be }
rules:
  - { name: banned, in: lan, from: overloaded, action: drop }
  - name: ssh
    in: lan
    to: servers
    service: tcp/22
    state: new
    limit: { connections: $N, per: source, overload: overloaded, timeout: 1h }
    action: accept
  - { name: other, in: lan, to: servers, service: tcp/81, state: new, action: accept }
YAML
done

# One run, in the client's namespace: the SYN over the limit, then the set
# polled until the client is in it; prints "MS POLLS" (or "never"), then
# whether a SYN to another port got an answer.
cat >"$NS_TMP/measure.py" <<'PY'
import json, socket, subprocess, sys, time
nfbox, sock, server, client = sys.argv[1:5]
s = socket.socket(); s.setblocking(False)
t0 = time.monotonic()
try:
    s.connect((server, 22))
except BlockingIOError:
    pass
polls, found = 0, None
while time.monotonic() - t0 < 2:
    out = subprocess.run([nfbox, "set", "list", "overloaded", "--json", "--socket", sock],
                         capture_output=True, text=True).stdout
    polls += 1
    if any(e["prefix"] == client for e in json.loads(out or "{}").get("elements", [])):
        found = (time.monotonic() - t0) * 1000
        break
print("%.1f %d" % (found, polls) if found is not None else "never %d" % polls)
p = socket.socket(); p.settimeout(0.5)
try:
    p.connect((server, 81)); print("answered")
except OSError:
    print("dropped")
PY

run_backend() { # BACKEND: one line per run, "MS POLLS VERDICT"
	local be=$1 i hold
	nfbox_start "$NS_TMP/$be.yaml" || { echo "bench: FAILED: nfbox run ($be)" >&2; FAILS=$((FAILS + 1)); return; }
	for p in 22 81; do ip netns exec "$NS_S" timeout 600 "$NET" tcp-sink $p 590 & done
	sleep 0.5
	for i in $(seq "$RUNS"); do
		ip netns exec "$NS_C" timeout 60 "$NET" tcp-hold $S4 22 $N 2 50 >"$NS_TMP/hold" 2>&1 &
		hold=$!
		wait_until 10 grep -q '^held' "$NS_TMP/hold"
		ip netns exec "$NS_C" /usr/bin/python3 "$NS_TMP/measure.py" "$NFBOX" "$NFBOX_SOCK" $S4 $C4 | paste -sd' '
		kill "$hold" 2>/dev/null
		wait "$hold" 2>/dev/null
		nfbox_ctl set del overloaded $C4 >/dev/null 2>&1
		sleep 0.3 # the held connections close: their counts come back
	done
	nfbox_stop
	ip netns pids "$NS_S" | xargs -r kill 2>/dev/null
}

echo "== Connection limit that bans: $N connections held, the next SYN over the limit ($RUNS runs a backend)"
printf '%-10s %10s %10s %10s %12s %14s   %s\n' backend "median ms" "p95 ms" "max ms" "poll ms" "next SYN drop" "target"
for be in bpf nftables; do
	run_backend "$be" >"$NS_TMP/$be.out"
	/usr/bin/python3 - "$be" "$RUNS" "$NS_TMP/$be.out" <<'PY'
import sys
be, runs, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [l.split() for l in open(path) if l.strip()]
ms = sorted(float(r[0]) for r in rows if r[0] != "never")
polls = [float(r[0]) / int(r[1]) for r in rows if r[0] != "never" and int(r[1])]
dropped = sum(1 for r in rows if r[-1] == "dropped")
never = sum(1 for r in rows if r[0] == "never")
if not ms:
    print("%-10s no run put the client in the set (%d runs)" % (be, len(rows)))
    sys.exit(1)
p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
ok = len(rows) == runs and never == 0 and ms[-1] <= 100 and dropped == len(rows)
print("%-10s %10.1f %10.1f %10.1f %12.1f %9d of %-3d   in the set within 100 ms and the next SYN dropped, every run: %s"
      % (be, ms[len(ms) // 2], p95, ms[-1], sum(polls) / len(polls), dropped, len(rows), "MET" if ok else "MISSED"))
sys.exit(0 if len(rows) == runs else 1)
PY
	[ $? -eq 0 ] || FAILS=$((FAILS + 1))
done
[ "$FAILS" -eq 0 ]
