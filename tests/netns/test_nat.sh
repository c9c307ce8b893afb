#!/bin/bash
# NAT through table inet nfbox, seen by real clients and servers: the
# address each end sees (masquerade, of IPv4 only unless it says, snat to a
# range and to a prefix, forward-port from outside, hairpin from inside,
# redirect to a local port, IPv4 and IPv6), the forms of issue 42 (no-nat,
# snat limited by from: and destination:, one-to-one of an address and of a
# prefix both ways, nptv6 both ways, forward-port to one of the WAN's
# addresses, a range of ports onto a range, masquerade of both families),
# a reload that changes NAT (established connections keep
# their mapping, new ones take the new rule), the table owned by the
# daemon (another nfbox in the namespace is refused and the table in force
# stays), surviving SIGKILL, adopted by the next daemon, removed by a
# clean stop. Runs with either backend (NFBOX_BACKEND).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
# A routed pool for snat: the server reaches it through the appliance.
ip -n "$NS_S" route add 192.0.2.0/24 via $A4W

policy() { # FILE NAT-ENTRIES...
	local f=$1
	shift
	cat >"$f" <<YAML
version: 1
interfaces:
  lan: [lan0]
  wan: [wan0]
hooks:
  forward: { default: drop }
options:
  established: accept
rules:
  - { name: out, in: lan, out: wan, action: accept }
  - { name: to-inside, in: wan, out: lan, to: [198.51.100.2, "2001:db8:1::2"], service: [tcp/80, udp/53], action: accept }
  - { name: hairpin, in: lan, out: lan, to: [198.51.100.2, "2001:db8:1::2"], service: [tcp/80], action: accept }
nat:
YAML
	for e in "$@"; do echo "  - $e" >>"$f"; done
}
MASQ='masquerade: { out: wan }'
FWD4='forward-port: { in: wan, service: [tcp/8080, udp/5353], to: "198.51.100.2:80" }'
FWD4U='forward-port: { in: wan, service: [udp/5353], to: "198.51.100.2:53" }'
FWD6='forward-port: { in: wan, service: [tcp/8443], to: "[2001:db8:1::2]:80" }'
REDIR='redirect: { in: lan, service: [tcp/3128], to: 8888 }'
policy "$NS_TMP/a.yaml" "$MASQ" "$FWD4U" "forward-port: { in: wan, service: [tcp/8080], to: \"198.51.100.2:80\" }" "$FWD6" "$REDIR"
policy "$NS_TMP/b.yaml" 'snat: { out: wan, to: 192.0.2.100-192.0.2.101 }' "$FWD6"
policy "$NS_TMP/c.yaml" 'snat: { out: wan, to: 192.0.2.64/30 }'

# who SERVERNS PORT CLIENTNS HOST [PORT]: the source the server saw.
who() {
	wait_free "$1" "$2"
	$1 "$NET" tcp-whoami "$2" 5 >/dev/null 2>&1 &
	wait_listen "$1" "$2"
	$3 "$NET" tcp-ask "$4" "${5:-$2}" 3 2>/dev/null | awk '/^peer/ { print $2 }'
}
udp_who() { # SERVERNS PORT CLIENTNS HOST [PORT]
	$1 "$NET" udp-whoami "$2" 5 >/dev/null 2>&1 &
	wait_listen "$1" "$2"
	$3 "$NET" udp-probe "$4" "${5:-$2}" 3 | awk '/^answer/ { print $3 }'
}
expect() { # NAME GOT WANT-REGEX
	if [[ "$2" =~ ^($3)$ ]]; then t_ok "$1"; else t_fail "$1" "saw '${2:-nothing}', expected $3"; fi
}
# has_table: `nft list tables` answers and lists table inet nfbox (status 2
# if nft cannot say, so that `! has_table` does not pass then).
has_table() {
	local t
	t=$(in_a nft list tables 2>&1) || { echo "nft list tables: $t" >&2; return 2; }
	grep -qx 'table inet nfbox' <<<"$t"
}
no_table() { has_table; [ $? -eq 1 ]; }
# owned NAME: table inet nfbox is there and another program cannot change it
owned() {
	local out
	if ! has_table; then
		t_fail "$1" "no table inet nfbox: nothing to own"
	elif out=$(in_a nft add chain inet nfbox intruder 2>&1); then
		t_fail "$1" "another program changed table inet nfbox"
	else
		t_ok "$1"
	fi
}
established() { [ -n "$(in_c ss -Htn state established "( dport = :$1 )")" ]; } # PORT

nfbox_start "$NS_TMP/a.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# ---- masquerade ----
expect masquerade-v4 "$(who in_s 80 in_c $S4)" "$A4W"
# IPv6 is routed: a masquerade without family: leaves it as it is.
expect masquerade-v6-untranslated "$(who in_s 80 in_c $S6)" "$C6"
# ---- forward-port: outside to the inside server, the client's own address kept ----
expect forward-port-v4 "$(who in_c 80 in_s $A4W 8080)" "$S4"
expect forward-port-v6 "$(who in_c 80 in_s $A6W 8443)" "$S6"
expect forward-port-udp "$(udp_who in_c 53 in_s $A4W 5353)" "$S4"
# An untranslated port stays closed (the forward default drops).
r=$(in_s "$NET" tcp-probe $A4W 8081 1)
[[ "$r" == timeout* || "$r" == refused* ]] && t_ok forward-port-only-listed || t_fail forward-port-only-listed "$r"
# ---- hairpin: an inside client reaches the forwarded port on the outside address ----
expect hairpin-v4 "$(who in_c 80 in_c $A4W 8080)" "$A4L"
expect hairpin-v6 "$(who in_c 80 in_c $A6W 8443)" "$A6L"
# ... on the addresses of its in: interfaces only: the appliance's own
# inside address on that port is the appliance itself (an administrator's
# SSH to the LAN address must not land on the forwarded server).
expect hairpin-not-inside-address "$(who in_a 8080 in_c $A4L 8080)" "$C4"
expect hairpin-not-inside-address-v6 "$(who in_a 8443 in_c $A6L 8443)" "$C6"
# ... followed as addresses come and go on the in: interface.
hairpin_has() { in_a nft list set inet nfbox "$1" 2>/dev/null | grep -q "$2"; } # SET ADDRESS
in_a ip addr add 203.0.113.5/24 dev wan0
wait_until 5 hairpin_has h_wan_4 203.0.113.5 && t_ok hairpin-follows-new-address ||
	t_fail hairpin-follows-new-address "$(in_a nft list set inet nfbox h_wan_4 2>&1)"
expect hairpin-new-address "$(who in_c 80 in_c 203.0.113.5 8080)" "$A4L"
in_a ip addr del 203.0.113.5/24 dev wan0
wait_until 5 eval '! hairpin_has h_wan_4 203.0.113.5' && t_ok hairpin-forgets-old-address ||
	t_fail hairpin-forgets-old-address "$(in_a nft list set inet nfbox h_wan_4 2>&1)"
# ---- redirect: to a port of the appliance itself ----
expect redirect "$(who in_a 8888 in_c $S4 3128)" "$C4"

# ---- a reload that changes NAT ----
in_s "$NET" tcp-listen 5001 30 >/dev/null 2>&1 &
wait_listen in_s 5001
in_c "$NET" tcp-stream $S4 5001 4 >"$NS_TMP/stream" 2>&1 &
spid=$!
# The reload comes once the connection (and its mapping) is there.
wait_until 5 established 5001 || t_fail stream-connects "the stream did not connect within 5 s"
out=$(nfbox_ctl reload --policy "$NS_TMP/b.yaml" 2>&1) && t_ok reload-to-snat-range || t_fail reload-to-snat-range "$out"
wait $spid
src=$?
if [ "$src" -eq 0 ] && stream_ok "$NS_TMP/stream"; then
	t_ok established-keeps-mapping
else
	t_fail established-keeps-mapping "$(cat "$NS_TMP/stream")"
fi
expect snat-range-new-connections "$(who in_s 80 in_c $S4)" "192\.0\.2\.10[01]"
expect forward-port-removed "$(in_s "$NET" tcp-probe $A4W 8080 1 | cut -d' ' -f1)" "timeout|refused"
out=$(nfbox_ctl reload --policy "$NS_TMP/c.yaml" 2>&1) && t_ok reload-to-snat-prefix || t_fail reload-to-snat-prefix "$out"
expect snat-prefix "$(who in_s 80 in_c $S4)" "192\.0\.2\.6[4-7]"

# ---- the table is nfbox's own ----
before=$(in_a nft list table inet nfbox 2>&1) || before=
owned table-owned
# A second nfbox in the same namespace is refused by the kernel and the
# table in force stays as it was.
out=$(in_a timeout 20 "$NFBOX" run --policy "$NS_TMP/a.yaml" --state-dir "$NS_TMP/state2" --socket "$NS_TMP/second.sock" --no-pin 2>&1)
rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "another program owns it"; then t_ok second-daemon-refused; else
	t_fail second-daemon-refused "rc $rc: $out"
fi
[ -n "$before" ] && [ "$(in_a nft list table inet nfbox 2>&1)" = "$before" ] && t_ok refused-batch-leaves-table ||
	t_fail refused-batch-leaves-table "the table changed (or could not be listed before)"
expect still-translating "$(who in_s 80 in_c $S4)" "192\.0\.2\.6[4-7]"

# ---- SIGKILL: NAT goes on; the next daemon takes the table over ----
kill -9 "$NFBOX_PID"
wait "$NFBOX_PID" 2>/dev/null
NFBOX_PID=
expect nat-survives-sigkill "$(who in_s 80 in_c $S4)" "192\.0\.2\.6[4-7]"
nfbox_start "$NS_TMP/a.yaml" && t_ok restart-adopts-table || t_fail restart-adopts-table "$(cat "$NS_TMP/nfbox.err")"
expect masquerade-after-restart "$(who in_s 80 in_c $S4)" "$A4W"
owned owned-again

# ---- a clean stop removes the table ----
nfbox_stop
if no_table; then t_ok stop-removes-table; else t_fail stop-removes-table "table inet nfbox is still there (or nft cannot say)"; fi

# ---- the forms of issue 42 ----
# Positive controls (the test build's NFBOX_TEST_PLANT, in nft/build.c):
# nat-no-nat-ignored, nat-limits-ignored, nat-binat-outbound-only,
# nat-portmap-flat, nat-masq-family-ignored each make cases below fail.
# who_from SERVERNS PORT CLIENTNS HOST SRC: the source the server saw of a
# connection from SRC.
who_from() {
	wait_free "$1" "$2"
	$1 "$NET" tcp-whoami "$2" 5 >/dev/null 2>&1 &
	wait_listen "$1" "$2"
	$3 "$NET" tcp-ask "$4" "$2" 3 "$5" 2>/dev/null | awk '/^peer/ { print $2 }'
}
for a in 198.51.100.3 198.51.100.4 198.51.100.17; do in_c ip addr add $a/24 dev c0; done
for a in 203.0.113.11 203.0.113.12; do in_s ip addr add $a/24 dev s0; done
in_a ip addr add 203.0.113.2/24 dev wan0
cat >"$NS_TMP/d.yaml" <<'YAML'
version: 1
interfaces:
  lan: [lan0]
  wan: [wan0]
hooks:
  forward: { default: drop }
rules:
  - { name: out, in: lan, out: wan, action: accept }
  - { name: in, in: wan, out: lan, action: accept }
  - { name: hairpin, in: lan, out: lan, service: tcp/80, action: accept }
nat:
  - no-nat: { out: wan, destination: 203.0.113.11 }
  - snat: { out: wan, from: 198.51.100.3, destination: 203.0.113.10, to: 192.0.2.100 }
  - one-to-one: { interface: wan, inside: 198.51.100.4, outside: 192.0.2.50 }
  - one-to-one: { interface: wan, inside: 198.51.100.16/30, outside: 192.0.2.16/30 }
  - nptv6: { interface: wan, inside: "2001:db8:1::/64", outside: "2001:db8:9::/64" }
  - masquerade: { out: wan }
  - forward-port: { in: wan, destination: 203.0.113.2, service: tcp/8080, to: "198.51.100.2:80" }
  - forward-port: { in: wan, service: tcp/9000-9002, to: "198.51.100.2:80-82" }
  - forward-port: { in: wan, service: tcp/9100-9101, to: "[2001:db8:1::2]:80-81" }
YAML
if nfbox_start "$NS_TMP/d.yaml"; then
	t_ok forms-start
	# no-nat: what goes to 203.0.113.11 keeps its source, also from an
	# address that a later entry translates
	expect no-nat "$(who in_s 80 in_c 203.0.113.11)" "$C4"
	expect no-nat-before-one-to-one "$(who_from in_s 80 in_c 203.0.113.11 198.51.100.4)" "198\.51\.100\.4"
	# snat limited by from: and destination:; the rest is masqueraded
	expect snat-from-destination "$(who_from in_s 80 in_c $S4 198.51.100.3)" "192\.0\.2\.100"
	expect snat-other-destination "$(who_from in_s 80 in_c 203.0.113.12 198.51.100.3)" "$A4W"
	expect snat-other-source "$(who in_s 80 in_c $S4)" "$A4W"
	# one-to-one, both ways: out with the outside address, in to the inside one
	expect one-to-one-out "$(who_from in_s 80 in_c $S4 198.51.100.4)" "192\.0\.2\.50"
	expect one-to-one-in "$(who in_c 80 in_s 192.0.2.50)" "$S4"
	expect one-to-one-prefix-out "$(who_from in_s 80 in_c $S4 198.51.100.17)" "192\.0\.2\.17"
	expect one-to-one-prefix-in "$(who in_c 80 in_s 192.0.2.17)" "$S4"
	# nptv6: the prefix replaced, the host bits kept, both ways
	expect nptv6-out "$(who in_s 80 in_c $S6)" "2001:db8:9::2"
	expect nptv6-in "$(who in_c 80 in_s 2001:db8:9::2)" "$S6"
	# forward-port to one of the WAN's addresses only (and its hairpin)
	expect forward-port-destination "$(who in_c 80 in_s 203.0.113.2 8080)" "$S4"
	# (the inside server listening: a connection to the other address must not reach it)
	expect forward-port-other-address "$(who in_c 80 in_s $A4W 8080)" ""
	expect forward-port-destination-hairpin "$(who in_c 80 in_c 203.0.113.2 8080)" "$A4L"
	# a range of ports onto a range, port by port, IPv4 and IPv6
	expect port-range-first "$(who in_c 80 in_s $A4W 9000)" "$S4"
	expect port-range-last "$(who in_c 82 in_s $A4W 9002)" "$S4"
	expect port-range-v6 "$(who in_c 81 in_s $A6W 9101)" "$S6"
	# masquerade of both families (a reload)
	sed -i -e '/one-to-one\|nptv6/d' -e 's/masquerade: { out: wan }/masquerade: { out: wan, family: [ipv4, ipv6] }/' "$NS_TMP/d.yaml"
	out=$(nfbox_ctl reload --policy "$NS_TMP/d.yaml" 2>&1) && t_ok reload-masquerade-both || t_fail reload-masquerade-both "$out"
	expect masquerade-both-v6 "$(who in_s 80 in_c $S6)" "$A6W"
	expect masquerade-both-v4 "$(who in_s 80 in_c $S4)" "$A4W"
	nfbox_stop
else
	t_fail forms-start "$(cat "$NS_TMP/nfbox.err")"
fi

# ---- NAT beside an output hook ----
# NAT's own hooks sit at -100 on output (dstnat), as an administrator's
# chains may sit anywhere: the classifier's links take free priorities, so
# a policy with NAT that filters output loads (it did not: EBUSY).
policy "$NS_TMP/o.yaml" "$MASQ"
sed -i 's/^  forward: { default: drop }$/  forward: { default: drop }\n  output: { default: accept }/' "$NS_TMP/o.yaml"
echo "  - { name: no-discard, hook: output, service: [tcp/9], action: drop }" >>"$NS_TMP/o.yaml"
/usr/bin/python3 - "$NS_TMP/o.yaml" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
head, nat = s.split("nat:\n")
rules = [l for l in nat.split("\n") if l.startswith("  - { name")]
nat = [l for l in nat.split("\n") if l and not l.startswith("  - { name")]
open(p, "w").write(head.rstrip("\n") + "\n" + "\n".join(rules) + "\nnat:\n" + "\n".join(nat) + "\n")
PY
# Someone else's chain at the classifier's first priority, too.
in_a nft -f - <<'NFT'
table inet other {
	chain out { type filter hook output priority -99; policy accept; }
}
NFT
if nfbox_start "$NS_TMP/o.yaml"; then
	t_ok nat-with-output-hook
	if ! listen in_s 9 3; then
		t_fail output-rule-enforced "no listener on tcp/9: nothing to refuse"
	elif in_a "$NET" tcp-connect $S4 9 1 >/dev/null 2>&1; then
		t_fail output-rule-enforced "the appliance reached tcp/9"
	else
		t_ok output-rule-enforced
	fi
	expect masquerade-with-output-hook "$(who in_s 80 in_c $S4)" "$A4W"
	nfbox_stop
else
	t_fail nat-with-output-hook "$(cat "$NS_TMP/nfbox.err")"
fi
# Every priority of the span taken: the start fails, says why, and leaves
# no table behind (it persists by design, so a failed start must remove it).
if bpf_backend; then
	for p in $(seq -98 -92); do
		in_a nft add chain inet other "o$((p + 100))" "{ type filter hook output priority $p; policy accept; }"
	done
	if nfbox_start "$NS_TMP/o.yaml" 2>/dev/null; then
		t_fail busy-priorities-refused "started with priorities -99..-92 all taken"
		nfbox_stop
	elif grep -q 'priorities -99 to -92 are all taken' "$NS_TMP/nfbox.err" && no_table; then
		t_ok busy-priorities-refused
	else
		t_fail busy-priorities-refused "$(tail -n 2 "$NS_TMP/nfbox.err"; in_a nft list tables)"
	fi
	NFBOX_PID=
fi
in_a nft delete table inet other
t_done
