#!/bin/bash
# Rate limits (limit:) under load, with real traffic through the appliance:
# a rule's bucket lets burst datagrams through at once and then its rate,
# the rest go on to the next rule (which counts them) and never reach the
# server; `nfbox stats` counts them as over the limit. Per source: each
# address (IPv4 and IPv6 alike) has a bucket of its own. With the BPF
# backend a reload keeps the buckets, as it keeps the counters (the
# nftables backend makes its table anew: buckets start full). `stats --zero`
# resets the counts, not the buckets; `nfbox metrics` says the same as
# stats. Runs with either backend
# (NFBOX_BACKEND).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
C4B=198.51.100.3 C6B=2001:db8:1::3

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
ip -n "$NS_C" addr add $C4B/24 dev c0
ip -n "$NS_C" addr add $C6B/64 dev c0 nodad
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
hooks:
  forward: { default: drop }
rules:
  - name: flood
    in: lan
    service: udp/7000
    limit: { rate: 20/second, burst: 10 }
    action: accept
  - name: flood-over
    in: lan
    service: udp/7000
    action: drop
  - name: per-source
    in: lan
    service: udp/7001
    limit: { rate: 1/minute, burst: 3, per: source }
    action: accept
  - name: per-source-over
    in: lan
    service: udp/7001
    action: drop
YAML
nfbox_start "$NS_TMP/policy.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# stat RULE KEY: a value of the rule's row in `nfbox stats --json` (-1 if none)
stat() {
	nfbox_ctl stats --json |
		jq -r --arg r "$1" --arg k "$2" 'first((.rules[] | select(.rule == $r) | if has($k) then .[$k] else -1 end), -1)'
}
# seen RULE N: the rule has judged N datagrams (accepted or over its limit)
seen() { [ $(($(stat "$1" packets) + $(stat "$1" over_limit))) -eq "$2" ]; }

# The server counts what arrives on both ports.
ip netns exec "$NS_S" "$NET" udp-count 30 7000 7001 >"$NS_TMP/count.out" 2>&1 &
counter=$!
wait_until 5 grep -q listening "$NS_TMP/count.out" || { t_fail setup "udp-count never listened"; t_done; }

# A bucket per rule, under load: 3000 datagrams as fast as the client can.
t0=$(date +%s.%N)
in_c "$NET" udp-blast $S4 7000 3000 >"$NS_TMP/blast.out"
t1=$(date +%s.%N)
t_check all-seen wait_until 5 seen flood 3000
ok=$(stat flood packets) over=$(stat flood over_limit) fell=$(stat flood-over packets)
# burst at once, then 20 a second: at most 10 + 20 * elapsed (and one for
# the rounding of the clock)
max=$(awk -v t0="$t0" -v t1="$t1" 'BEGIN { x = 20 * (t1 - t0); c = int(x); if (c < x) c++; print 10 + c + 1 }')
if [ "$ok" -ge 10 ] && [ "$ok" -le "$max" ]; then
	t_ok rule-bucket
else
	t_fail rule-bucket "$ok accepted of $(cat "$NS_TMP/blast.out") in $(fnum "$t1 - $t0") s; expected 10..$max"
fi
t_check over-goes-on [ "$over" -eq "$fell" ]
t_check stats-limit [ "$(stat flood limit)" = "20/second burst 10" ]

# A bucket per source address: 3 each, whatever the others send (four
# sources at once, 500 datagrams each).
blasts=
for src in $C4 $C4B; do in_c "$NET" udp-blast $S4 7001 500 $src >/dev/null & blasts+=" $!"; done
for src in $C6 $C6B; do in_c "$NET" udp-blast $S6 7001 500 $src >/dev/null & blasts+=" $!"; done
wait $blasts
t_check source-all-seen wait_until 5 seen per-source 2000
t_check source-buckets [ "$(stat per-source packets)" -eq 12 ]
t_check source-over [ "$(stat per-source over_limit)" -eq 1988 ]
t_check source-over-goes-on [ "$(stat per-source-over packets)" -eq 1988 ]

# What the server got is what was accepted.
kill -TERM $counter 2>/dev/null
wait $counter 2>/dev/null
got7000=$(awk '$1 == "got" && $2 == 7000 { print $3 }' "$NS_TMP/count.out")
got7001=$(awk '$1 == "got" && $2 == 7001 { print $3 }' "$NS_TMP/count.out")
t_check server-got-accepted [ "${got7000:-0}" -eq "$ok" ]
t_check server-got-per-source [ "${got7001:-0}" -eq 12 ]

# nfbox metrics: the same counters in the Prometheus text format, read by
# the Prometheus client library's parser and compared with stats and status.
# With nftables a rule's last hit comes from the daemon's counter reads
# (within a second): first every rule that counted has one, so that the
# three reads below see the same.
hits_settled() {
	nfbox_ctl stats --json | json_true '[.rules[] | select((.default | not) and .packets != 0)] | all((.last_hit // 0) != 0)'
}
wait_until 3 hits_settled || t_fail last-hits "a rule that counted has no last hit after 3 s: $(nfbox_ctl stats)"
nfbox_ctl metrics >"$NS_TMP/metrics" 2>&1
nfbox_ctl stats --json >"$NS_TMP/stats.json"
nfbox_ctl status --json >"$NS_TMP/status.json"
out=$(/usr/bin/python3 tests/lib/metricscheck.py "$NS_TMP/metrics" "$NS_TMP/stats.json" "$NS_TMP/status.json" 2>&1) &&
	t_ok metrics-match-stats || t_fail metrics-match-stats "$out"

# stats --zero: the counters as they were, then 0; the buckets stay empty.
zeroed=$(nfbox_ctl stats --zero --json | jq '[.rules[] | select(.rule == "per-source") | .packets] | add // 0')
t_check zero-prints-before [ "$zeroed" -eq 12 ]
t_check zero-rule [ "$(stat per-source packets)" -eq 0 ]
t_check zero-over [ "$(stat per-source over_limit)" -eq 0 ]
t_check zero-default [ "$(stat flood-over packets)" -eq 0 ]
in_c "$NET" udp-blast $S4 7001 5 $C4 >/dev/null
t_check zero-then-counts wait_until 5 seen per-source 5
t_check zero-keeps-buckets [ "$(stat per-source packets)" -eq 0 ]

# A reload keeps the buckets (BPF): the per-source ones are still empty.
if bpf_backend; then
	touch "$NS_TMP/policy.yaml"
	nfbox_ctl reload >/dev/null 2>&1 || t_fail reload "$(nfbox_ctl reload 2>&1)"
	in_c "$NET" udp-blast $S4 7001 5 $C4 >/dev/null
	t_check reload-counts wait_until 5 seen per-source 10
	t_check reload-keeps-buckets [ "$(stat per-source packets)" -eq 0 ]
	t_check reload-keeps-over [ "$(stat per-source over_limit)" -eq 10 ]
fi
t_done
