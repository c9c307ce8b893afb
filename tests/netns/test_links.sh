#!/bin/bash
# Interfaces follow the links as they come and go, without a reload: an
# interface the policy names that appears later (here: wan0 renamed to
# uplink9) is matched at once, one renamed away is not, and one deleted and
# created again under its name (a new ifindex) stays in its rules. `status`
# lists the policy's interfaces that do not exist. A wildcard ("upl*") takes
# an interface that appears under it later, and is never "missing".
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
policy() { # FILE WAN-IFNAME
	cat >"$1" <<YAML
version: 1
interfaces:
  lan: [lan0]
  up: [$2]
hooks:
  forward: { default: drop }
rules:
  - { name: web-out, in: lan, out: up, service: [tcp/80], action: accept }
YAML
}
policy "$NS_TMP/later.yaml" uplink9
policy "$NS_TMP/wan.yaml" wan0
policy "$NS_TMP/wild.yaml" '"upl*"'

passes() { # wait up to 2 s for the verdict to change
	for _ in 1 2 3 4; do
		listen in_s 80 3
		in_c "$NET" tcp-connect $S4 80 1 >/dev/null 2>&1 && return 0
	done
	return 1
}
# blocked: a connection to a listening tcp/80 times out (dropped: not
# refused, not failed for want of a listener). WHY says what happened else.
blocked() {
	local r
	listen in_s 80 2 || { WHY="no listener on tcp/80"; return 1; }
	r=$(in_c "$NET" tcp-probe $S4 80 1)
	[ "${r%% *}" = timeout ] && return 0
	WHY="tcp/80: ${r:-no answer from net.py}"
	return 1
}
# no_missing: `nfbox status` answers and lists no missing interface.
no_missing() {
	local st
	st=$(nfbox_ctl status 2>&1) || { WHY="nfbox status failed: $st"; return 1; }
	grep -q "^missing:" <<<"$st" || return 0
	WHY=$st
	return 1
}
rename() { in_a ip link set "$1" down && in_a ip link set "$1" name "$2" && in_a ip link set "$2" up; }

nfbox_start "$NS_TMP/later.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
nfbox_ctl status | grep -q "^missing:    uplink9 " && t_ok status-lists-missing || t_fail status-lists-missing "$(nfbox_ctl status)"
nfbox_ctl status --json | json_true '.missing_interfaces == ["uplink9"]' &&
	t_ok status-json-missing || t_fail status-json-missing "$(nfbox_ctl status --json)"
blocked && t_ok missing-matches-nothing || t_fail missing-matches-nothing "before uplink9 existed: $WHY"

rename wan0 uplink9
passes && t_ok appeared-matched-without-reload || t_fail appeared-matched-without-reload "tcp/80 still blocked after uplink9 appeared"
no_missing && t_ok status-clears-missing || t_fail status-clears-missing "$WHY"
grep -q "every interface the policy names is present" "$NS_TMP/nfbox.err" && t_ok change-logged || t_fail change-logged "$(cat "$NS_TMP/nfbox.err")"
nfbox_ctl status | grep -q "reloads:    1 ok" && t_ok no-reload-needed || t_fail no-reload-needed "$(nfbox_ctl status)"

rename uplink9 wan0
blocked && t_ok renamed-away-no-longer-matches || t_fail renamed-away-no-longer-matches "after uplink9 became wan0: $WHY"
nfbox_stop

# Deleted and made again under the same name: a new ifindex.
nfbox_start "$NS_TMP/wan.yaml" || { t_fail start-wan "$(cat "$NS_TMP/nfbox.err")"; t_done; }
passes && t_ok before-recreate || t_fail before-recreate "tcp/80 blocked"
old=$(in_a cat /sys/class/net/wan0/ifindex)
in_a ip link del wan0
ip link add s0 netns "$NS_S" type veth peer name wan0 netns "$NS_A"
in_a ip link set wan0 up
in_s ip link set s0 up
in_a ip addr add $A4W/24 dev wan0
in_s ip addr add $S4/24 dev s0
in_s ip route add default via $A4W
new=$(in_a cat /sys/class/net/wan0/ifindex)
[ "$old" != "$new" ] || t_fail recreate "the new wan0 has the old ifindex $old: nothing to check"
passes && t_ok recreated-keeps-its-rules || t_fail recreated-keeps-its-rules "tcp/80 blocked after wan0 came back as ifindex $new (was $old)"
nfbox_stop

# A wildcard: nothing under it at start, then an interface renamed into it.
nfbox_start "$NS_TMP/wild.yaml" || { t_fail start-wild "$(cat "$NS_TMP/nfbox.err")"; t_done; }
blocked && t_ok wildcard-nothing-under-it || t_fail wildcard-nothing-under-it "with no upl* interface: $WHY"
no_missing && t_ok wildcard-never-missing || t_fail wildcard-never-missing "$WHY"
rename wan0 uplink7
passes && t_ok wildcard-takes-new-interface || t_fail wildcard-takes-new-interface "tcp/80 blocked after uplink7 appeared under upl*"
rename uplink7 wan0
blocked && t_ok wildcard-lets-go || t_fail wildcard-lets-go "after uplink7 became wan0: $WHY"
t_done
