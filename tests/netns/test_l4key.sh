#!/bin/bash
# The classifier sees every packet's real L4 key, through real traffic:
# IPv6 datagrams and TCP SYNs behind extension-header chains of 9, 150 and
# 8,100 headers (a 65,000-byte packet over MTU 65535 links) meet the port
# rules, under a deny-list (default accept, drop the port) and an
# allow-list (default drop, accept the port); fragments the kernel refuses
# to reassemble (RFC 7112: the header chain split between fragments) are
# dropped and counted, never judged as if they were a datagram.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
PORT=9999

ns_setup 65535 || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/deny.yaml" <<YAML
version: 1
hooks:
  forward: { default: accept }
rules:
  - { name: no-udp, service: [udp/$PORT], action: drop }
  - { name: no-tcp, service: [tcp/$PORT], action: drop }
YAML
cat >"$NS_TMP/allow.yaml" <<YAML
version: 1
hooks:
  forward: { default: drop }
rules:
  - { name: udp, service: [udp/$PORT], action: accept }
  - { name: tcp, service: [tcp/$PORT], action: accept }
YAML

# The server's own stack refuses long chains: 8,100 headers on every
# kernel, and more than a handful on newer ones (6.18 stable discards 20).
# It counts them as Ip6InDiscards, and such a packet did reach the server:
# nfbox forwarded it.
srv_discards() { in_s nstat -asz Ip6InDiscards | awk '$1 == "Ip6InDiscards" { print $2 }'; }

# udp_arrives N: a UDP datagram to PORT behind N headers; prints what the
# server got: "intact", "discarded" (by the server's stack) or "none".
udp_arrives() {
	local d0 d1
	d0=$(srv_discards)
	ip netns exec "$NS_S" "$NET" udp-recv $PORT 10 1 >"$NS_TMP/recv" 2>&1 &
	local rpid=$!
	# udp: the TCP listener on the same port is there all along
	if ! wait_listen in_s $PORT udp; then
		wait $rpid
		echo "no listener"
		return
	fi
	in_c "$NET" v6-chain $S6 $PORT udp "$1" >"$NS_TMP/send" 2>&1 || { echo "send failed: $(cat "$NS_TMP/send")"; }
	# a datagram that has not come 0.5 s after the send is not coming (one
	# already queued is still read when the receiver is stopped)
	wait_until 0.5 grep -q '^got' "$NS_TMP/recv" || kill -TERM $rpid 2>/dev/null
	wait $rpid
	d1=$(srv_discards)
	if grep -q '^got .* intact$' "$NS_TMP/recv"; then
		echo intact
	elif [ "${d1:-0}" -gt "${d0:-0}" ]; then
		echo discarded
	else
		echo none
	fi
}

# syn_answered N: a TCP SYN to PORT behind N headers; "synack", "discarded"
# (by the server's stack) or "no answer".
syn_answered() {
	local d0 d1 got
	d0=$(srv_discards)
	got=$(in_c "$NET" v6-chain $S6 $PORT tcp "$1" 2>&1 | tail -n 1)
	d1=$(srv_discards)
	[ "$got" = "no answer" ] && [ "${d1:-0}" -gt "${d0:-0}" ] && got=discarded
	echo "$got"
}

# arrived WANT GOT N: the server got what the policy lets through. Short
# chains (0, 9) must arrive intact; a longer one the server's stack
# discarded arrived too.
arrived() {
	[ "$2" = "$1" ] && return 0
	[ "$3" -gt 9 ] && [ "$2" = discarded ] && [ "$1" != none ] && [ "$1" != "no answer" ]
}

unreassembled() {
	nfbox_ctl stats --json | jq -r .drops.unreassembled
}

in_s "$NET" tcp-listen $PORT 120 >/dev/null 2>&1 &
# (without it a SYN that got through would draw a reset: "no answer" too)
wait_listen in_s $PORT || { t_fail setup "no listener on tcp/$PORT"; t_done; }

for pol in deny allow; do
	nfbox_start "$NS_TMP/$pol.yaml" || { t_fail "$pol-start" "$(cat "$NS_TMP/nfbox.err")"; continue; }
	want_udp=$([ $pol = deny ] && echo none || echo intact)
	want_syn=$([ $pol = deny ] && echo "no answer" || echo synack)
	rule=$([ $pol = deny ] && echo no-udp || echo udp)
	for n in 0 9 150 8100; do
		c0=$(nfbox_count forward $rule)
		got=$(udp_arrives $n)
		c1=$(nfbox_count forward $rule)
		arrived "$want_udp" "$got" $n && [ $((c1 - c0)) = 1 ] && t_ok "$pol-udp-behind-$n-headers" ||
			t_fail "$pol-udp-behind-$n-headers" "server got: $got, expected $want_udp; rule $rule counted $((c1 - c0)) ($(cat "$NS_TMP/send"))"
	done
	for n in 0 9 150; do
		got=$(syn_answered $n)
		arrived "$want_syn" "$got" $n && t_ok "$pol-syn-behind-$n-headers" ||
			t_fail "$pol-syn-behind-$n-headers" "got '$got', expected '$want_syn'"
	done
	nfbox_stop
done

# RFC 7112: the first fragment lacks the end of the header chain. The kernel
# does not reassemble it; it reaches the classifier as a fragment.
nfbox_start "$NS_TMP/deny.yaml" || { t_fail split-start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
before=$(unreassembled)
ip netns exec "$NS_S" "$NET" udp-recv $PORT 3 1 >"$NS_TMP/recv" 2>&1 &
rpid=$!
listening=no
wait_listen in_s $PORT && listening=yes
in_c "$NET" v6-split-chain $S6 $PORT >/dev/null 2>&1
wait_until 0.5 grep -q '^got' "$NS_TMP/recv" || kill -TERM $rpid 2>/dev/null
wait $rpid
after=$(unreassembled)
if [ "$listening" = yes ] && ! grep -q '^got ' "$NS_TMP/recv" && [ "$after" -gt "$before" ]; then
	t_ok split-chain-dropped-and-counted
else
	t_fail split-chain-dropped-and-counted "server (listening: $listening): $(head -n 2 "$NS_TMP/recv" | tr '\n' ' '); unreassembled $before -> $after"
fi
t_done
