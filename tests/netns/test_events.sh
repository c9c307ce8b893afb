#!/bin/bash
# Where verdict events go: under systemd (stderr is the journal stream) to
# the journal as entries with fields of their own (NFBOX_EVENT=verdict,
# RULE=, ACTION=, SRC=, DST=, ...), unless --no-journal-events; to the
# --log file as JSON lines; and to `nfbox log` followers, all at once. The
# daemon runs in a private mount namespace whose /run holds a stand-in for
# journald's socket (tests/lib/journal.py), so the host's journal is not
# touched. Runs with either backend (NFBOX_BACKEND).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
policy() { # [OPTIONS-LINE]
	cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
hooks:
  forward: { default: accept }
${1:-}
rules:
  - { name: drop-7000, in: lan, service: udp/7000, action: drop, log: true }
YAML
	backend_policy "$NS_TMP/policy.yaml"
}
policy

# journaled_start [run options]: nfbox run as systemd would run it (stderr
# the journal stream), with journal.py on /run/systemd/journal/socket.
journaled_start() {
	: >"$NS_TMP/nfbox.out"
	: >"$NS_TMP/nfbox.err"
	unshare -m --propagation private /bin/bash -c '
		set -e
		tmp=$1; shift
		mkdir -p "$tmp/keep"
		mount --rbind /run/netns "$tmp/keep"   # ip netns exec needs /run/netns
		mount -t tmpfs tmpfs /run
		mkdir -p /run/netns /run/systemd/journal
		mount --move "$tmp/keep" /run/netns
		/usr/bin/python3 tests/lib/journal.py /run/systemd/journal/socket "$tmp/journal.jsonl" 60 >/dev/null &
		for _ in $(seq 50); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
		[ -S /run/systemd/journal/socket ] || { echo "journal.py did not bind its socket" >>"$tmp/nfbox.err"; exit 1; }
		export JOURNAL_STREAM=$(stat -c %d:%i "$tmp/nfbox.err")
		exec ip netns exec "$@" 2>>"$tmp/nfbox.err"
	' _ "$NS_TMP" "$NS_A" "$NFBOX" run --policy "$NS_TMP/policy.yaml" --state-dir "$NS_TMP/state" \
		--socket "$NFBOX_SOCK" --pin-dir "$NFBOX_PINS" --log "$NS_TMP/events.jsonl" "$@" >"$NS_TMP/nfbox.out" &
	NFBOX_PID=$!
	nfbox_wait_ready
}

# journal_count FIELD=VALUE...: entries of the stand-in journal with all of them
journal_count() {
	/usr/bin/python3 - "$NS_TMP/journal.jsonl" "$@" <<'PY'
import json, sys
want = dict(a.split("=", 1) for a in sys.argv[2:])
n = 0
try:
    for line in open(sys.argv[1]):
        e = json.loads(line)
        n += all(e.get(k) == v for k, v in want.items())
except FileNotFoundError:
    pass
print(n)
PY
}

# send: one datagram to the logged drop rule; SENT counts them (all runs).
SENT=0
send() { in_c "$NET" udp-blast $S4 7000 1 2>/dev/null | grep -qx "sent 1" && SENT=$((SENT + 1)); }
file_lines() { [ "$(grep -c '"rule":"drop-7000"' "$NS_TMP/events.jsonl" 2>/dev/null)" = "$1" ]; }
journal_has() { [ "$(journal_count NFBOX_EVENT=verdict)" -ge "$1" ]; }
# (nothing tells when `nfbox log` has subscribed but an event: send until
# the follower has one)
sent_and_followed() { send && grep -q '"rule":"drop-7000"' "$NS_TMP/follow"; }

journaled_start || { t_fail start "cannot start under the stand-in journal"; t_done; }
t_check says-journal grep -q 'verdict events go to the journal' <(cat "$NS_TMP/nfbox.err" "$NS_TMP/journal.jsonl" 2>/dev/null)
nfbox_ctl log >"$NS_TMP/follow" 2>&1 &
follower=$!
# (not under t_check: its subshell would lose SENT)
if wait_until 5 sent_and_followed; then t_ok follower-line; else t_fail follower-line "nothing in 5 s: $(head -c 300 "$NS_TMP/follow")"; fi
kill $follower 2>/dev/null
wait $follower 2>/dev/null
# A line and an entry per datagram: the file is written first, the journal
# last (journal-entry below says if its entries do not come).
if wait_until 5 file_lines "$SENT" && grep -q '"rule":"drop-7000","action":"drop"' "$NS_TMP/events.jsonl"; then
	t_ok file-line
else
	t_fail file-line "$SENT sent, the file has: $(head -c 300 "$NS_TMP/events.jsonl")"
fi
wait_until 5 journal_has "$SENT"
t_check journal-entry [ "$(journal_count NFBOX_EVENT=verdict RULE=drop-7000 ACTION=drop HOOK=forward FAMILY=ipv4 \
	PROTO=17 SRC=$C4 DST=$S4 DPORT=7000 IN=lan0 OUT=wan0 PRIORITY=6 SYSLOG_IDENTIFIER=nfbox)" = "$SENT" ]
t_check journal-message grep -q "forward drop: rule drop-7000, ipv4 $C4 -> $S4 proto 17" "$NS_TMP/journal.jsonl"
nfbox_stop

journaled_start --no-journal-events || { t_fail start-quiet "cannot start"; t_done; }
before=$(journal_count NFBOX_EVENT=verdict)
send || t_fail file-still "udp-blast did not send"
t_check file-still wait_until 5 file_lines "$SENT"
# What does not come: an entry would be sent right after the file's line
# (events.c), so this fixed wait gives journal.py ample time to write it.
sleep 0.3
t_check no-journal-events [ "$(journal_count NFBOX_EVENT=verdict)" = "${before:-none}" ]
nfbox_stop

# Over the log-rate, events are counted, not made: 40 datagrams with a
# rate of 1 a minute (burst 2) give at most 3 events and at least 37 in
# log_rate_limited (stats and metrics), with either backend.
policy "options: { log-rate: 1/minute, log-burst: 2 }"
: >"$NS_TMP/events.jsonl"
journaled_start --no-journal-events || { t_fail start-limited "cannot start"; t_done; }
limited() { nfbox_ctl stats --json | jq -r .drops.log_rate_limited; }
SENT=0
for _ in $(seq 40); do send; done
events_now() { grep -c '"rule":"drop-7000"' "$NS_TMP/events.jsonl"; }
limited_at_least() { [ "$(limited)" -ge "$1" ]; }
t_check log-rate-sent [ "$SENT" = 40 ]
t_check log-rate-limited-counted wait_until 3 limited_at_least 37
few_events() { [ "$(events_now)" -ge 1 ] && [ "$(events_now)" -le 3 ]; }
t_check log-rate-few-events few_events
t_check log-rate-limited-metric grep -Eq '^nfbox_drops_total\{reason="log_rate_limited"\} (3[7-9]|40)$' <(nfbox_ctl metrics)
nfbox_stop
t_done
