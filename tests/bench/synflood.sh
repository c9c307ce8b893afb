#!/bin/bash
# SYN flood against a protected port (issue 28): 1,000 real connections from
# a legitimate client while hping3 floods the same port with forged SYNs,
# with synproxy: true and without, on each backend, through
# the appliance namespace of tests/lib/netns.sh. For each: the connections
# that completed, and the most conntrack entries the appliance held.
# Target: with synproxy at least 99% complete and conntrack never fills.
# The forged SYNs come from one documentation address (hping3 changes the
# source port of each): --rand-source would leave the documentation ranges.
# nf_conntrack_max cannot be lowered inside a network namespace (it is the
# host's), so "fills" is read against the namespace's own maximum.
# Usage: tests/bench/synflood.sh [BUILD_DIR] (root). BENCH_SYN_CONNS (1000).
set -u
cd "$(dirname "$0")/../.."
BIN=${1:-build}
NS_PREFIX=nfbsyn$$
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
NFBOX=$BIN/nfbox
CONNS=${BENCH_SYN_CONNS:-1000}
FORGED=198.51.100.77
FAILS=0

ns_setup || { echo "bench: FAILED: cannot build the namespaces" >&2; exit 1; }
for be in bpf nftables; do
	for v in true false; do
		cat >"$NS_TMP/$be-$v.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
sets:
  servers: [$S4]
hooks:
  forward: { default: drop }
options: { backend: $be }
rules:
  - { name: web, in: lan, to: servers, service: tcp/80, action: accept, synproxy: $v }
YAML
	done
done
max=$(in_a cat /proc/sys/net/netfilter/nf_conntrack_max)

# run VARIANT: the daemon on it, the server, the flood, the connections.
run() {
	local v=$1 ok peak=0 c fpid spid
	in_a conntrack -F >/dev/null 2>&1 # what the run before left is not this one's
	nfbox_start "$NS_TMP/$v.yaml" || { echo "bench: FAILED: nfbox run ($v)" >&2; FAILS=$((FAILS + 1)); return; }
	in_s timeout 120 "$NET" tcp-whoami 80 110 100000 >/dev/null 2>&1 &
	spid=$!
	sleep 0.5
	in_c timeout 100 hping3 -q -S -p 80 ${BENCH_SYN_RATE:---flood} -a $FORGED $S4 >/dev/null 2>&1 &
	fpid=$!
	sleep 1
	ok=$(in_c "$NET" tcp-many $S4 80 "$CONNS" 2)
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	c=$(in_a cat /proc/sys/net/netfilter/nf_conntrack_count)
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	nfbox_stop
	echo "$ok $c"
}
echo "== SYN flood on a protected port: $CONNS connections from a real client during the flood"
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.1f", 100 * a / b }'; }
for be in bpf nftables; do
	read -r ok_on ct_on <<<"$(run $be-true)"
	read -r ok_off ct_off <<<"$(run $be-false)"
	printf '%-24s %6s of %s connections (%s%%)   conntrack at the end %s of %s\n' \
		"$be, synproxy" "${ok_on:-?}" "$CONNS" "$(pct "${ok_on:-}" "$CONNS")" "${ct_on:-?}" "$max" \
		"$be, no synproxy" "${ok_off:-?}" "$CONNS" "$(pct "${ok_off:-}" "$CONNS")" "${ct_off:-?}" "$max"
	p=$(pct "${ok_on:-}" "$CONNS")
	echo "$be, synproxy: $p% complete (target >= 99%) $(awk -v v="$p" 'BEGIN { print (v != "" && v + 0 >= 99) ? "MET" : "MISSED" }');" \
		"conntrack $(awk -v c="${ct_on:-0}" -v m="$max" 'BEGIN { print (c + 0 < m + 0) ? "never full: MET" : "full: MISSED" }')"
	[ -n "${ok_on:-}" ] && [ -n "${ok_off:-}" ] || FAILS=$((FAILS + 1))
done
[ "$FAILS" -eq 0 ]
