#!/bin/bash
# `nfbox trace --live`: the next N real packets that match a filter, traced
# through the engine that enforces (the classifier's trace filter with the
# BPF backend, nftables' trace with the nftables one). Each traced packet
# names the rule that decided it, as that rule's counter says; packets
# outside the filter are not traced; after N the trace ends and its filter
# (nfb_trace, or the chains trace_*) is gone from the kernel; the verdicts
# while tracing are those without. IPv4 and IPv6, accepted and dropped.
# Runs with either backend (NFBOX_BACKEND).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
hooks:
  forward: { default: accept }
rules:
  - { name: drop-7000, in: lan, service: udp/7000, action: drop }
  - { name: pass-7001, in: lan, service: udp/7001, action: accept }
  # reject, log and a limit: with nftables, rules in a chain of their own
  - { name: rej-7002, in: lan, service: udp/7002, action: reject, log: true, limit: { rate: 100/second, burst: 100 } }
YAML
nfbox_start "$NS_TMP/policy.yaml" || { t_fail start "nfbox did not start"; t_done; }

# The trace's filter in the kernel: "yes" while one is in place.
trace_in_kernel() {
	if bpf_backend; then
		bpftool -j map lookup pinned "$NFBOX_PINS/maps/nfb_trace" key 0 0 0 0 2>/dev/null |
			jq -r '(if has("formatted") then .formatted else . end).value | if .left != 0 then "yes" else "no" end'
	else
		in_a nft list table inet nfbox 2>/dev/null | grep -q 'nftrace set 1' && echo yes || echo no
	fi
}
trace_on() { [ "$(trace_in_kernel)" = yes ]; }
started() { [ "$(grep -c 'live trace: started' "$NS_TMP/nfbox.err")" -ge "$1" ]; }

# (ip netns exec execs: $! is the process itself, for signals)
ip netns exec "$NS_S" /usr/bin/python3 "$NET" udp-count 30 7000 7001 >"$NS_TMP/got" &
counter=$!
wait_until 5 grep -q listening "$NS_TMP/got"

# live FAMILY PREFIX: trace 3 packets from the client's PREFIX (in the
# background, into $NS_TMP/trace.FAMILY); 3 of the other family sent first
# do not match, then one to 7000 (dropped), 7001 (accepted) and 7002
# (rejected).
n=0
live() {
	local fam=$1 pfx=$2 dst other
	n=$((n + 1))
	nfbox_ctl trace --live --json --count 3 --timeout 20 --in lan0 --from "$pfx" --proto udp \
		>"$NS_TMP/trace.$fam" 2>"$NS_TMP/trace.$fam.err" &
	tracer=$!
	wait_until 5 started $n || { t_fail "$fam-start" "$(cat "$NS_TMP/trace.$fam.err")"; return; }
	t_check "$fam-filter-in-kernel" trace_on
	[ "$fam" = ipv4 ] && dst=$S4 other=$S6 || { dst=$S6; other=$S4; }
	in_c /usr/bin/python3 "$NET" udp-blast "$other" 7000 3 >/dev/null # the other family: not traced
	in_c /usr/bin/python3 "$NET" udp-blast "$dst" 7000 1 >/dev/null
	in_c /usr/bin/python3 "$NET" udp-blast "$dst" 7001 1 >/dev/null
	in_c /usr/bin/python3 "$NET" udp-blast "$dst" 7002 1 >/dev/null
	wait $tracer
	t_check "$fam-exit" [ $? = 0 ] || cat "$NS_TMP/trace.$fam.err" "$NS_TMP/nfbox.err" >&2
	t_check "$fam-three-lines" [ "$(wc -l <"$NS_TMP/trace.$fam")" = 3 ]
	/usr/bin/python3 - "$NS_TMP/trace.$fam" "$fam" "$dst" <<'PY' >"$NS_TMP/check.$fam"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
for l, (rule, action, port) in zip(lines, [("drop-7000", "drop", 7000), ("pass-7001", "accept", 7001), ("rej-7002", "reject", 7002)]):
    ok = (l["rule"], l["action"], l["dport"], l["family"], l["dst"], l["hook"], l["in"]) == \
         (rule, action, port, sys.argv[2], sys.argv[3], "forward", "lan0")
    print(rule, "ok" if ok else "bad: %s" % l, l.get("counter", {}).get("packets", -1))
PY
	t_check "$fam-drop-named" grep -q '^drop-7000 ok' "$NS_TMP/check.$fam"
	t_check "$fam-accept-named" grep -q '^pass-7001 ok' "$NS_TMP/check.$fam"
	t_check "$fam-reject-named" grep -q '^rej-7002 ok' "$NS_TMP/check.$fam"
	t_check "$fam-gone-after-n" [ "$(trace_in_kernel)" = no ]
}

live ipv4 198.51.100.0/24
live ipv6 2001:db8:1::/64

# The counters the trace showed are the rules' (no packet since but those
# sent): 1 to 7000 and 1 to 7001 per family traced; 3 more to 7000 of the
# other family each time were not traced but counted.
t_check counters-drop [ "$(nfbox_count forward drop-7000)" = 8 ]
t_check counters-pass [ "$(nfbox_count forward pass-7001)" = 2 ]
t_check counter-in-line-v4 grep -q '^drop-7000 ok 4$' "$NS_TMP/check.ipv4"
t_check counter-in-line-v6 grep -q '^pass-7001 ok 2$' "$NS_TMP/check.ipv6"
kill -TERM $counter
wait $counter
# The verdicts while tracing: the dropped never arrived, the accepted did.
t_check verdicts grep -qx 'got 7000 0' "$NS_TMP/got"
t_check verdicts-accept grep -qx 'got 7001 2' "$NS_TMP/got"

# A reload ends the trace (its filter was put in the engine it replaces):
# exit 1, said, gone from the kernel.
nfbox_ctl trace --live --count 5 --timeout 30 --to 192.0.2.1 >/dev/null 2>"$NS_TMP/reload.err" &
tracer=$!
wait_until 5 started 3
wait_until 5 trace_on
nfbox_ctl reload >/dev/null
wait $tracer
t_check reload-exit [ $? = 1 ]
t_check reload-said grep -q 'the trace ended: reload' "$NS_TMP/reload.err"
t_check reload-gone [ "$(trace_in_kernel)" = no ]

# A tracer that leaves ends its trace (filter out of the kernel); a timeout
# ends one with what it traced, and exit 1.
"$NFBOX" trace --socket "$NFBOX_SOCK" --live --count 5 --timeout 30 --to 192.0.2.1 >/dev/null 2>&1 &
tracer=$!
wait_until 5 started 4
wait_until 5 trace_on
kill -TERM $tracer
wait $tracer
t_check leave-ends wait_until 5 eval '[ "$(trace_in_kernel)" = no ]'
nfbox_ctl trace --live --count 5 --timeout 1 --to 192.0.2.1 >/dev/null 2>"$NS_TMP/timeout.err"
t_check timeout-exit [ $? = 1 ]
t_check timeout-said grep -q '0 of 5 packets traced; the trace ended: timeout' "$NS_TMP/timeout.err"
t_check timeout-gone [ "$(trace_in_kernel)" = no ] || { cat "$NS_TMP/timeout.err"; tail -5 "$NS_TMP/nfbox.err"; } >&2
t_done
