# What the upgrade tests share (tests/netns/test_upgrade.sh with this build
# alone, tests/distro/test_upgrade.sh with packages): the policy enforced
# across an upgrade, the traffic through it and what is read of the daemon.
# Source after tests/lib/netns.sh; the test defines up_nfbox ARGS... (the
# nfbox command that reaches the daemon: status, stats, set) and $UP_TMP (a
# directory for the traffic's counts).

# The policy: a dynamic-set ban, dropped at XDP too (early); a rule hit
# once before an upgrade (its last hit must stay); udp/7001 and 7002 from
# the LAN accepted, the rest forwarded dropped.
up_policy() {
	cat <<'YAML'
version: 1
interfaces:
  lan: [lan0]
sets:
  banned: { dynamic: true }
hooks:
  input: { default: accept }
  forward: { default: drop }
  output: { default: accept }
rules:
  - { name: banned, hook: [input, forward], in: lan, from: banned, action: drop, early: true }
  - { name: once, hook: forward, service: udp/7009, action: drop }
  - { name: lan-udp, hook: forward, in: lan, service: [udp/7001, udp/7002], action: accept }
YAML
}

# A field of `nfbox status --json` ("" for null; true and false as such).
up_status() {
	up_nfbox status --json 2>/dev/null | jq -r --arg f "$1" '.[$f] | if . == null then "" else . end' 2>/dev/null
}
# up_rule RULE packets|last_hit: of a forward rule's row (0 for none).
up_rule() {
	up_nfbox stats --json 2>/dev/null |
		jq -r --arg r "$1" --arg k "$2" '.rules[] | select(.hook == "forward" and .rule == $r) | .[$k] | if . == null then 0 else . end' 2>/dev/null
}
# The client's IPv4 address is in the set.
up_listed() { up_nfbox set list banned 2>/dev/null | grep -q "^$C4[[:space:]]"; }
up_ban() { up_nfbox set add banned $C4 >/dev/null; }

# up_mapped SPORT: a datagram from the IPv4-mapped ::ffff:192.0.2.2
# forwarded to udp/7002 (accepted but for the mapped source): "arrived" or
# "dropped" (this tree's classifier drops it as malformed).
up_mapped() {
	ip netns exec "$NS_S" timeout 10 "$NET" watch "$1" 1 2 >"$UP_TMP/watch" 2>&1 &
	local w=$!
	wait_until 5 grep -q '^ready' "$UP_TMP/watch"
	in_c "$NET" forge --from ::ffff:192.0.2.2 $S6 7002 "$1" udp >/dev/null
	wait $w
	grep -q "^seen udp $1 " "$UP_TMP/watch" && echo arrived || echo dropped
}

# Traffic: the banned client's IPv4 datagrams to udp/7001 (accepted but for
# the ban; IPv4, whose neighbours ARP finds, as no ban drops ARP), its IPv6
# ones to udp/7002 (accepted: the control that traffic flows) and udp/7003
# (dropped by the default), every millisecond from up_traffic_start until
# up_no_gap, which says whether none of the banned or denied ones and most
# of the others reached the server.
UP_COUNT= UP_TICKS=
up_traffic_start() {
	ip netns exec "$NS_S" "$NET" udp-count 3600 7001 7002 7003 >"$UP_TMP/count" 2>&1 &
	UP_COUNT=$!
	wait_until 5 grep -q listening "$UP_TMP/count"
	ip netns exec "$NS_C" "$NET" udp-ticks $S4 3600 7001 >/dev/null 2>&1 &
	UP_TICKS=$!
	ip netns exec "$NS_C" "$NET" udp-ticks $S6 3600 7002 7003 >/dev/null 2>&1 &
	UP_TICKS="$UP_TICKS $!"
}
up_traffic_stop() {
	[ -n "$UP_COUNT" ] || return 0
	kill -TERM $UP_TICKS 2>/dev/null
	wait $UP_TICKS 2>/dev/null
	sleep 0.3 # the last datagrams on their way
	kill -TERM "$UP_COUNT" 2>/dev/null
	wait "$UP_COUNT" 2>/dev/null
	UP_COUNT= UP_TICKS=
}
up_no_gap() {
	local b d a
	up_traffic_stop
	b=$(sed -n 's/^got 7001 //p' "$UP_TMP/count")
	d=$(sed -n 's/^got 7003 //p' "$UP_TMP/count")
	a=$(sed -n 's/^got 7002 //p' "$UP_TMP/count")
	if [ "${b:-x}" = 0 ] && [ "${d:-x}" = 0 ] && [ "${a:-0}" -gt 1000 ]; then
		t_ok "$1"
	else
		t_fail "$1" "arrived: ${b:-?} banned, ${d:-?} denied, ${a:-?} accepted (want 0, 0 and most)"
	fi
}
