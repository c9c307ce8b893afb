#!/bin/bash
# Schedules (when:) on the forward hook, against the real clock:
# - a window that opens 7 s after a reload and closes 6 s later (UTC,
#   HH:MM:SS): a datagram before it is dropped, one inside it passes, one
#   after it is dropped again, each change within a second of its edge,
#   without a reload (the generation stays), said in the log;
# - a window open now in Europe/Berlin's wall clock (UTC+1 or +2) and one
#   on a day that is not today: judged by the zone, not by UTC;
# - status shows each scheduled rule, in force or not, and its next change;
# - a reload while a window is open keeps it open; one that puts a rule
#   out of force (its window moved to another day) cuts its stream at once;
# - schedules that end: TCP streams let in by scheduled accept rules in
#   that window, running across its end (and across the reload): the
#   stream of a rule that cuts its connections (the default) stops within
#   1 s of the edge, its connection deleted from conntrack, counted in
#   status and metrics and logged; one of a rule with keep-connections: true
#   goes on, and so does one let in by an unscheduled rule, neither cut.
#   Positive controls (NFBOX_TEST_PLANT, the test build): schedule-no-cut
#   (nothing deleted), schedule-unmarked (the nftables mark or the
#   classifier's nfb_sched_conns entry left out) and schedule-cut-all
#   (every connection, or every rule's, deleted) each fail it on both
#   backends;
# - validate refuses an unknown zone and an empty window, at their place.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
hms() { date -u -d "@$1" +%H:%M:%S; }              # UTC seconds -> HH:MM:SS (UTC)
bhm() { TZ=Europe/Berlin date -d "@$1" +%H:%M; }   # ... -> HH:MM on Berlin's wall clock
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
hooks:
  forward: { default: drop }
YAML
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
# The windows from now on (the daemon runs: a slow start takes none of them).
now=$(date +%s)
# keep every window inside one UTC day: a start just before midnight waits
if [ $(((now + 20) % 86400)) -lt 20 ]; then
	sleep $((20 - (now + 20) % 86400 + 1))
	now=$(date +%s)
fi
OPEN=$((now + 7)) CLOSE=$((now + 13))
other_day=$(date -u -d "@$((now + 3 * 86400))" +%a | tr A-Z a-z)
today=$(date -u -d "@$now" +%a | tr A-Z a-z)
b_from=$(bhm $((now - 1800))) b_to=$(bhm $((now + 1800)))
# (Berlin's midnight inside the hour: a window across midnight, which
# belongs to the day it starts; it once became 00:00-END, which 23:30-24:00
# in Berlin is not in)
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
hooks:
  forward: { default: drop }
rules:
  - name: soon
    in: lan
    service: udp/7001
    when: { hours: "$(hms $OPEN)-$(hms $CLOSE)", tz: UTC }
    action: accept
  - name: cut
    in: lan
    service: tcp/7010
    when: { hours: "$(hms $OPEN)-$(hms $CLOSE)", tz: UTC }
    action: accept
  - name: kept
    in: lan
    service: tcp/7011
    when: { hours: "$(hms $OPEN)-$(hms $CLOSE)", tz: UTC, keep-connections: true }
    action: accept
  - name: always
    in: lan
    service: tcp/7012
    action: accept
  - name: moved
    in: lan
    service: tcp/7013
    when: { days: [$today], tz: UTC }
    action: accept
  - name: berlin-now
    in: lan
    service: udp/7002
    when: { hours: "$b_from-$b_to", tz: Europe/Berlin }
    action: accept
  - name: other-day
    in: lan
    service: udp/7003
    when: [ { days: [$other_day], tz: UTC } ]
    action: accept
YAML
t_check reload nfbox_ctl reload --policy "$NS_TMP/p.yaml"
# the receivers of four TCP streams, until 2.5 s after the window (started
# now: they are ready at its start on a busy machine too)
until_end() { local d; d=$(fnum "$CLOSE + 2.5 - $EPOCHREALTIME"); if fholds "$d > 1.0"; then echo "$d"; else echo 1.000; fi; }
streams_end=$(until_end)
for port in 7010 7011 7012 7013; do
	in_s timeout 30 "$NET" tcp-last $port "$streams_end" >"$NS_TMP/last.$port" 2>&1 &
	LAST_PIDS="${LAST_PIDS-} $!"
done
reloads() { nfbox_ctl status --json | jq -r .reloads_ok; }
reloads0=$(reloads)
sched() { # RULE FIELD: from status --json
	nfbox_ctl status --json |
		jq -r --arg r "$1" --arg k "$2" 'first((.schedules[] | select(.rule == $r) | if has($k) then .[$k] else "absent-key" end), "absent")'
}
t_check status-before [ "$(sched soon in_force)" = false ]
t_check status-next-open [ "$(sched soon next_change)" = "$OPEN" ]
t_check status-text grep -Eq '^schedules: +soon +out of force +next change [0-9T:-]+Z \(in [0-9]+s\), 0 connections cut$' <(nfbox_ctl status)
t_check status-text-keep grep -Eq '^ +kept +out of force +next change [0-9T:-]+Z \(in [0-9]+s\), keeps its connections$' <(nfbox_ctl status)
t_check before-dropped [ "$(probe_from $C4 $S4 7001)" = drop ]
t_check zone-berlin-now [ "$(probe_from $C4 $S4 7002)" = pass ]
t_check zone-other-day [ "$(probe_from $C4 $S4 7003)" = drop ]
t_check other-day-status [ "$(sched other-day in_force)" = false ]

for port in 7010 7011 7012 7013; do
	wait_until 5 grep -q listening "$NS_TMP/last.$port" || t_fail "stream-$port" "no listener"
done

# inside the window (its edge + 1 s): the streams begin, a tick every 20 ms
while [ "$(date +%s)" -lt $((OPEN + 1)) ]; do sleep 0.2; done
streams_end=$(until_end)
for port in 7010 7011 7012 7013; do
	in_c timeout 30 "$NET" tcp-ticks "$S4" $port "$streams_end" >"$NS_TMP/ticks.$port" 2>&1 &
	TICK_PIDS="${TICK_PIDS-} $!"
done
t_check open-passes [ "$(probe_from $C4 $S4 7001)" = pass ]
t_check status-open [ "$(sched soon in_force)" = true ]
t_check status-next-close [ "$(sched soon next_change)" = "$CLOSE" ]
t_check opened-logged grep -q "rule 'soon' is now in force (when:)" "$NS_TMP/nfbox.err"
t_check no-reload [ "$(reloads)" = "$reloads0" ]
for port in 7010 7011 7012 7013; do
	t_check "stream-$port-connected" wait_until 3 grep -q connected "$NS_TMP/ticks.$port"
done
# a reload inside the window: still open; it moves rule 'moved' to
# another day, which cuts its connection at once, and no other
sed "s/days: \[$today\]/days: [$other_day]/" "$NS_TMP/p.yaml" >"$NS_TMP/p2.yaml"
RELOADED=$(fnum "$EPOCHREALTIME")
nfbox_ctl reload --policy "$NS_TMP/p2.yaml" >/dev/null
t_check reload-keeps-open [ "$(probe_from $C4 $S4 7001)" = pass ]
t_check reload-cuts-moved grep -q "rule 'moved' is out of force (when:): connection cut: .* port 7013\$" "$NS_TMP/nfbox.err"

# after it
while [ "$(date +%s)" -lt $((CLOSE + 1)) ]; do sleep 0.2; done
t_check after-dropped [ "$(probe_from $C4 $S4 7001)" = drop ]
t_check closed-logged grep -q "rule 'soon' is no longer in force (when:)" "$NS_TMP/nfbox.err"
t_check status-after [ "$(sched soon in_force)" = false ]

# the streams across the edge: when did each last deliver?
wait $LAST_PIDS 2>/dev/null
kill $TICK_PIDS 2>/dev/null
wait $TICK_PIDS 2>/dev/null
last() { awk '/^last/ {print $3}' "$NS_TMP/last.$1"; }
# last - CLOSE, in seconds: the stream stopped this long after the edge
after_edge() { local t; t=$(last "$1"); fnum "${t:-0} - $CLOSE"; }
cut_after=$(after_edge 7010)
echo "# after the edge: cut ${cut_after}s, kept $(after_edge 7011)s, unscheduled $(after_edge 7012)s" >&2
t_check cut-stream-ran fholds "$cut_after > -1"
t_check cut-stream-stops fholds "$cut_after <= 1" || echo "# the cut stream delivered until ${cut_after}s after the edge" >&2
moved_last=$(last 7013)
moved_after=$(fnum "${moved_last:-0} - $RELOADED")
t_check moved-stream-stops-at-reload fholds "-1 < $moved_after && $moved_after <= 1"
t_check kept-stream-goes-on fholds "$(after_edge 7011) > 1.5"
t_check unscheduled-stream-goes-on fholds "$(after_edge 7012) > 1.5"
t_check cut-logged grep -q "rule 'cut' is out of force (when:): connection cut: proto 6 $C4 port [0-9]* to $S4 port 7010" "$NS_TMP/nfbox.err"
t_check others-not-cut sh -c "! grep -E 'connection cut: .* port (7011|7012)\$' '$NS_TMP/nfbox.err'"
t_check cut-status [ "$(sched cut connections_cut)" = 1 ]
t_check cut-metric grep -qx 'nfbox_schedule_connections_cut_total{rule="cut"} 1' <(nfbox_ctl metrics)
t_check cut-text grep -Eq '^ +cut +out of force +next change .*, 1 connection cut$' <(nfbox_ctl status)
t_check kept-status [ "$(sched kept keep_connections)" = true ]
t_check kept-no-count [ "$(sched kept connections_cut)" = absent-key ]

# validate: an unknown zone and an empty window, at their place
cat >"$NS_TMP/bad.yaml" <<'YAML'
version: 1
hooks:
  forward: { default: drop }
rules:
  - { name: a, service: udp/1, action: accept, when: { tz: Mars/Olympus } }
  - { name: b, service: udp/1, action: accept, when: { hours: "09:00-09:00" } }
YAML
out=$("$NFBOX" validate "$NS_TMP/bad.yaml" 2>&1)
t_check validate-zone grep -q "bad.yaml:5:60: error: when tz: unknown time zone 'Mars/Olympus'" <<<"$out"
t_check validate-empty grep -q "bad.yaml:6:63: error: when hours '09:00-09:00': the window is empty" <<<"$out"
nfbox_stop
t_done
