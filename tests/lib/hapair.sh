# An HA pair of nfbox appliances in namespaces, as tests/netns/test_ha.sh
# and the failover benchmark (tests/bench/ha.sh) build it: two switches
# (bridges) and a sync link (a third bridge):
#
#   client -- [brl] --+-- lan0 fw1 wan0 --+-- [brw] -- server
#                     +-- lan0 fw2 wan0 --+
#                         sync0 (fw1, fw2) on [brs]
#
# Source after tests/lib/lib.sh. The caller sets P (the namespaces'
# prefix), SW=$P-sw C=$P-c S=$P-s, TMP (a directory of its own), RELEASE (the
# client the waits poll with), `declare -A PID=()`, and ADVERT (the pair's
# advert:, default 1s); NFBOX runs the nodes.

# ---- time ----
now_us() { echo $((${EPOCHREALTIME/[.,]/})); }

mkns() {
	ip netns add "$1" || return 1
	ip -n "$1" link set lo up
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
}
port() { # NS IFNAME SWITCH-PORT BRIDGE
	ip link add "$2" netns "$1" type veth peer name "$3" netns $SW || return 1
	ip -n $SW link set "$3" master "$4" up
	ip -n "$1" link set "$2" up
}
# The switches, the client and the server.
topology() {
	mkns $SW && mkns $C && mkns $S || return 1
	for b in brl brw brs; do
		ip -n $SW link add $b type bridge && ip -n $SW link set $b up || return 1
	done
	port $C c0 pc brl && port $S s0 ps brw || return 1
	ip -n $C addr add 192.0.2.10/24 dev c0
	ip -n $C route add default via 192.0.2.1
	ip -n $S addr add 198.51.100.10/24 dev s0
	ip -n $S route add default via 198.51.100.1
}
# Node N (1 or 2), its own addresses in the virtual ones' prefixes (so
# that the kernel's masquerade would pick the node's own: nfbox makes it
# take the virtual address, which the server must see).
node() { # N
	local ns=$P-f$1
	mkns $ns || return 1
	port $ns lan0 p$1l brl && port $ns wan0 p$1w brw && port $ns sync0 p$1s brs || return 1
	ip -n $ns addr add 192.0.2.$((1 + $1))/24 dev lan0
	ip -n $ns addr add 198.51.100.$((1 + $1))/24 dev wan0
	ip -n $ns addr add 203.0.113.$1/30 dev sync0
	ip netns exec $ns sysctl -qw net.ipv4.ip_forward=1
}
# With the nftables backend the two nodes' files differ only in priority
# (peer: both nodes' sync addresses); with bpf each names the other's.
policy() { # N BACKEND NAT
	local prio=$((200 - 50 * $1)) peer=203.0.113.$((3 - $1))
	[ "$2" = nftables ] && peer="[203.0.113.1, 203.0.113.2]"
	cat <<YAML
version: 1
interfaces:
  lan: [lan0]
  wan: [wan0]
hooks:
  input: { default: drop }
  forward: { default: drop }
  output: { default: drop }
options: { backend: $2 }
rules:
  - { name: lan-out, in: lan, out: wan, action: accept }
ha:
  priority: $prio
  preempt-delay: 1
  advert: ${ADVERT:-1s}
  sync: { interface: sync0, peer: $peer }
  virtual:
    - { interface: lan0, address: 192.0.2.1/24, id: 51 }
    - { interface: lan0, address: "2001:db8:1::1/64", id: 51 }
    - { interface: wan0, address: 198.51.100.1/24, id: 52 }
YAML
	[ "$3" = masq ] && printf 'nat:\n  - masquerade: { out: wan }\n'
}
ready() { grep -q '^ready$' "$TMP/n$1/out" || ! kill -0 "${PID[$1]}" 2>/dev/null; }
start() { # N BACKEND NAT
	local d=$TMP/n$1
	mkdir -p "$d"
	policy "$1" "$2" "$3" >"$d/policy.yaml"
	: >"$d/out"
	ip netns exec $P-f$1 "$NFBOX" run --policy "$d/policy.yaml" --socket "$d/nfbox.sock" --state-dir "$d/state" \
		--no-pin >>"$d/out" 2>>"$d/err" &
	PID[$1]=$!
	wait_until 20 ready "$1"
	grep -q '^ready$' "$d/out"
}
ctl() { local n=$1; shift; cli_run "$NFBOX" "$1" --socket "$TMP/n$n/nfbox.sock" "${@:2}"; }
# For the waits: the groups of a regular expression on node N's status
# JSON (compact, keys in a fixed order), read with the release client and
# bash alone: hq N REGEX
hq() {
	local j
	j=$("$RELEASE" status --json --socket "$TMP/n$1/nfbox.sock" 2>/dev/null) && [[ $j =~ $2 ]] && echo "${BASH_REMATCH[@]:1}"
}
role_is() { [ "$(hq "$1" '"ha":\{"role":"([a-z]+)"')" = "$2" ]; } # N ROLE
wait_role() { wait_until "$3" role_is "$1" "$2"; } # N ROLE SECONDS
from_peer_at_least() { local n; n=$(hq "$1" '"from_peer":([0-9]+)') && [ "$n" -ge "$2" ]; } # N COUNT
stop_node() { # N...: a clean stop, of both at once (HURRY: at once)
	local n
	for n; do [ -n "${PID[$n]:-}" ] && kill -TERM "${PID[$n]}" 2>/dev/null; done
	for n; do
		[ -n "${PID[$n]:-}" ] || continue
		[ -n "${HURRY:-}" ] || wait_until 10 eval "! kill -0 ${PID[$n]} 2>/dev/null"
		kill -9 "${PID[$n]}" 2>/dev/null
		wait "${PID[$n]}" 2>/dev/null
		PID[$n]=
	done
}
teardown() {
	stop_node 1 2
	for ns in $P-f1 $P-f2 $SW $C $S; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$TMP"
}
# Connections in node N's conntrackd external cache (what it would commit
# on becoming master), asked of conntrackd itself: nfbox's status has it
# only every 5 s.
external() {
	ip netns exec $P-f$1 conntrackd -C "$TMP/n$1/nfbox.ha/conntrackd.conf" -s 2>/dev/null |
		awk '/^cache external/ { e = 1 } e && /current active connections/ { print $NF; exit }'
}
external_at_least() { local n; n=$(external "$1") && [ "${n:-0}" -ge "$2" ]; } # N COUNT
