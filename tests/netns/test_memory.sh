#!/bin/bash
# The BPF engine's memory follows the policy (issue 14): a two-rule policy
# holds under 2 MiB plus 64 KiB per possible CPU of kernel memory (`nfbox
# status`, bpf_memory_bytes); a policy with thousands of rules holds more;
# once a reload is answered the replaced policy's maps are freed. Counters
# and limit state go on exactly across reloads that give the counters map
# another size (its slots grow from 64 to 4,096 and back): nothing a rule
# counted is lost, also while datagrams arrive during the reloads.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }

small() {
	cat <<YAML
version: 1
hooks:
  forward: { default: drop }
rules:
  - { name: keep, service: udp/7000, action: accept }
  - name: lim
    service: udp/7002
    limit: { rate: 1/minute, burst: 3 }
    action: accept
  - { name: lim-over, service: udp/7002, action: drop }
YAML
}
big() { # the same rules after 3,000 others: the counter slots pass 64
	printf 'version: 1\nhooks:\n  forward: { default: drop }\nrules:\n'
	awk 'BEGIN { for (i = 0; i < 3000; i++) printf "  - { name: r%d, service: udp/%d, action: accept }\n", i, 10000 + i }'
	small | sed -n '/^rules:/,$p' | tail -n +2
}
small >"$NS_TMP/small.yaml"
big >"$NS_TMP/big.yaml"
cp "$NS_TMP/small.yaml" "$NS_TMP/policy.yaml"
nfbox_start "$NS_TMP/policy.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

mem() { nfbox_ctl status --json | jq -r .bpf_memory_bytes; }
# stat RULE KEY: a value of the rule's row in `nfbox stats --json` (-1 if none)
stat() {
	nfbox_ctl stats --json |
		jq -r --arg r "$1" --arg k "$2" 'first((.rules[] | select(.rule == $r) | if has($k) then .[$k] else -1 end), -1)'
}
load() { # FILE: make it the policy and reload (a failure is a case's)
	local out
	cp "$1" "$NS_TMP/policy.yaml"
	out=$(nfbox_ctl reload 2>&1) && return 0
	t_fail "reload-$(basename "$1" .yaml)" "$out"
	return 1
}
# counted RULE N: RULE has counted N datagrams or more
counted() { [ "$(stat "$1" packets)" -ge "$2" ]; }
# lim_seen N: the limited rule has judged N datagrams (within or over)
lim_seen() { [ $(($(stat lim packets) + $(stat lim over_limit))) -ge "$1" ]; }

cpus=$(awk -F, '{ for (i = 1; i <= NF; i++) n += split($i, r, "-") == 2 ? r[2] - r[1] + 1 : 1 } END { print n }' /sys/devices/system/cpu/possible)
mem0=$(mem)
limit=$((2 * 1048576 + cpus * 65536))
if [ "$mem0" -gt 0 ] && [ "$mem0" -lt "$limit" ]; then
	t_ok small-policy-memory
else
	t_fail small-policy-memory "$mem0 bytes for 3 rules; want under $limit (2 MiB + 64 KiB x $cpus CPUs)"
fi
echo "# 3 rules: $mem0 bytes of BPF maps ($cpus possible CPUs)"

in_c "$NET" udp-blast $S4 7000 100 >/dev/null
in_c "$NET" udp-blast $S4 7002 5 >/dev/null
wait_until 5 counted keep 100 && wait_until 5 lim_seen 5 # (the cases below say if not)
t_check counted-before [ "$(stat keep packets)" -eq 100 ]
t_check limit-before [ "$(stat lim packets) $(stat lim over_limit)" = "3 2" ]

load "$NS_TMP/big.yaml"
mem1=$(mem)
echo "# 3,003 rules: $mem1 bytes"
t_check memory-follows-policy [ "$mem1" -gt "$mem0" ]
t_check counters-carried-to-larger-map [ "$(stat keep packets)" -eq 100 ]
in_c "$NET" udp-blast $S4 7000 50 >/dev/null
in_c "$NET" udp-blast $S4 7002 1 >/dev/null
wait_until 5 counted keep 150 && wait_until 5 lim_seen 6 # (the cases below say if not)
t_check counting-in-larger-map [ "$(stat keep packets)" -eq 150 ]
# the bucket came along: still empty, so the datagram is over the limit
t_check limit-state-carried [ "$(stat lim packets) $(stat lim over_limit)" = "3 3" ]

load "$NS_TMP/small.yaml"
mem2=$(mem)
echo "# 3 rules again: $mem2 bytes"
if [ "$mem2" -le $((mem0 * 12 / 10)) ]; then
	t_ok replaced-policy-freed
else
	t_fail replaced-policy-freed "$mem2 bytes after going back to the 3-rule policy; $mem0 before (want within 1.2x)"
fi
t_check counters-carried-to-smaller-map [ "$(stat keep packets)" -eq 150 ]
load "$NS_TMP/small.yaml"
t_check same-size-reload-keeps-memory [ "$(mem)" -le $((mem0 * 12 / 10)) ]

# Datagrams during reloads that resize the map, one a millisecond: every
# one that reached the server was counted, none twice.
base=$(stat keep packets)
ip netns exec "$NS_S" "$NET" udp-count 12 7000 >"$NS_TMP/count.out" 2>&1 &
counter=$!
wait_until 5 grep -q listening "$NS_TMP/count.out" || t_fail counted-exactly-across-resizes "udp-count never listened"
in_c "$NET" udp-ticks $S4 9 7000 >"$NS_TMP/ticks.out" 2>&1 &
ticks=$!
# Each policy counts ticks of its own before the next reload: 50 ms of them.
wait_until 3 counted keep $((base + 50)) || t_fail counted-exactly-across-resizes "no ticks counted within 3 s"
for i in 1 2 3 4 5 6; do
	if [ $((i % 2)) = 1 ]; then load "$NS_TMP/big.yaml"; else load "$NS_TMP/small.yaml"; fi
	c=$(stat keep packets)
	wait_until 3 counted keep $((c + 50)) || t_fail counted-exactly-across-resizes "no ticks counted after reload $i"
done
wait $ticks
# A last datagram to the limited rule, behind every tick: once it is
# counted (over the limit), every tick before it has been judged, and what
# was let through is on its way (the counter reads what is queued, and
# 0.1 s more, after SIGTERM).
l=$(($(stat lim packets) + $(stat lim over_limit)))
in_c "$NET" udp-blast $S4 7002 1 >/dev/null
wait_until 5 lim_seen $((l + 1)) || t_fail counted-exactly-across-resizes "the datagram after the ticks was not counted"
kill -TERM $counter 2>/dev/null
wait $counter
got=$(awk '$1 == "got" { print $3 }' "$NS_TMP/count.out")
counted=$(($(stat keep packets) - base))
echo "# during 6 resizing reloads: $(cat "$NS_TMP/ticks.out"); the server got $got; the rule counted $counted"
if [ -n "$got" ] && [ "$got" -gt 1000 ] && [ "$counted" -eq "$got" ]; then
	t_ok counted-exactly-across-resizes
else
	t_fail counted-exactly-across-resizes "server got ${got:-?}, rule counted $counted"
fi
t_done
