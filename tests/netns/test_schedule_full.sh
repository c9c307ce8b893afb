#!/bin/bash
# Schedules that end, when the classifier's table of their connections is
# full: with the BPF backend a scheduled accept rule records each
# connection it lets in (nfb_sched_conns) to cut it at its rule's edge;
# a connection the table has no room for is still let in, and counted.
# The test build's table is made small (NFBOX_TEST_SCHED_CONNS=8), and 12
# TCP connections go through a rule open now (every day):
# - all 12 are let in; the kernel's map holds 8 (bpftool) and 4 are
#   counted as not recorded: `sched_conns_full` in stats' drops, in status
#   (JSON and a warning line in the text) and nfbox_drops_total in metrics;
# - the daemon warns within a second, naming the table and the fixes, and
#   not again for 2 more connections not recorded after it (at most once
#   an hour); stats --zero sets the count back to 0;
# - a rule with keep-connections: true records nothing, so counts nothing;
# - the daemon prunes the entries of connections that ended (its pass
#   every 300 ms here, NFBOX_TEST_SCHED_PRUNE_MS; 10 s in nfbox): the 12
#   are held open by two clients, 4 then 8; the entries of open ones
#   stay; once the first 4 closed (and conntrack forgot them, conntrack -D
#   when the tool is there, else they are TCP closed) their entries go
#   within seconds (bpftool), counted as `sched_conns_pruned` in status;
#   an entry without its connection in conntrack (planted with bpftool,
#   as one not confirmed yet) goes no sooner than 2 s after;
#   a new connection is then recorded (not counted as full), and a reload
#   that puts the rule out of force cuts the 5 open ones and empties the
#   table.
# The nftables backend marks connections in conntrack and has no such
# table: its drops, its status and the metric say 0, nothing is warned. Positive control (NFBOX_TEST_PLANT, the test build):
# sched-full-uncounted (the classifier does not count) and
# sched-full-warn-each (a warning at every tick of the daemon's that saw
# more), sched-prune-none (nothing pruned) and sched-prune-hasty
# (pruned at conntrack's first answer) fail it with BPF.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
SIZE=8 CONNS=12

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/p.yaml" <<'YAML'
version: 1
interfaces:
  lan: [lan0]
hooks:
  forward: { default: drop }
rules:
  - name: sched
    in: lan
    service: tcp/7020
    when: { days: [mon, tue, wed, thu, fri, sat, sun], tz: UTC }
    action: accept
  - name: kept
    in: lan
    service: tcp/7021
    when: { days: [mon, tue, wed, thu, fri, sat, sun], tz: UTC, keep-connections: true }
    action: accept
YAML
NFBOX_TEST_SCHED_CONNS=$SIZE NFBOX_TEST_SCHED_PRUNE_MS=300 nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

for port in 7020 7021; do
	in_s timeout 50 "$NET" tcp-sink $port 45 >/dev/null 2>&1 &
	wait_listen in_s $port || t_fail "listen-$port" "no listener on $port"
done
held() { awk '/^held/ {print $2}' <<<"$1"; }
# hold NAME N: N connections to 7020 held open in the background (until
# killed), their output in $NS_TMP/hold.NAME, the pid in HOLD_NAME
hold() {
	ip netns exec "$NS_C" timeout 40 "$NET" tcp-hold "$S4" 7020 "$2" 2 40 >"$NS_TMP/hold.$1" 2>&1 &
	eval "HOLD_$1=$!"
	wait_until 10 grep -q '^held' "$NS_TMP/hold.$1"
}
hold first 4
hold rest $((CONNS - 4))
t_check all-let-in [ "$(($(held "$(cat "$NS_TMP/hold.first")") + $(held "$(cat "$NS_TMP/hold.rest")")))" = $CONNS ]
t_check kept-let-in [ "$(held "$(in_c "$NET" tcp-hold "$S4" 7021 $CONNS 2 0)")" = $CONNS ]

drops() { nfbox_ctl stats --json | jq -r '.drops | if has("sched_conns_full") then .sched_conns_full else "absent" end'; }
status_full() { nfbox_ctl status --json | jq -r 'if has("sched_conns_full") then .sched_conns_full else "absent" end'; }
metric() { nfbox_ctl metrics | awk '$1 == "nfbox_drops_total{reason=\"sched_conns_full\"}" {print $2}'; }
warned() { grep -c 'schedules: .* were not recorded .*(nfb_sched_conns, [0-9]* entries) is full' "$NS_TMP/nfbox.err"; }
# the reports agree and name only documented keys (docs/report.md); read
# again until they agree (for 3 s at most): with nftables a rule's last
# hit is read at most once a second, so a read that falls between the
# metrics and stats sees a hit made just before in one and not the other
reports() {
	nfbox_ctl metrics >"$NS_TMP/metrics"
	nfbox_ctl stats --json >"$NS_TMP/stats.json"
	nfbox_ctl status --json >"$NS_TMP/status.json"
	/usr/bin/python3 tests/lib/metricscheck.py "$NS_TMP/metrics" "$NS_TMP/stats.json" "$NS_TMP/status.json"
}
wait_until 3 reports
out=$(/usr/bin/python3 tests/lib/keysdoc.py docs/report.md "$NS_TMP/status.json" "$NS_TMP/stats.json" 2>&1) &&
	t_ok json-keys-documented || t_fail json-keys-documented "$out"
out=$(/usr/bin/python3 tests/lib/metricscheck.py "$NS_TMP/metrics" "$NS_TMP/stats.json" "$NS_TMP/status.json" 2>&1) &&
	t_ok metrics-match-stats || t_fail metrics-match-stats "$out"
if bpf_backend; then
	lost=$((CONNS - SIZE))
	t_check map-full [ "$(bpftool -j map dump pinned "$NFBOX_PINS/maps/nfb_sched_conns" | jq length)" = $SIZE ]
	t_check stats-counts [ "$(drops)" = $lost ]
	t_check status-counts [ "$(status_full)" = $lost ]
	t_check status-text grep -q "^warning: *$lost connections let in by scheduled rules were not recorded" <(nfbox_ctl status)
	t_check metric-counts [ "$(metric)" = $lost ]
	# logged within the daemon's next tick (once a second), and only once
	t_check warned wait_until 3 grep -q 'were not recorded' "$NS_TMP/nfbox.err"
	t_check warning-names-fix grep -q "keep-connections: true.*nftables backend" "$NS_TMP/nfbox.err"
	# 2 more after the warning: counted, not warned of again (the daemon
	# would have within its next tick)
	in_c "$NET" tcp-hold "$S4" 7020 2 2 0 >/dev/null
	t_check more-counted [ "$(drops)" = $((lost + 2)) ]
	warned_again() { [ "$(warned)" -gt 1 ]; }
	if wait_until 1.5 warned_again; then
		t_fail warned-once "warned $(warned) times: $(grep 'were not recorded' "$NS_TMP/nfbox.err")"
	else
		t_ok warned-once
	fi
	nfbox_ctl stats --zero >/dev/null
	t_check zeroed [ "$(drops)" = 0 ]
	# pruned: the entries of the open connections stay (passes every
	# 300 ms have run by now); once the first 4 closed, theirs go
	entries() { bpftool -j map dump pinned "$NFBOX_PINS/maps/nfb_sched_conns" | jq length; }
	pruned() { nfbox_ctl status --json | jq -r 'if has("sched_conns_pruned") then .sched_conns_pruned else "absent" end'; }
	t_check open-kept [ "$(entries)" = $SIZE ]
	t_check none-pruned [ "$(pruned)" = 0 ]
	kill "$HOLD_first"
	wait "$HOLD_first" 2>/dev/null
	established() { [ "$(in_a conntrack -L -p tcp --dport 7020 --state ESTABLISHED 2>/dev/null | wc -l)" = "$1" ]; }
	if command -v conntrack >/dev/null; then # gone from conntrack (ENOENT), not only closed
		wait_until 5 established $((CONNS - 4)) || t_fail closed "$(in_a conntrack -L -p tcp --dport 7020 2>&1)"
		in_a conntrack -D -p tcp --dport 7020 --state TIME_WAIT >/dev/null 2>&1
	fi
	entries_are() { [ "$(entries)" = "$1" ]; }
	t_check ended-pruned wait_until 5 entries_are $((SIZE - 4))
	t_check pruned-counted [ "$(pruned)" = 4 ]
	# room again: a new connection is recorded, not counted as full
	hold new 1
	t_check new-let-in [ "$(held "$(cat "$NS_TMP/hold.new")")" = 1 ]
	t_check new-recorded [ "$(entries)" = $((SIZE - 3)) ]
	t_check new-not-full [ "$(drops)" = 0 ]
	# an entry whose connection conntrack has not yet (the classifier
	# records a connection before conntrack confirms it) is asked about
	# twice, 2 s apart, before it goes: one planted with bpftool goes no
	# sooner than 2 s after (the daemon's first question comes at its
	# next tick, within a second), and within seconds
	key=$(/usr/bin/python3 -c 'import socket, struct, sys
a = lambda s: socket.inet_aton(s) + bytes(12)
print(" ".join("%02x" % b for b in a(sys.argv[1]) + a(sys.argv[2]) + struct.pack("!HHBBH", 40000, 7020, 6, 0, 0)))' "$C4" "$S4")
	t0=${EPOCHREALTIME/./}
	bpftool map update pinned "$NFBOX_PINS/maps/nfb_sched_conns" key hex $key value hex 01 00 00 00
	t_check unconfirmed-pruned wait_until 8 entries_are $((SIZE - 3))
	t_check unconfirmed-grace [ $((${EPOCHREALTIME/./} - t0)) -ge 2000000 ]
	t_check unconfirmed-counted [ "$(pruned)" = 5 ]
	# the 5 open ones are still cut at the rule's edge (a reload that puts
	# it out of force: its day three days on, which a run across midnight
	# does not reach)
	sed "s/days: \[mon, tue, wed, thu, fri, sat, sun\], tz: UTC }/days: [$(date -u -d '+3 days' +%a | tr A-Z a-z)], tz: UTC }/" \
		"$NS_TMP/p.yaml" >"$NS_TMP/p2.yaml"
	t_check reload nfbox_ctl reload --policy "$NS_TMP/p2.yaml"
	cuts() { [ "$(grep -c "rule 'sched' is out of force (when:): connection cut: .* port 7020\$" "$NS_TMP/nfbox.err")" = "$1" ]; }
	t_check open-cut wait_until 3 cuts 5
	t_check table-emptied [ "$(entries)" = 0 ]
else
	t_check stats-zero [ "$(drops)" = 0 ]
	t_check status-zero [ "$(status_full)" = 0 ]
	t_check metric-zero [ "$(metric)" = 0 ]
	t_check not-warned [ "$(warned)" = 0 ]
fi
kill "${HOLD_first-}" "${HOLD_rest-}" "${HOLD_new-}" 2>/dev/null
nfbox_stop
t_done
