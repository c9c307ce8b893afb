#!/bin/bash
# Metrics served over HTTP (`nfbox run --metrics-listen`, libmicrohttpd):
# GET /metrics parses with the Prometheus project's parser and says what
# `nfbox stats` and `status` say (so does `nfbox metrics`); HEAD works;
# other paths are 404, other methods 405; a bad address is refused at
# start; a client holding every connection open neither stops the
# control socket nor the scrapes for longer than the 5 s deadline for a
# request's head, nor do 8 clients at one address that send their headers
# a line a second (closed at the deadline and counted; a daemon with the
# deadline planted away, NFBOX_TEST_PLANT=httpd-no-deadline, must fail
# that part). Runs with either backend (NFBOX_BACKEND).
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

# fetch PATH [METHOD]: "STATUS CONTENT-TYPE ALLOW" on the first line, then
# the body; from the address FETCH_FROM (127.0.0.1 by default). Read its
# first line with sed -n 1p (head would end the pipe under its writer).
fetch() {
	in_a /usr/bin/python3 - "$PORT" "${FETCH_FROM:-127.0.0.1}" "$@" <<'PY'
import http.client, sys
port, src, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
method = sys.argv[4] if len(sys.argv) > 4 else "GET"
try:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5, source_address=(src, 0))
    c.request(method, path, body=b"x=1" if method == "POST" else None)
    r = c.getresponse()
    print(r.status, r.getheader("Content-Type"), r.getheader("Allow"))
    sys.stdout.write(r.read().decode())
except (OSError, http.client.HTTPException) as e:
    print("error", e)
PY
}
fetch /metrics >"$NS_TMP/http"
nfbox_ctl metrics >"$NS_TMP/metrics"
nfbox_ctl stats --json >"$NS_TMP/stats.json"
nfbox_ctl status --json >"$NS_TMP/status.json"
nfbox_ctl stats --unused --json >"$NS_TMP/unused.json"
# docs/report.md is the interface other programs read: it names every key
out=$(/usr/bin/python3 tests/lib/keysdoc.py docs/report.md "$NS_TMP/status.json" "$NS_TMP/stats.json" \
	"$NS_TMP/unused.json" 2>&1) && t_ok json-keys-documented || t_fail json-keys-documented "$out"
t_check http-ok grep -q '^200 text/plain; version=0.0.4; charset=utf-8' <(head -1 "$NS_TMP/http")
tail -n +2 "$NS_TMP/http" >"$NS_TMP/http.txt"
out=$(/usr/bin/python3 tests/lib/metricscheck.py "$NS_TMP/http.txt" "$NS_TMP/stats.json" "$NS_TMP/status.json" 2>&1) &&
	t_ok http-matches-stats || t_fail http-matches-stats "$out"
out=$(/usr/bin/python3 tests/lib/metricscheck.py "$NS_TMP/metrics" "$NS_TMP/stats.json" "$NS_TMP/status.json" 2>&1) &&
	t_ok ctl-matches-stats || t_fail ctl-matches-stats "$out"
t_check set-size grep -q '^nfbox_dynamic_set_entries{set="banned"} 3$' "$NS_TMP/http.txt"
t_check over-limit-counted grep -Eq '^nfbox_rule_over_limit_total\{hook="forward",rule="few"\} 15$' "$NS_TMP/http.txt"
t_check head-ok [ "$(fetch /metrics HEAD | sed -n 1p | cut -d' ' -f1)" = 200 ]
t_check not-found [ "$(fetch / | sed -n 1p | cut -d' ' -f1)" = 404 ]
t_check not-found-prefix [ "$(fetch /metrics/../etc/passwd | sed -n 1p | cut -d' ' -f1)" = 404 ]
# one request a connection: a kept-alive one would wait for its next head
# with no deadline
t_check one-request-a-connection in_a /usr/bin/python3 -c '
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
c.request("GET", "/metrics")
r = c.getresponse()
r.read()
sys.exit(0 if r.getheader("Connection") == "close" and r.will_close else 1)' "$PORT"
t_check post-refused grep -q '^405 .* GET, HEAD$' <(fetch /metrics POST | sed -n 1p)

# stop_client PID: a client started with & (the subshell of PID) and what
# it runs (ip netns exec's python, the subshell's child) end.
stop_client() {
	pkill -P "$1" 2>/dev/null
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

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
scrape=$(fetch /metrics | sed -n 1p | cut -d' ' -f1)
s1=$(date +%s.%N)
t_check scrape-beside-idle-client [ "$scrape" = 200 ]
t_check scrape-beside-idle-client-at-once fholds "$s1 - $s0 < 1"
stop_client "$hog2"

# A client at the scraper's own address holds every connection it may,
# idle: the control socket still answers at once, and a scrape works again
# once the idle ones are closed, while the client still holds them.
hog 127.0.0.1 16 14 >"$NS_TMP/hog" &
hog=$!
wait_until 10 grep -q '^holding' "$NS_TMP/hog" || t_fail hog "the idle client did not connect"
s0=$(date +%s.%N)
nfbox_ctl status >/dev/null 2>&1
s1=$(date +%s.%N)
t_check ctl-not-starved fholds "$s1 - $s0 < 1"
# No request's head within 5 s: the scrape must work within 8 s, before
# the client lets go of its connections itself (14 s) and before the 10 s
# idle timeout, so the daemon must have closed them at the deadline.
scrape_ok() { [ "$(fetch /metrics | sed -n 1p | cut -d' ' -f1)" = 200 ]; }
if wait_until 8 scrape_ok && kill -0 "$hog" 2>/dev/null; then
	t_ok scrape-after-idle-closed
else
	t_fail scrape-after-idle-closed "no scrape within 8 s while the idle client held its connections: $(fetch /metrics | sed -n 1p)"
fi
stop_client "$hog"

# slow FROM N SECONDS: a client at address FROM opens N connections and
# sends on each a request line, then a header line a second for SECONDS,
# never the empty line that ends the head. It says "connected", then
# "closed I T HOW" when the server closes connection I, T seconds after
# its connect.
slow() {
	in_a /usr/bin/python3 - "$PORT" "$@" <<'PY'
import select, socket, sys, time
port, src, n, secs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
conns = {}
for i in range(n):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    conns[s] = (i, time.monotonic())
print("connected", flush=True)

def closed(s, how):
    i, t = conns.pop(s)
    print("closed %d %.2f %s" % (i, time.monotonic() - t, how), flush=True)

def send(s, data):
    try:
        s.sendall(data)
    except OSError as e:
        closed(s, e.strerror)

for s in list(conns):
    send(s, b"GET /metrics HTTP/1.1\r\n")
end, line = time.monotonic() + secs, 0
next_line = time.monotonic() + 1
while conns and time.monotonic() < end:
    for s in select.select(list(conns), [], [], max(0, next_line - time.monotonic()))[0]:
        try:
            if not s.recv(4096):  # a head that never ends gets no answer: only the end comes
                closed(s, "end")
        except OSError as e:
            closed(s, e.strerror)
    if time.monotonic() >= next_line:
        line += 1
        for s in list(conns):
            send(s, b"X-Line-%d: slow\r\n" % line)
        next_line += 1
PY
}
# closed_between FILE LO HI: connections the server closed LO to HI s after their connect
closed_between() { awk -v lo="$2" -v hi="$3" '$1 == "closed" && $3 >= lo && $3 <= hi { n++ } END { print n + 0 }' "$1"; }
closed_at_least() { [ "$(closed_between "$1" 0 999)" -ge "$2" ]; }
code_from() { FETCH_FROM=$1 fetch /metrics | sed -n 1p | cut -d' ' -f1; }
served_from() { [ "$(code_from "$1")" = 200 ]; }
head_timeouts() { nfbox_ctl metrics | awk '$1 == "nfbox_http_head_timeouts_total" { print $2 }'; }

# slow_cases: 8 clients at one address (127.0.0.2) that send their headers
# a line a second, each line activity that resets the idle timeout: the 4
# over the per-address cap are closed at once, a scraper at another
# address is answered meanwhile, the 4 let in are closed at the 5 s
# deadline for a request's head (checked 4.5 to 8 s after their connect:
# the deadline, the loop's once-a-second tick, a margin), and then that
# address is answered again (the client closes none itself before 20 s).
slow_cases() {
	local out=$NS_TMP/slow.$1 before after pid other same held
	before=$(head_timeouts)
	slow 127.0.0.2 8 20 >"$out" &
	pid=$!
	wait_until 5 grep -q '^connected' "$out" || t_fail slow-client "it did not connect: $(cat "$out")"
	t_check slow-client-capped-per-address wait_until 2 closed_at_least "$out" 4
	other=$(code_from 127.0.0.1)
	same=$(code_from 127.0.0.2)
	held=$((8 - $(closed_between "$out" 0 999)))
	# held: the scrapes came while the slow connections were still open
	t_check scrape-beside-slow-client [ "$other" = 200 -a "$held" -ge 1 ]
	t_check slow-client-holds-its-address [ "$same" != 200 -a "$held" -ge 1 ]
	if wait_until 9 closed_at_least "$out" 8 && [ "$(closed_between "$out" 4.5 8)" -eq 4 ]; then
		t_ok slow-client-closed-at-deadline
	else
		t_fail slow-client-closed-at-deadline "want the 4 let in closed 4.5 to 8 s after the connect: $(grep ^closed "$out" | tr '\n' ';')"
	fi
	t_check scrape-same-address-after-deadline wait_until 2 served_from 127.0.0.2
	stop_client "$pid"
	after=$(head_timeouts)
	t_check head-timeouts-counted [ "$((after - ${before:-0}))" = 4 ]
	t_check head-timeouts-in-status [ "$(status_head_timeouts)" = "$after" ]
}
# status_head_timeouts: the count in status (text and JSON), if they agree
status_head_timeouts() {
	local text json
	text=$(nfbox_ctl status | sed -n "s|^metrics:    http://127.0.0.1:$PORT/metrics: .*, \([0-9]*\) connections closed with no request's head within 5 s$|\1|p")
	json=$(nfbox_ctl status --json | jq -r .metrics_http.head_timeouts)
	[ "$text" = "$json" ] && echo "$text"
}
slow_cases run

# The positive control (only the test build has NFBOX_TEST_PLANT): with
# the deadline planted away, the cases above must fail. The HTTP server is
# the same with either backend: the control runs once, on the BPF run.
if bpf_backend && [ -n "${NFBOX_BIN_RELEASE:-}" ] && [ "$NFBOX" != "$NFBOX_BIN_RELEASE" ]; then
	nfbox_stop
	if NFBOX_TEST_PLANT=httpd-no-deadline nfbox_start "$NS_TMP/policy.yaml" --metrics-listen "127.0.0.1:$PORT"; then
		(slow_cases planted) >"$NS_TMP/control.out" 2>&1
		missed=
		for c in slow-client-closed-at-deadline scrape-same-address-after-deadline head-timeouts-counted; do
			grep -q "^FAIL $c:" "$NS_TMP/control.out" || missed="$missed $c"
		done
		grep -q '^ok scrape-beside-slow-client$' "$NS_TMP/control.out" || missed="$missed (the control did not run: no scrape beside the client)"
		[ -z "$missed" ] && t_ok planted-no-deadline-caught ||
			t_fail planted-no-deadline-caught "with NFBOX_TEST_PLANT=httpd-no-deadline, passed:$missed"
	else
		t_fail planted-no-deadline-caught "the daemon did not start: $(cat "$NS_TMP/nfbox.err")"
	fi
fi
t_done
