#!/bin/bash
# `make demo`: nfbox enforcing config/policy.yaml on an appliance between a
# client and a server, all in throw-away network namespaces. Shows allowed
# and denied flows over IPv4 and IPv6, replies passing by conntrack, a
# fragmented datagram judged whole, a capture of the forwarded traffic
# (mirror-from) and of jumbo frames (nfbox capture), then the counters. Nothing outside the
# namespaces it creates is touched; everything is removed at the end.
set -u
cd "$(dirname "$0")/.."
NFBOX=${NFBOX:-$PWD/build/nfbox}
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
policy=${NFBOX_POLICY:-config/policy.yaml}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
unexpected=0
show() { # DESCRIPTION EXPECT(allowed|denied) COMMAND...
	local what=$1 expect=$2
	shift 2
	if "$@" >/dev/null 2>&1; then got=allowed; else got=denied; fi
	[ "$got" = "$expect" ] || unexpected=$((unexpected + 1))
	printf '  %-58s %-8s %s\n' "$what" "$got" "$([ "$got" = "$expect" ] && echo '(as the policy says)' || echo '(UNEXPECTED)')"
}

[ "$(id -u)" -eq 0 ] || { echo "make demo needs root (network namespaces, BPF)"; exit 1; }
say "topology: client $C4/$C6 -- lan0 [nfbox] wan0 -- server $S4/$S6"
ns_setup || exit 1
say "nfbox validate $policy (in the appliance namespace, which forwards)"
in_a "$NFBOX" validate "$policy"
say "nfbox run --policy $policy (in the appliance namespace)"
nfbox_start "$policy" --log "$NS_TMP/verdicts.jsonl" || exit 1
nfbox_ctl status

say "traffic"
in_s "$NET" tcp-listen 80 6 >/dev/null &
in_s "$NET" tcp-listen 8080 3 >/dev/null &
# (a "denied" without a listener would be no news)
wait_listen in_s 80
wait_listen in_s 8080
show "client -> server tcp/80 (office-web)" allowed in_c "$NET" tcp-connect $S4 80 2
show "client -> server tcp/8080 (no rule: forward default drop)" denied in_c "$NET" tcp-connect $S4 8080 1
in_c "$NET" tcp-listen 80 3 >/dev/null &
wait_listen in_c 80
show "server -> client tcp/80 (unsolicited: log-rest drops)" denied in_s "$NET" tcp-connect $C4 80 1
show "client -> server ping (ping-out)" allowed in_c ping -c1 -W1 $S4
show "client -> server ping6 (ping6-out)" allowed in_c ping -6 -c1 -W1 $S6
in_a "$NET" tcp-listen 22 3 >/dev/null &
wait_listen in_a 22
show "client -> appliance tcp/22 (input: admin-ssh from office)" allowed in_c "$NET" tcp-connect $A4L 22 2
in_a "$NET" tcp-listen 22 2 >/dev/null &
wait_listen in_a 22
show "server -> appliance tcp/22 (input default drop)" denied in_s "$NET" tcp-connect $A4W 22 1

say "NAT (masquerade out wan, through table inet nfbox in nftables)"
wait_free in_s 443
in_s "$NET" tcp-whoami 443 3 >/dev/null 2>&1 &
wait_listen in_s 443
printf '  %-58s %s\n' "client $C4 -> server tcp/443: the server saw" \
	"$(in_c "$NET" tcp-ask $S4 443 2 | awk '/^peer/ {print $2}') (the appliance's wan0)"

say "fragments: a 4000-byte UDP datagram crosses MTU 1500 as 3 fragments"
in_s "$NET" udp-recv 9000 2 >"$NS_TMP/udp9000" &
r1=$!
in_s "$NET" udp-recv 9001 2 >"$NS_TMP/udp9001" &
r2=$!
wait_listen in_s 9000
wait_listen in_s 9001
in_c "$NET" udp-send $S4 9000 4000 >/dev/null
in_c "$NET" udp-send $S4 9001 4000 >/dev/null
wait $r1 $r2
printf '  %-58s %s\n' "to udp/9000 (office-iperf allows): server got" "$(grep -c intact "$NS_TMP/udp9000") intact datagram(s)"
printf '  %-58s %s\n' "to udp/9001 (no rule): server got" "$(grep -c '^got' "$NS_TMP/udp9001") datagram(s)"
echo "  (nfbox judged the reassembled datagram: a port rule could see the port)"

say "capture: a mirror of wan0 (policy capture with mirror-from), reloaded in"
{
	cat "$policy"
	printf 'capture:\n  - { name: wan-copy, interface: mon0, mirror-from: wan0, file: %s }\n' "$NS_TMP/wan.pcapng"
} >"$NS_TMP/with-capture.yaml"
nfbox_ctl reload --policy "$NS_TMP/with-capture.yaml" | tail -n 1
nfbox_ctl status | sed -n '/^captures:/,$p'
in_c ping -c2 -i0.2 -W1 $S4 >/dev/null
in_c "$NET" udp-send $S4 9000 4000 >/dev/null
sleep 0.4
echo "  what the appliance forwarded on wan0, as tshark reads the capture file:"
nfbox_ctl reload --policy "$policy" >/dev/null # stops the capture: file complete, pair deleted
tshark -r "$NS_TMP/wan.pcapng" 2>/dev/null | head -n 8 | sed 's/^/    /'

say "capture: jumbo frames with nfbox capture (AF_XDP multi-buffer), MTU 9000"
ip link add j0 netns "$NS_C" mtu 9000 type veth peer name span0 netns "$NS_A" mtu 9000
in_c ip addr add 192.0.2.1/24 dev j0
in_a ip addr add 192.0.2.2/24 dev span0
in_c ip link set j0 up
in_a ip link set span0 up
in_a "$NFBOX" capture --interface span0 --file "$NS_TMP/jumbo.pcapng" --match '{min-length: 1501}' --count 3 \
	--duration 10 >"$NS_TMP/capture.out" 2>&1 &
cap=$!
sleep 1
in_c ping -c3 -i0.2 -W1 -s 8950 192.0.2.2 >/dev/null # captured, so never answered
wait $cap
sed 's/^/  /' "$NS_TMP/capture.out"
tshark -r "$NS_TMP/jumbo.pcapng" 2>/dev/null | sed 's/^/    /'
echo "  (each 8992-byte frame came as 3 AF_XDP buffers and was written whole)"

say "nfbox stats"
nfbox_ctl stats
say "verdict log (rules with log: true)"
head -n 5 "$NS_TMP/verdicts.jsonl"
say "stopping: SIGTERM detaches; namespaces removed"
# A demo that shows a flow other than the policy says fails (make demo, CI).
[ "$unexpected" -eq 0 ] || { echo "demo: $unexpected flows not as the policy says" >&2; exit 1; }
