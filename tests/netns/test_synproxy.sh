#!/bin/bash
# SYN proxy (synproxy: true; both backends): a web rule protected by
# nftables' synproxy (with the BPF backend, after the classifier, which
# judges the SYNs and ACKs in the rule's place). Real connections through it are answered and reach
# the server (IPv4 and IPv6), counted under the rule; a flood of forged
# SYNs (hping3, spoofed from a documentation address that never answers)
# makes no conntrack entry, and real connections still get through during
# it. Positive control: the same flood against the same rule without
# synproxy fills conntrack. nf_conntrack_tcp_loose is 0 in the appliance's
# namespace. Invalid packets to the port that the proxy does not take are
# dropped.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
FORGED=198.51.100.77

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
policy() { # FILE SYNPROXY(true|false)
	cat >"$1" <<YAML
version: 1
interfaces:
  lan: [lan0]
sets:
  servers: [$S4, $S6]
hooks:
  forward: { default: drop }
rules:
  - { name: web, in: lan, to: servers, service: tcp/80, action: accept, synproxy: $2 }
  - { name: web-new, in: lan, to: servers, service: tcp/8080, state: new, action: accept, synproxy: $2 }
YAML
}
policy "$NS_TMP/on.yaml" true
policy "$NS_TMP/off.yaml" false
nfbox_start "$NS_TMP/on.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

SERVE_PID=
serve() { # N: answer N connections on port 80 (either family) in the server, 15 s at most
	in_s timeout 20 "$NET" tcp-whoami 80 15 "$1" >"$NS_TMP/serve" 2>&1 &
	SERVE_PID=$!
}
conntrack_count() { in_a cat /proc/sys/net/netfilter/nf_conntrack_count; }
flood() { # SECONDS: forged SYNs to the web server's port from the client side
	in_c timeout "$1" hping3 -q -S -p 80 --flood -a $FORGED $S4 >/dev/null 2>&1
}

t_check tcp-loose-off [ "$(in_a cat /proc/sys/net/netfilter/nf_conntrack_tcp_loose)" = 0 ]
if bpf_backend; then chain=synproxy_forward; else chain=forward_ip; fi
t_check plan-has-synproxy sh -c "ip netns exec '$NS_A' nft list chain inet nfbox $chain | grep -q 'synproxy mss 1460 wscale 7 sack-perm'"
serve 2
wait_until 5 sh -c "ip netns exec '$NS_S' ss -ltn | grep -q ':80 '"
t_check connect-v4 sh -c "ip netns exec '$NS_C' '$NET' tcp-ask $S4 80 5 | grep -q 'peer $C4 '"
t_check connect-v6 sh -c "ip netns exec '$NS_C' '$NET' tcp-ask $S6 80 5 | grep -q 'peer $C6 '"
t_check counted [ "$(nfbox_count forward web)" -ge 2 ]
# A rule with state: new: the proxy still sees the client's ACK (invalid
# to conntrack until then), which the BPF classifier lets through in the
# rule's place.
in_s timeout 10 "$NET" tcp-whoami 8080 8 1 >/dev/null 2>&1 &
wait_until 5 sh -c "ip netns exec '$NS_S' ss -ltn | grep -q ':8080 '"
t_check connect-state-new sh -c "ip netns exec '$NS_C' '$NET' tcp-ask $S4 8080 5 | grep -q 'peer $C4 '"

# 200 connections one after another, all through: with TCP timestamps in
# the proxy's options about one in fifty stalled after the handshake (the
# server's randomised timestamps echoed wrongly): the regression test.
many() { in_c "$NET" tcp-many $S4 80 "$1" 2; } # N: how many completed
wait $SERVE_PID 2>/dev/null
serve 1000
wait_until 5 sh -c "ip netns exec '$NS_S' ss -ltn | grep -q ':80 '"
t_check two-hundred-in-a-row [ "$(many 200)" = 200 ]

c0=$(conntrack_count)
flood 3 &
fpid=$!
sleep 1
t_check connect-during-flood sh -c "ip netns exec '$NS_C' '$NET' tcp-ask $S4 80 5 | grep -q 'peer $C4 '"
wait $fpid
c1=$(conntrack_count)
t_check flood-fills-no-conntrack [ "$c1" -lt $((c0 + 50)) ]

# The control: the same rule without synproxy, the same flood.
nfbox_ctl reload --policy "$NS_TMP/off.yaml" >/dev/null
c2=$(conntrack_count)
flood 3
c3=$(conntrack_count)
t_check control-without-synproxy-fills [ "$c3" -gt $((c2 + 500)) ]
nfbox_stop
t_done
