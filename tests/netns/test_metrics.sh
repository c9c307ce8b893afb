#!/bin/bash
# Metrics served over HTTP (`nfbox run --metrics-listen`, libmicrohttpd):
# GET /metrics parses with the Prometheus project's parser and says what
# `nfbox stats` and `status` say (so does `nfbox metrics`); HEAD works;
# other paths are 404, other methods 405; a bad address is refused at
# start; a client holding every connection open neither stops the
# control socket nor the scrapes for longer than the 5 s deadline for a
# request's head. Runs with either backend (NFBOX_BACKEND).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
PORT=9470

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
sets:
  banned: { dynamic: true }
hooks:
  forward: { default: accept }
rules:
  - { name: drop-banned, from: banned, action: drop }
  - { name: few, service: udp/7000, limit: { rate: 5/minute, burst: 5 }, action: accept }
  - { name: few-over, service: udp/7000, action: drop }
YAML
out=$(ip netns exec "$NS_A" "$NFBOX" run --policy "$NS_TMP/policy.yaml" --state-dir "$NS_TMP/state" \
	--socket "$NS_TMP/x.sock" --no-pin --metrics-listen 127.0.0.1 2>&1); rc=$?
t_check bad-listen-refused [ $rc -ne 0 ]
t_check bad-listen-says grep -q -- '--metrics-listen 127.0.0.1: give ADDRESS:PORT' <<<"$out"
nfbox_start "$NS_TMP/policy.yaml" --metrics-listen "127.0.0.1:$PORT" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
nfbox_ctl set add banned 192.0.2.1 192.0.2.2 2001:db8::/64 >/dev/null
in_s timeout 5 "$NET" udp-count 2 7000 >/dev/null 2>&1 &
w=$!
wait_listen in_s 7000
in_c "$NET" udp-blast $S4 7000 20 >/dev/null 2>&1
wait $w

# fetch PATH [METHOD]: "STATUS CONTENT-TYPE ALLOW" on the first line, then the body
fetch() {
	in_a /usr/bin/python3 - "$PORT" "$@" <<'PY'
import sys, urllib.request, urllib.error
port, path = sys.argv[1], sys.argv[2]
method = sys.argv[3] if len(sys.argv) > 3 else "GET"
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), method=method,
                             data=b"x=1" if method == "POST" else None)
try:
    r = urllib.request.urlopen(req, timeout=5)
    print(r.status, r.headers.get("Content-Type"), r.headers.get("Allow"))
    sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.headers.get("Content-Type"), e.headers.get("Allow"))
except OSError as e:
    print("error", e)
PY
}
fetch /metrics >"$NS_TMP/http"
nfbox_ctl metrics >"$NS_TMP/metrics"
nfbox_ctl stats --json >"$NS_TMP/stats.json"
nfbox_ctl status --json >"$NS_TMP/status.json"
t_check http-ok grep -q '^200 text/plain; version=0.0.4; charset=utf-8' <(head -1 "$NS_TMP/http")
tail -n +2 "$NS_TMP/http" >"$NS_TMP/http.txt"
out=$(/usr/bin/python3 tests/lib/metricscheck.py "$NS_TMP/http.txt" "$NS_TMP/stats.json" "$NS_TMP/status.json" 2>&1) &&
	t_ok http-matches-stats || t_fail http-matches-stats "$out"
out=$(/usr/bin/python3 tests/lib/metricscheck.py "$NS_TMP/metrics" "$NS_TMP/stats.json" "$NS_TMP/status.json" 2>&1) &&
	t_ok ctl-matches-stats || t_fail ctl-matches-stats "$out"
t_check set-size grep -q '^nfbox_dynamic_set_entries{set="banned"} 3$' "$NS_TMP/http.txt"
t_check over-limit-counted grep -Eq '^nfbox_rule_over_limit_total\{hook="forward",rule="few"\} 15$' "$NS_TMP/http.txt"
t_check head-ok [ "$(fetch /metrics HEAD | head -1 | cut -d' ' -f1)" = 200 ]
t_check not-found [ "$(fetch / | head -1 | cut -d' ' -f1)" = 404 ]
t_check not-found-prefix [ "$(fetch /metrics/../etc/passwd | head -1 | cut -d' ' -f1)" = 404 ]
t_check post-refused grep -q '^405 .* GET, HEAD$' <(fetch /metrics POST | head -1)

# hog FROM N SECONDS: a client at address FROM opens N connections and
# holds them idle for SECONDS ("holding N" once connected).
hog() {
	in_a /usr/bin/python3 - "$PORT" "$@" <<'PY'
import socket, sys, time
port, src, n, secs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
held = []
for _ in range(n):
    try:
        s = socket.socket()
        s.settimeout(2)
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        held.append(s)
    except OSError:
        break
print("holding", len(held), flush=True)
time.sleep(secs)
PY
}
# A client at another address (127.0.0.2) holding 16 idle connections gets
# 4 of them (HTTPD_PER_ADDRESS): a scraper at 127.0.0.1 is answered at once.
hog 127.0.0.2 16 6 >"$NS_TMP/hog2" &
hog2=$!
wait_until 10 grep -q '^holding' "$NS_TMP/hog2" || t_fail hog-other "the idle client did not connect"
s0=$(date +%s.%N)
scrape=$(fetch /metrics | head -1 | cut -d' ' -f1)
s1=$(date +%s.%N)
t_check scrape-beside-idle-client [ "$scrape" = 200 ]
t_check scrape-beside-idle-client-at-once /usr/bin/python3 -c "import sys; sys.exit(0 if $s1 - $s0 < 1 else 1)"
kill $hog2 2>/dev/null
wait $hog2 2>/dev/null

# A client at the scraper's own address holds every connection it may,
# idle: the control socket still answers at once, and a scrape works again
# once the idle ones are closed, while the client still holds them.
hog 127.0.0.1 16 14 >"$NS_TMP/hog" &
hog=$!
wait_until 10 grep -q '^holding' "$NS_TMP/hog" || t_fail hog "the idle client did not connect"
s0=$(date +%s.%N)
nfbox_ctl status >/dev/null 2>&1
s1=$(date +%s.%N)
t_check ctl-not-starved /usr/bin/python3 -c "import sys; sys.exit(0 if $s1 - $s0 < 1 else 1)"
# No request's head within 5 s: the scrape must work within 8 s, before
# the client lets go of its connections itself (14 s) and before the 10 s
# idle timeout, so the daemon must have closed them at the deadline.
scrape_ok() { [ "$(fetch /metrics | head -1 | cut -d' ' -f1)" = 200 ]; }
if wait_until 8 scrape_ok && kill -0 "$hog" 2>/dev/null; then
	t_ok scrape-after-idle-closed
else
	t_fail scrape-after-idle-closed "no scrape within 8 s while the idle client held its connections: $(fetch /metrics | head -1)"
fi
kill $hog 2>/dev/null
wait $hog 2>/dev/null
t_done
