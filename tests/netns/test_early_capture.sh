#!/bin/bash
# A capture beside the early drop on one interface (BPF backend). Where
# libxdp's dispatcher cannot run (this kernel refuses its extension
# programs), the capture's program is chained after the early program by a
# tail call. Checked on lan0:
# - a banned client's datagrams are dropped at XDP (the veth's xdp_drops)
#   and not captured; an allowed client's are captured;
# - whichever came first: the early drop at start (the capture chains
#   after it), or a capture already running when a reload brings the early
#   rule (the early program takes the interface, the capture follows it);
# - a reload without the early rule: the capture goes on without a gap (the
#   early program stays on lan0 for it, dropping nothing), and nothing is
#   dropped at XDP;
# - at the stop nothing is left on lan0.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
C4B=198.51.100.3 # the banned client

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
in_c ip addr add $C4B/24 dev c0
policy() { # FILE EARLY(true|false|none)
	{
		cat <<YAML
version: 1
interfaces:
  lan: [lan0]
sets:
  servers: [$S4]
hooks:
  input: { default: accept }
  forward: { default: drop }
rules:
YAML
		[ "$2" != none ] && echo "  - { name: bad, hook: [input, forward], in: lan, from: [$C4B], action: drop, early: $2 }"
		cat <<YAML
  - { name: udp, hook: forward, in: lan, to: servers, proto: udp, action: accept }
capture:
  - { name: lan, interface: lan0, match: { proto: udp }, file: $NS_TMP/lan.pcapng }
YAML
	} >"$1"
}
policy "$NS_TMP/early.yaml" true
policy "$NS_TMP/none.yaml" none

xdp_drops() { in_a ethtool -S lan0 2>/dev/null | awk '/xdp_drops/ { s += $2 } END { print s + 0 }'; }
captured() {
	nfbox_ctl stats --json | jq -r 'first(((if has("captures") then .captures else [] end)[] | select(.name == "lan") | .packets), -1)'
}
send() { in_c "$NET" udp-blast $S4 9999 20 "$1" >/dev/null 2>&1; } # SRC: 20 datagrams
# round NAME DROPS(yes|no): the banned client's datagrams dropped at XDP
# (or not), the allowed client's captured either way.
round() {
	local d0 c0
	d0=$(xdp_drops)
	c0=$(captured)
	send $C4B
	send $C4
	sleep 0.3
	if [ "$2" = yes ]; then
		t_check "$1-banned-dropped-at-xdp" [ $(($(xdp_drops) - d0)) -ge 20 ]
	else
		t_check "$1-nothing-dropped-at-xdp" [ $(($(xdp_drops) - d0)) -eq 0 ]
	fi
	t_check "$1-allowed-captured" [ $(($(captured) - c0)) -ge 20 ]
	if [ "$2" = yes ]; then
		t_check "$1-banned-not-captured" [ $(($(captured) - c0)) -lt 40 ]
	fi
}

# Both at start: the early drop first, the capture chained after it.
nfbox_start "$NS_TMP/early.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check capture-running sh -c "'$NFBOX' status --socket '$NFBOX_SOCK' | grep -q 'lan0'"
t_check chained-said grep -q "runs after nfbox's early drop there" "$NS_TMP/nfbox.err"
round start yes

# Without the early rule: the capture goes on, nothing dropped at XDP.
cp "$NS_TMP/none.yaml" "$NS_TMP/p.yaml"
nfbox_ctl reload --policy "$NS_TMP/p.yaml" >/dev/null
round without-early no # at once: the capture loses nothing
sleep 1.2
t_check without-early-capture-not-moved sh -c "! grep -q 'the early drop left' '$NS_TMP/nfbox.err'"
nfbox_stop

# A capture first, then a reload brings the early rule: the early program
# takes lan0 and the capture follows it.
nfbox_start "$NS_TMP/none.yaml" || { t_fail start-2 "$(cat "$NS_TMP/nfbox.err")"; t_done; }
round capture-alone no
nfbox_ctl reload --policy "$NS_TMP/early.yaml" >/dev/null
t_check early-took-interface grep -q "the capture there runs after the early drop" "$NS_TMP/nfbox.err"
sleep 1.2
round early-after-capture yes
nfbox_stop
t_check nothing-left-on-lan0 sh -c "! ip -n '$NS_A' link show lan0 | grep -q xdp"
t_done
