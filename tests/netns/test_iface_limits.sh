#!/bin/bash
# Interface lists at their limit, with real traffic, on either backend
# (NFBOX_BACKEND): a rule whose in: and out: are negated groups of 63
# wildcards (the limit) keeps every other condition. Regression (issue 25):
# with the nftables backend each wildcard took one of the rule's 12 match
# slots and the last ones overwrote the rest, so a tcp/22 rule from one
# prefix to one server, for new connections, let UDP, SCTP and ICMP from
# anywhere through, and with 12 names the exclusion itself was lost. One
# wildcard past the limit is refused by a reload, and the policy in force
# stays.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }

# policy FILE N EXTRA: a group "many" of N wildcards (w00*, w01*, ...) and
# EXTRA more entries; the rule takes new tcp/22 from the client's /25 to
# the server, from and to interfaces not in the group.
policy() {
	local f=$1 n=$2 extra=$3 list="" i
	for i in $(seq 0 $((n - 1))); do list="$list\"w$(printf %02d "$i")*\", "; done
	cat >"$f" <<YAML
version: 1
interfaces:
  many: [${list}${extra}]
hooks:
  forward: { default: drop }
rules:
  - { name: r1, in: "!many", out: "!many", from: [198.51.100.0/25, "2001:db8:1::/64"], to: [$S4, "$S6"], state: new, service: [tcp/22], action: accept }
YAML
}

# sent: which probes reached the server: for each of tcp-syn/22, udp/22,
# sctp/22, icmp and (from a source outside the rule's prefix) tcp-syn/22,
# over IPv4 and IPv6, "NAME yes|no".
sent() {
	rm -f "$NS_TMP/arrived" "$NS_TMP/arrived.ready" "$NS_TMP/arrived.sent"
	# The sniffer on the server's link: the tag of each probe that arrives,
	# until half a second after the client is done (30 s at most: under
	# make check's load, scapy's start alone once took more than the 5 s
	# this was, and the sniffer ended before the first probe was sent).
	ip netns exec "$NS_S" /usr/bin/python3 - "$NS_TMP/arrived" <<'PY' &
import os, select, socket, sys, time
out = sys.argv[1]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("s0", 0))
seen, done_at, end = set(), None, time.time() + 30
open(out + ".ready", "w").close()
while time.time() < end and (done_at is None or time.time() < done_at + 0.5):
    if done_at is None and os.path.exists(out + ".sent"):
        done_at = time.time()
    if select.select([s], [], [], 0.05)[0]:
        d = s.recv(65535)
        at = d.find(b"NFBL")
        if at >= 0:
            seen.add(d[at + 4:at + 20].split(b"\0")[0].decode())
open(out, "w").write(" ".join(sorted(seen)))
PY
	local pid=$! i
	for i in $(seq 400); do [ -e "$NS_TMP/arrived.ready" ] && break; sleep 0.05; done
	ip netns exec "$NS_C" /usr/bin/python3 - "$S4" "$S6" <<'PY' >/dev/null 2>&1
import sys
from scapy.all import IP, IPv6, TCP, UDP, ICMP, ICMPv6EchoRequest, Raw, send, conf
from scapy.layers.sctp import SCTP, SCTPChunkInit
conf.verb = 0
s4, s6 = sys.argv[1], sys.argv[2]
def tag(name):
    return Raw(b"NFBL" + name.encode().ljust(16, b"\0"))
for v6, dst, ip in ((False, s4, IP), (True, s6, IPv6)):
    fam = "6" if v6 else "4"
    src = "2001:db8:1::2" if v6 else "198.51.100.2"
    mk = lambda s: ip(src=s, dst=dst)
    send(mk(src) / TCP(sport=40001, dport=22, flags="S") / tag("tcp" + fam))
    send(mk(src) / UDP(sport=40002, dport=22) / tag("udp" + fam))
    send(mk(src) / SCTP(sport=40003, dport=22) / SCTPChunkInit(init_tag=7) / tag("sctp" + fam))
    send(mk(src) / (ICMPv6EchoRequest() if v6 else ICMP()) / tag("icmp" + fam))
    if not v6:  # outside the rule's /25, on the client's /24
        send(mk("198.51.100.200") / TCP(sport=40005, dport=22, flags="S") / tag("far" + fam))
PY
	: >"$NS_TMP/arrived.sent"
	wait $pid
	cat "$NS_TMP/arrived" 2>/dev/null || echo "(no sniffer)"
}

policy "$NS_TMP/at.yaml" 63 ""
nfbox_start "$NS_TMP/at.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
got=$(sent)
[ "$got" = "tcp4 tcp6" ] && t_ok at-limit-only-the-rule-passes ||
	t_fail at-limit-only-the-rule-passes "arrived: '$got' (want only tcp4 and tcp6: new tcp/22 from the /25)"
t_check at-limit-counted [ "$(nfbox_count forward r1)" -eq 2 ]

# lan0 under one of the wildcards: the exclusion holds, nothing passes.
policy "$NS_TMP/excluded.yaml" 62 '"lan*"'
if nfbox_ctl reload --policy "$NS_TMP/excluded.yaml" >"$NS_TMP/reload.out" 2>&1; then
	got=$(sent)
	[ -z "$got" ] && t_ok excluded-interface-stays-out || t_fail excluded-interface-stays-out "arrived: '$got' (want nothing: lan0 is under \"lan*\")"
else
	t_fail excluded-interface-stays-out "reload refused: $(cat "$NS_TMP/reload.out")"
fi

# One past the limit: refused at its place, the policy in force stays.
nfbox_ctl reload --policy "$NS_TMP/at.yaml" >/dev/null 2>&1 || t_fail back-to-at "reload refused"
policy "$NS_TMP/past.yaml" 64 ""
if nfbox_ctl reload --policy "$NS_TMP/past.yaml" >"$NS_TMP/reload.out" 2>&1; then
	t_fail past-limit-refused "a reload with 64 wildcards was accepted"
else
	grep -q "past.yaml:7:21: error: in has 64 interface wildcards; at most 63" "$NS_TMP/reload.out" &&
		t_ok past-limit-refused || t_fail past-limit-refused "$(cat "$NS_TMP/reload.out")"
fi
got=$(sent)
[ "$got" = "tcp4 tcp6" ] && t_ok past-limit-keeps-policy || t_fail past-limit-keeps-policy "arrived: '$got'"
t_done
