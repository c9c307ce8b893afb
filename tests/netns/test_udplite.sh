#!/bin/bash
# UDP-Lite ports (udplite/PORT), with real UDP-Lite traffic through the
# appliance, IPv4 and IPv6: an allow-list lets one UDP-Lite port through and
# no other, a UDP rule on the same port does not match UDP-Lite (nor a
# UDP-Lite rule UDP); a deny-list drops one UDP-Lite port and passes the
# rest. Runs with either backend (NFBOX_BACKEND).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/allow.yaml" <<YAML
version: 1
hooks:
  forward: { default: drop }
rules:
  - { name: lite, service: udplite/5000, action: accept }
  - { name: plain, service: udp/5001, action: accept }
YAML
cat >"$NS_TMP/deny.yaml" <<YAML
version: 1
hooks:
  forward: { default: accept }
rules:
  - { name: no-lite, proto: udplite, service: "udplite/5001-5002", action: drop }
YAML

# judged: the packets the forward hook's rules and default have counted
judged() {
	nfbox_ctl stats --json | jq '[.rules[] | select(.hook == "forward") | .packets] | add // 0'
}
judged_at_least() { [ "$(judged)" -ge "$1" ]; }
# sent PROTO PORT...: 5 datagrams of PROTO (udp, udplite) to each port over
# IPv4 and IPv6; prints what the server counted, "PORT N" per port, once
# nfbox has judged them all (what it let through is then on its way: the
# counter reads what is queued and 0.1 s more after SIGTERM).
sent() {
	local proto=$1 out j0
	shift
	j0=$(judged)
	: >"$NS_TMP/count" # here, not in the child: no "listening" of the last run's
	ip netns exec "$NS_S" "$NET" $proto-count 5 "$@" >"$NS_TMP/count" 2>&1 &
	local cpid=$!
	if ! wait_until 5 grep -q listening "$NS_TMP/count"; then
		echo "no listener"
		kill -TERM $cpid 2>/dev/null
		wait $cpid 2>/dev/null
		return
	fi
	for p in "$@"; do
		in_c "$NET" $proto-blast $S4 $p 5 >/dev/null
		in_c "$NET" $proto-blast $S6 $p 5 >/dev/null
	done
	wait_until 5 judged_at_least $((${j0:-0} + 10 * $#)) || echo -n "judged $(($(judged) - ${j0:-0})) of $((10 * $#)): "
	kill -TERM $cpid 2>/dev/null
	wait $cpid 2>/dev/null
	awk '$1 == "got" { printf "%s %s ", $2, $3 }' "$NS_TMP/count"
}

nfbox_start "$NS_TMP/allow.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
got=$(sent udplite 5000 5001 5002)
[ "$got" = "5000 10 5001 0 5002 0 " ] && t_ok allow-udplite-port || t_fail allow-udplite-port "server got: $got"
got=$(sent udp 5000 5001)
[ "$got" = "5000 0 5001 10 " ] && t_ok udp-is-not-udplite || t_fail udp-is-not-udplite "server got: $got"
t_check counted [ "$(nfbox_count forward lite)" -eq 10 ]
nfbox_stop

nfbox_start "$NS_TMP/deny.yaml" || { t_fail start-deny "$(cat "$NS_TMP/nfbox.err")"; t_done; }
got=$(sent udplite 5000 5001 5002 5003)
[ "$got" = "5000 10 5001 0 5002 0 5003 10 " ] && t_ok deny-udplite-ports || t_fail deny-udplite-ports "server got: $got"
got=$(sent udp 5001)
[ "$got" = "5001 10 " ] && t_ok deny-leaves-udp || t_fail deny-leaves-udp "server got: $got"
t_check counted-deny [ "$(nfbox_count forward no-lite)" -eq 20 ]
t_done
