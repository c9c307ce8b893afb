#!/bin/bash
# Real traffic through the appliance namespace: per-rule accept and drop,
# default verdicts, interface groups, conntrack state, IPv4 and IPv6,
# counters and verdict logging.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
  wan: [wan0]
sets:
  clients: [198.51.100.0/24, "2001:db8:1::/64"]
  server: [203.0.113.10, "2001:db8:2::10"]
services:
  web: [tcp/80]
  blocked: [tcp/81]
hooks:
  forward: { default: drop }
  input: { default: accept }
options:
  established: accept
rules:
  - { name: web-blocked, in: lan, service: blocked, action: drop, log: true }
  - { name: lan-web, in: lan, out: wan, from: clients, to: server, service: web, action: accept }
  - { name: lan-tcp-82, in: lan, service: [tcp/82], action: accept }
  - { name: wan-82, in: wan, service: [tcp/82], action: accept }
  - { name: ping4, in: lan, proto: icmp, icmp-type: echo-request, action: accept }
  - { name: ping6, in: lan, proto: icmpv6, icmp-type: echo-request, action: accept }
  - { name: no-ping-me, hook: input, proto: icmp, icmp-type: echo-request, action: drop }
  - { name: not-lan-84, in: "!lan", service: tcp/84, action: accept }
  - { name: not-clients-85, from: "!clients", service: tcp/85, action: accept }
YAML
if ! nfbox_start "$NS_TMP/policy.yaml" --log "$NS_TMP/events.jsonl"; then
	t_fail start "nfbox run failed: $(cat "$NS_TMP/nfbox.err")"
	t_done
fi

connects() { in_c "$NET" tcp-connect "$1" "$2" "${3:-2}" >/dev/null 2>&1; }
# refused_case NAME WHAT LISTENER-NSFUNC PORT CONNECT-COMMAND...: a case that a
# connection fails although a listener is up (without one it fails anyway).
refused_case() {
	local name=$1 what=$2
	if ! listen "$3" "$4" 4; then
		t_fail "$name" "no listener on tcp/$4: nothing to refuse"
	elif "${@:5}" >/dev/null 2>&1; then
		t_fail "$name" "$what"
	else
		t_ok "$name"
	fi
}

listen in_s 80 8
t_check accept-v4-rule connects $S4 80
listen in_s 80 8
t_check accept-v6-rule connects $S6 80
refused_case default-drop-forward "tcp/8080 passed without a rule" in_s 8080 connects $S4 8080 1
refused_case drop-rule "tcp/81 passed the drop rule" in_s 81 connects $S4 81 1
# Interface groups: tcp/82 is accepted when it comes in on lan (lan-tcp-82)
# and on wan (wan-82); from the server, only wan-82 can match.
listen in_s 82 6
t_check iface-group-lan connects $S4 82
listen in_c 82 6
t_check iface-group-wan in_s "$NET" tcp-connect $C4 82 2
# Negation: tcp/84 is accepted from any interface but lan (the server's
# side), tcp/85 from any address but the clients'.
listen in_c 84 4
t_check negated-iface-takes-others in_s "$NET" tcp-connect $C4 84 2
refused_case negated-iface-skips-listed "tcp/84 from lan passed \"!lan\"" in_s 84 connects $S4 84 1
listen in_c 85 4
t_check negated-set-takes-others in_s "$NET" tcp-connect $C6 85 2
refused_case negated-set-skips-listed "tcp/85 from a client passed \"!clients\"" in_s 85 connects $S6 85 1
# Conntrack: replies of the allowed connection passed above (the connect
# test needs the echo); an unsolicited connection from the server to the
# client's port 80 matches no rule (lan-web is for in: lan only).
refused_case ct-unsolicited-dropped "the server opened a connection to the client" in_c 80 in_s "$NET" tcp-connect $C4 80 1
t_check icmp-type-v4 in_c ping -c1 -W2 $S4
t_check icmp-type-v6 in_c ping -6 -c1 -W2 $S6
# Echo replies are not echo requests: the server cannot ping the client.
if in_s ping -c1 -W1 $C4 >/dev/null 2>&1; then t_fail icmp-type-mismatch "server ping passed"; else t_ok icmp-type-mismatch; fi
# Input hook: the appliance refuses ping to itself but accepts the rest.
if in_c ping -c1 -W1 $A4L >/dev/null 2>&1; then t_fail input-drop "ping to the appliance passed"; else t_ok input-drop; fi
t_check input-default-accept in_c ping -6 -c1 -W2 $A6L

# Counters: rules that passed traffic counted it.
n=$(nfbox_count forward lan-web)
if [ "$n" -ge 2 ]; then t_ok counter-rule; else t_fail counter-rule "lan-web counted $n packets"; fi
n=$(nfbox_count forward web-blocked)
if [ "$n" -ge 1 ]; then t_ok counter-drop; else t_fail counter-drop "web-blocked counted $n packets"; fi
n=$(nfbox_count forward "(default)")
if [ "$n" -ge 1 ]; then t_ok counter-default; else t_fail counter-default "forward default counted $n"; fi
if nfbox_ctl stats --json | json_true '.established.packets > 0'; then
	t_ok counter-established
else
	t_fail counter-established "no established packets counted"
fi
# Verdict log: the drop rule has log: true.
if wait_until 5 grep -q '"rule":"web-blocked","action":"drop","proto":6' "$NS_TMP/events.jsonl" &&
	grep '"rule":"web-blocked"' "$NS_TMP/events.jsonl" | head -1 | json_true '.dport == 81 and .src == "198.51.100.2" and .["in"] == "lan0"'; then
	t_ok verdict-log
else
	t_fail verdict-log "no event for web-blocked: $(head -c 400 "$NS_TMP/events.jsonl")"
fi
# `nfbox log` follows events: a SYN to tcp/81 (dropped, logged) until the
# follower shows one (nothing tells when it has subscribed but an event).
nfbox_ctl log >"$NS_TMP/follow.jsonl" 2>&1 &
logpid=$!
blocked_syn_followed() {
	connects $S4 81 0.2
	grep -q '"rule":"web-blocked"' "$NS_TMP/follow.jsonl"
}
if wait_until 5 blocked_syn_followed; then t_ok log-follow; else t_fail log-follow "nfbox log printed: $(head -c 300 "$NS_TMP/follow.jsonl")"; fi
kill $logpid 2>/dev/null
wait $logpid 2>/dev/null
# Status names the links and the defrag flag.
st=$(nfbox_ctl status)
if bpf_backend && echo "$st" | grep -q "forward  ipv4  link" && echo "$st" | grep -q "forward  ipv6  link" && echo "$st" | grep -q defrag; then
	t_ok status-links
elif ! bpf_backend && echo "$st" | grep -q "backend:    nftables (table inet nfbox" && echo "$st" | grep -q "links: *none"; then
	t_ok status-links
else
	t_fail status-links "$st"
fi
# SIGTERM detaches: traffic that was dropped now passes, pins and table are gone.
nfbox_stop
listen in_s 8080 4
t_check sigterm-detaches connects $S4 8080
if ! tables=$(in_a nft list tables 2>&1); then
	t_fail sigterm-cleans "nft list tables: $tables"
elif [ -e "$NFBOX_PINS/prog" ] || grep -q '^table inet nfbox$' <<<"$tables"; then
	t_fail sigterm-cleans "pins or table inet nfbox left behind"
else
	t_ok sigterm-cleans
fi
t_done
