#!/bin/bash
# The two backends against each other: for each seed, a generated policy
# (sets, services, ports, protocols, states, interface groups, IPv4 and
# IPv6, accept, drop and reject, rate limits, dynamic sets filled at run
# time) and generated traffic (spoofed sources on
# two client links, destinations behind two uplinks and the appliance's own
# addresses, TCP flags, UDP, SCTP, ICMP, GRE, IPv6 extension headers) go
# through the appliance once with backend: bpf and once with backend:
# nftables, each in fresh namespaces (the same conntrack history). Every
# packet must be forwarded or not by both, and every rule counter agree.
# A disagreement prints the seed, the policy and the packet.
#
# Seeds: NFBOX_DIFF_SEEDS (default 4; 40 with NFBOX_LONG), starting at
# NFBOX_DIFF_SEED (replay one with NFBOX_DIFF_SEEDS=1).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
GEN=$PWD/tests/lib/diffgen.py
seeds=${NFBOX_DIFF_SEEDS:-$([ -n "${NFBOX_LONG:-}" ] && echo 40 || echo 4)}
first=${NFBOX_DIFF_SEED:-$((RANDOM % 100000))}
P=nfd$$
TMP=$(mktemp -d /tmp/nfbox-diff.XXXXXX)
PID=

cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	for ns in $P-c $P-a $P-s; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	umount "$TMP/bpf" 2>/dev/null
	[ -n "${NFBOX_DIFF_KEEP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/bpf"
mount -t bpf bpf "$TMP/bpf" || { t_fail setup "cannot mount a bpf filesystem"; t_done; }

# Fresh namespaces: client (c0, c1: no addresses, silent), appliance
# (lan0, lan1, wan0, wan1), server (s0, s1: no addresses, silent; a packet
# socket sees what arrives).
topology() {
	cleanup_ns
	for ns in $P-c $P-a $P-s; do ip netns add $ns || return 1; ip -n $ns link set lo up; done
	ip link add c0 netns $P-c type veth peer name lan0 netns $P-a || return 1
	ip link add c1 netns $P-c type veth peer name lan1 netns $P-a || return 1
	ip link add s0 netns $P-s type veth peer name wan0 netns $P-a || return 1
	ip link add s1 netns $P-s type veth peer name wan1 netns $P-a || return 1
	for ns in $P-c $P-s; do
		ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	done
	for l in "$P-c c0" "$P-c c1" "$P-s s0" "$P-s s1"; do
		set -- $l
		ip netns exec $1 sysctl -qw net.ipv6.conf.$2.disable_ipv6=1
		ip -n $1 link set $2 multicast off arp off up
	done
	ip netns exec $P-a sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
		net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	local a="ip -n $P-a"
	for i in lan0 lan1 wan0 wan1; do $a link set $i up; ip netns exec $P-a sysctl -qw net.ipv4.conf.$i.rp_filter=0; done
	$a addr add 198.51.100.1/24 dev lan0; $a addr add 2001:db8:1::1/64 dev lan0 nodad
	$a addr add 192.0.2.1/24 dev lan1; $a addr add 2001:db8:3::1/64 dev lan1 nodad
	$a addr add 203.0.113.1/28 dev wan0; $a addr add 2001:db8:2::1/64 dev wan0 nodad
	$a addr add 203.0.113.17/28 dev wan1; $a addr add 2001:db8:4::1/64 dev wan1 nodad
	local m0 m1
	m0=$(ip -n $P-s -br link show s0 | awk '{print $3}')
	m1=$(ip -n $P-s -br link show s1 | awk '{print $3}')
	$a neigh replace 203.0.113.2 lladdr "$m0" dev wan0 nud permanent
	$a neigh replace 203.0.113.18 lladdr "$m1" dev wan1 nud permanent
	$a -6 neigh replace 2001:db8:2::2 lladdr "$m0" dev wan0 nud permanent
	$a -6 neigh replace 2001:db8:4::2 lladdr "$m1" dev wan1 nud permanent
	$a route add 203.0.113.64/26 via 203.0.113.2
	$a route add 203.0.113.128/26 via 203.0.113.18
	$a -6 route add 2001:db8:5::/64 via 2001:db8:2::2
	$a -6 route add 2001:db8:6::/64 via 2001:db8:4::2
}
cleanup_ns() {
	for ns in $P-c $P-a $P-s; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
}

# run_backend DIR BACKEND: the seed's traffic through BACKEND; writes
# DIR/BACKEND.arrived and DIR/BACKEND.stats.
run_backend() {
	local d=$1 b=$2 sniff
	topology || return 1
	sed "s/^  BACKEND$/  backend: $b/" "$d/policy.yaml" >"$d/$b.yaml"
	rm -rf "$TMP/bpf/pins" "$TMP/state-$b" # a fresh start: no dynamic-set entries of the seed before
	ip netns exec $P-a "$NFBOX" run --policy "$d/$b.yaml" --state-dir "$TMP/state-$b" --socket "$TMP/s.sock" --pin-dir "$TMP/bpf/pins" \
		>"$d/$b.out" 2>"$d/$b.err" &
	PID=$!
	for _ in $(seq 100); do grep -q '^ready$' "$d/$b.out" && break; sleep 0.1; done
	grep -q '^ready$' "$d/$b.out" || { cat "$d/$b.err"; return 1; }
	for set in d1 d2; do # the dynamic sets' entries, at run time
		[ -s "$d/dyn-$set.txt" ] || continue
		"$NFBOX" set add "$set" --file "$d/dyn-$set.txt" --socket "$TMP/s.sock" >/dev/null || return 1
	done
	rm -f "$d/$b.arrived.ready"
	ip netns exec $P-s /usr/bin/python3 "$GEN" sniff "$d/$b.arrived" 60 &
	sniff=$!
	for _ in $(seq 100); do [ -e "$d/$b.arrived.ready" ] && break; sleep 0.05; done
	ip netns exec $P-c /usr/bin/python3 "$GEN" send "$d/packets.json" \
		"$(ip -n $P-a -br link show lan0 | awk '{print $3}')" "$(ip -n $P-a -br link show lan1 | awk '{print $3}')"
	sleep 0.5
	kill -TERM $sniff
	wait $sniff
	"$NFBOX" stats --json --socket "$TMP/s.sock" >"$d/$b.stats"
	kill -TERM $PID
	wait $PID
	PID=
}

for i in $(seq 0 $((seeds - 1))); do
	seed=$((first + i))
	d=$TMP/seed-$seed
	mkdir -p "$d"
	/usr/bin/python3 "$GEN" gen $seed "$d" || { t_fail "seed-$seed" "cannot generate"; continue; }
	sed 's/^  BACKEND$/  backend: bpf/' "$d/policy.yaml" >"$d/check.yaml"
	if ! "$NFBOX" validate --quiet "$d/check.yaml" >"$d/validate.out" 2>&1; then
		t_fail "seed-$seed" "generated an invalid policy (a generator bug): $(cat "$d/validate.out")"
		continue
	fi
	if run_backend "$d" bpf && run_backend "$d" nftables && out=$(/usr/bin/python3 "$GEN" compare "$d"); then
		t_ok "seed-$seed ($(echo "$out" | tail -1))"
	else
		t_fail "seed-$seed" "the backends disagree (replay: NFBOX_DIFF_SEED=$seed NFBOX_DIFF_SEEDS=1 $0)"
		echo "${out:-}" | head -40 | sed 's/^/    /'
		echo "    policy:"
		sed 's/^/      /' "$d/check.yaml"
		for set in d1 d2; do echo "    $set (nfbox set add): $(tr '\n' ' ' <"$d/dyn-$set.txt")"; done
	fi
done
t_done
