#!/bin/bash
# IP fragments through the appliance, client -> appliance -> server, MTU 1500.
#
#  1. defrag on (the default): a 4000-byte UDP datagram, fragmented by the
#     client's own stack, reaches an allowed port intact and never a denied
#     one (IPv4 and IPv6); the rule counters show one verdict on the whole
#     reassembled datagram.
#  2. Crafted fragments (tests/lib/net.py frags): reverse order,
#     duplicates, overlaps, an 8-byte first fragment, IPv4 and IPv6.
#  3. options.defrag: false: fragments are classified one by one, so a port
#     rule cannot match them, while a `proto: udp` rule can. nfbox leaves
#     conntrack off then (conntrack would reassemble first).
#  Every datagram is checked at the server (net.py udp-recv: "intact") and
#  in nfbox's per-rule counters (how many verdicts, on what).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
ALLOW=9000 DENY=9001

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }

policy() { # FILE DEFRAG [extra rule lines]
	cat >"$1" <<YAML
version: 1
hooks:
  forward: { default: drop }
options:
  defrag: $2
rules:
  - { name: udp-$ALLOW, service: [udp/$ALLOW], action: accept }
${3:-}
YAML
}
policy "$NS_TMP/on.yaml" true
policy "$NS_TMP/off.yaml" false
policy "$NS_TMP/off-proto.yaml" false "  - { name: udp-any, proto: udp, action: accept }"

# deliver "PORTS" COMMAND...: listen on every PORT in the server, run
# COMMAND in the client, give the datagrams a moment, then set GOT[PORT] to
# what arrived there: "none", "intact SIZE" (exactly one intact datagram),
# or the receiver's lines.
declare -A GOT
deliver() {
	local ports=$1 p pids=()
	shift
	rm -f "$NS_TMP/send.err"
	for p in $ports; do
		# Not through in_s: $! must be the receiver itself, for SIGTERM.
		ip netns exec "$NS_S" "$NET" udp-recv "$p" 20 >"$NS_TMP/recv.$p" 2>&1 &
		pids+=($!)
	done
	for p in $ports; do
		wait_listen in_s "$p" || echo "no receiver listened on udp/$p" >>"$NS_TMP/send.err"
	done
	if ! in_c "$@" >"$NS_TMP/send.out" 2>&1; then
		echo "sender failed: $(tail -n 3 "$NS_TMP/send.out")" >>"$NS_TMP/send.err"
	fi
	# Fixed: the window in which "none" (and "exactly one") is seen; what
	# does arrive comes within a millisecond or two (0.25 s is a hundred
	# times that, also on a loaded machine).
	sleep 0.25
	kill -TERM "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	for p in $ports; do
		GOT[$p]=$(awk '/^got / { n++; $1 = $1; line[n] = $0; size = $2; how = $4 }
			END {
				if (!n) { print "none"; exit }
				if (n == 1 && how == "intact") { print "intact", size; exit }
				for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? " / " : ""), line[i]
				print ""
			}' "$NS_TMP/recv.$p")
	done
}
# expect NAME PORT WANT: a case on GOT[PORT] (after deliver); never ok if
# the receivers or the sender failed ("none" is what they would give).
expect() {
	if [ "${GOT[$2]}" = "$3" ] && [ ! -s "$NS_TMP/send.err" ]; then
		t_ok "$1"
	else
		t_fail "$1" "udp/$2 got '${GOT[$2]}', expected '$3'$([ -s "$NS_TMP/send.err" ] && printf '; %s' "$(cat "$NS_TMP/send.err")")"
		sed "s/^/    recv: /" "$NS_TMP/recv.$2"; sed "s/^/    send: /" "$NS_TMP/send.out"
	fi
}
# count RULE packets|bytes: the forward counter of RULE.
count() { nfbox_count forward "$1" "$2"; }
# packets: "A D": the packets counted by the forward rule $ACCEPT_RULE and
# by the forward default, in one stats call.
ACCEPT_RULE=udp-$ALLOW
packets() {
	nfbox_ctl stats --json | jq -r --arg a "$ACCEPT_RULE" 'def at($k): if has($k) then .[$k] else -1 end;
		reduce (.rules[] | select(.hook == "forward")) as $r ({}; .[$r.rule] = $r.packets) | "\(at($a)) \(at("(default)"))"'
}
# counts A0 D0 A1 D1: all four are counts (not empty, not -1: no stats)
counts() { for c in "$@"; do [[ "$c" =~ ^[0-9]+$ ]] || return 1; done; }
# verdicts NAME "A0 D0" WANT-A WANT-D: the accept rule and the default
# counted WANT-A and WANT-D packets since the snapshot "A0 D0".
verdicts() {
	local a0 d0 a1 d1
	read -r a0 d0 <<<"$2"
	read -r a1 d1 <<<"$(packets)"
	if ! counts "$a0" "$d0" "$a1" "$d1"; then
		t_fail "$1" "no counters from nfbox stats: '$2' then '$a1 $d1'"
	elif [ $((a1 - a0)) -eq "$3" ] && [ $((d1 - d0)) -eq "$4" ]; then
		t_ok "$1"
	else
		t_fail "$1" "$ACCEPT_RULE counted $((a1 - a0)) packets and the default $((d1 - d0)), expected $3 and $4"
	fi
}

# ---- 1. defrag on: datagrams fragmented by the client's stack ----------
if ! nfbox_start "$NS_TMP/on.yaml"; then
	t_fail start "nfbox run failed: $(cat "$NS_TMP/nfbox.err")"
	t_done
fi
if [ "$(engine_defrag)" = yes ]; then
	t_ok defrag-on-links
else
	t_fail defrag-on-links "$(nfbox_ctl status)"
fi
for fam in 4 6; do
	[ $fam = 4 ] && dst=$S4 || dst=$S6
	p0=$(count udp-$ALLOW packets) b0=$(count udp-$ALLOW bytes)
	deliver "$ALLOW" "$NET" udp-send "$dst" $ALLOW 4000
	expect stack$fam-allowed-intact $ALLOW "intact 4000"
	p1=$(count udp-$ALLOW packets) b1=$(count udp-$ALLOW bytes)
	# One verdict on the reassembled datagram (4028 or 4048 bytes with the
	# IP header), not three on 1500-byte fragments.
	if [ $((p1 - p0)) -eq 1 ] && [ $((b1 - b0)) -ge 4000 ]; then
		t_ok stack$fam-allowed-one-verdict
	else
		t_fail stack$fam-allowed-one-verdict "udp-$ALLOW counted $((p1 - p0)) packets, $((b1 - b0)) bytes"
	fi
	p0=$(count "(default)" packets) b0=$(count "(default)" bytes)
	deliver "$DENY" "$NET" udp-send "$dst" $DENY 4000
	expect stack$fam-denied-dropped $DENY none
	p1=$(count "(default)" packets) b1=$(count "(default)" bytes)
	if [ $((p1 - p0)) -eq 1 ] && [ $((b1 - b0)) -ge 4000 ]; then
		t_ok stack$fam-denied-one-verdict
	else
		t_fail stack$fam-denied-one-verdict "the default counted $((p1 - p0)) packets, $((b1 - b0)) bytes"
	fi
done

# ---- 2. crafted fragments, defrag on -----------------------------------
# Each run sends one 3000-byte datagram per port listed (1200-byte IPv4 or
# 1232-byte IPv6 fragments); the kernel's reassembly (nf_defrag, under
# nfbox) decides what datagram nfbox judges.
for fam in 4 6; do
	[ $fam = 4 ] && dst=$S4 || dst=$S6
	for mode in in-order reverse duplicate tiny-first; do
		# Order does not matter to reassembly; an exact duplicate is
		# discarded; an 8-byte first fragment (the UDP header alone, then
		# 375 more of 8 bytes) is reassembled like any other. nfbox takes
		# one verdict per datagram: one accept, one default drop.
		c=$(packets)
		deliver "$ALLOW $DENY" "$NET" frags "$dst" $ALLOW,$DENY $mode
		expect frag$fam-$mode-allowed $ALLOW "intact 3000"
		expect frag$fam-$mode-denied $DENY none
		verdicts frag$fam-$mode-one-verdict-each "$c" 1 1
	done
	# Evasion attempt: a later copy of the first fragment (same extent)
	# rewrites the destination port to the denied one. Linux keeps the
	# first copy (a fragment wholly inside data already queued is a
	# duplicate, IPFRAG_DUP, and is discarded without harm to the queue):
	# the allowed datagram arrives intact, the denied port sees nothing.
	c=$(packets)
	deliver "$ALLOW $DENY" "$NET" frags "$dst" $ALLOW overlap $DENY
	expect frag$fam-overlap-later-first-copy-kept $ALLOW "intact 3000"
	expect frag$fam-overlap-later-no-leak $DENY none
	verdicts frag$fam-overlap-later-verdict "$c" 1 0
	# The rewriting copy comes first: it is the one kept, so the datagram
	# reassembled is one to the denied port (its checksum is valid), and
	# nfbox drops it: nothing arrives anywhere.
	c=$(packets)
	deliver "$ALLOW $DENY" "$NET" frags "$dst" $ALLOW overlap-first $DENY
	expect frag$fam-overlap-first-no-leak $DENY none
	expect frag$fam-overlap-first-dropped $ALLOW none
	verdicts frag$fam-overlap-first-verdict "$c" 0 1
	# And the other way round: a datagram to the denied port with an
	# allowed-port copy of its first fragment sent first is reassembled as
	# a datagram to the allowed port, judged as such and delivered there,
	# intact: what nfbox judges is what the server receives.
	c=$(packets)
	deliver "$ALLOW $DENY" "$NET" frags "$dst" $DENY overlap-first $ALLOW
	expect frag$fam-overlap-first-judged-as-delivered $ALLOW "intact 3000"
	expect frag$fam-overlap-first-denied-none $DENY none
	verdicts frag$fam-overlap-first-judged-verdict "$c" 1 0
	# A partial overlap (offset 0, 8 bytes longer than the first fragment,
	# claiming the denied port): the kernel's reassembly drops the whole
	# datagram (IPv4: IPFRAG_OVERLAP since Linux 4.19, seen in the appliance's
	# IpReasmFails and IpExtReasmOverlaps; IPv6: RFC 5722), so it never reaches nfbox: no verdict at all.
	c=$(packets)
	deliver "$ALLOW $DENY" "$NET" frags "$dst" $ALLOW overlap-partial $DENY
	expect frag$fam-overlap-partial-dropped $ALLOW none
	expect frag$fam-overlap-partial-no-leak $DENY none
	verdicts frag$fam-overlap-partial-no-verdict "$c" 0 0
done
nfbox_stop

# ---- 3. defrag off ------------------------------------------------------
# Each fragment is classified on its own and keyed as a "fragment", the
# first one too (policy/README.md, "Fragments"): the port rule udp-9000
# cannot match them, the forward default drops all three (4000 bytes of
# UDP over MTU 1500: 3 fragments, IPv4 and IPv6), and a rule with
# `proto: udp` and no ports lets them through.
if ! nfbox_start "$NS_TMP/off.yaml"; then
	t_fail start-defrag-off "nfbox run failed: $(cat "$NS_TMP/nfbox.err")"
	t_done
fi
if [ "$(engine_defrag)" = no ]; then
	t_ok defrag-off-links
else
	t_fail defrag-off-links "$(nfbox_ctl status)"
fi
# port_rule_misses NAME FAMILY: the datagram to the allowed port does not
# arrive, its 3 fragments went to the default.
port_rule_misses() {
	local c a0 d0 a1 d1
	c=$(packets)
	deliver "$ALLOW" "$NET" udp-send "$2" $ALLOW 4000
	read -r a0 d0 <<<"$c"
	read -r a1 d1 <<<"$(packets)"
	if counts "$a0" "$d0" "$a1" "$d1" && [ ! -s "$NS_TMP/send.err" ] &&
		[ "${GOT[$ALLOW]}" = none ] && [ $((a1 - a0)) -eq 0 ] && [ $((d1 - d0)) -eq 3 ]; then
		t_ok "$1"
	else
		t_fail "$1" "udp/$ALLOW got '${GOT[$ALLOW]}'; udp-$ALLOW counted $a0 -> $a1 packets and the default $d0 -> $d1 (expected none, 0 and 3 fragments more)$([ -s "$NS_TMP/send.err" ] && printf '; %s' "$(cat "$NS_TMP/send.err")")"
	fi
}
# With defrag: false nfbox leaves conntrack off (conntrack's own nf_defrag
# would reassemble before the classifier): no table inet nfbox, or (the
# nftables backend) one without a ct expression.
if ! tables=$(in_a nft list ruleset 2>&1); then
	t_fail defrag-off-no-conntrack "nft list ruleset: $tables"
elif ! bpf_backend && ! grep -q '^table inet nfbox {' <<<"$tables"; then
	t_fail defrag-off-no-conntrack "no table inet nfbox: the nftables backend is not enforcing"
elif { bpf_backend && grep -q '^table inet nfbox {' <<<"$tables"; } ||
	in_a nft list table inet nfbox 2>/dev/null | grep -Eq '(^|[[:space:]])ct '; then
	t_fail defrag-off-no-conntrack "table inet nfbox exists with defrag: false"
else
	t_ok defrag-off-no-conntrack
fi
for fam in 4 6; do
	[ $fam = 4 ] && dst=$S4 || dst=$S6
	port_rule_misses defrag-off$fam-port-rule-misses-fragments "$dst"
	deliver "$DENY" "$NET" udp-send "$dst" $DENY 4000
	expect defrag-off$fam-denied-no-leak $DENY none
done
nfbox_stop

if ! nfbox_start "$NS_TMP/off-proto.yaml"; then
	t_fail start-defrag-off-proto "nfbox run failed: $(cat "$NS_TMP/nfbox.err")"
	t_done
fi
ACCEPT_RULE=udp-any
for fam in 4 6; do
	[ $fam = 4 ] && dst=$S4 || dst=$S6
	c=$(packets)
	deliver "$ALLOW" "$NET" udp-send "$dst" $ALLOW 4000
	expect defrag-off$fam-proto-rule-passes $ALLOW "intact 4000"
	verdicts defrag-off$fam-proto-rule-fragments "$c" 3 0
done
nfbox_stop
t_done
