#!/bin/bash
# Host-name sets (sets: { NAME: { hosts: [...], min-ttl, max-ttl, grace } })
# against a real dnsmasq in the server namespace, whose answer changes while
# nfbox runs (TTL 2 s, grace 3 s), on an allow-list (default drop):
# - the name's address passes, another address does not;
# - the answer changed: the new address passes within one TTL (plus the
#   question's own time), the old one still passes within the grace and is
#   dropped once TTL and grace are past, without a reload;
# - IPv6 (AAAA) as well as IPv4;
# - a name that does not resolve is a warning in status, not an error: the
#   policy loads and the other names work;
# - nfbox set del on the set is refused; set list says "by dns".
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
S4B=203.0.113.11 S6B=2001:db8:2::11 # the name's second address

command -v dnsmasq >/dev/null || { t_fail dnsmasq "dnsmasq is missing (packaging/install-deps.sh installs dnsmasq-base)"; t_done; }
ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
in_s ip addr add $S4B/24 dev s0
in_s ip addr add $S6B/64 dev s0 nodad
HOSTS=$NS_TMP/dns-hosts
printf '%s updates.example.test\n%s updates.example.test\n' $S4 $S6 >"$HOSTS"
in_s dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --addn-hosts="$HOSTS" \
	--local-ttl=2 --listen-address=$S4 --bind-interfaces --user=root --group=root \
	--pid-file="$NS_TMP/dnsmasq.pid" --log-facility="$NS_TMP/dnsmasq.log" --log-queries &
t_check dnsmasq-up wait_until 5 sh -c "ip netns exec '$NS_S' ss -lun | grep -q '$S4:53 '"
ns_etc "$NS_A" resolv.conf "nameserver $S4"
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
sets:
  updates: { hosts: [updates.example.test, nowhere.example.test], min-ttl: 1s, grace: 3s }
hooks:
  forward: { default: drop }
rules:
  - { name: to-updates, to: updates, action: accept }
YAML
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
listed() { nfbox_ctl set list updates | grep -q "^$1[[:space:]]"; }  # ADDR: in the set
not_listed() { nfbox_ctl set list updates >"$NS_TMP/list" && ! grep -q "^$1[[:space:]]" "$NS_TMP/list"; }
t_check resolved wait_until 5 listed $S4
t_check first-passes [ "$(probe_from $C4 $S4 7000)" = pass ]
t_check first-v6-passes [ "$(probe_from $C6 $S6 7000)" = pass ]
t_check other-dropped [ "$(probe_from $C4 $S4B 7000)" = drop ]
t_check list-by-dns grep -Eq "^$S4[[:space:]].*by dns$" <(nfbox_ctl set list updates)
unresolved() { nfbox_ctl status | grep -q 'warning: nowhere.example.test does not resolve'; }
t_check unresolved-warned wait_until 8 unresolved
reloads() { nfbox_ctl status --json | jq -r .reloads_ok; }
r0=$(reloads)

# the answer changes
printf '%s updates.example.test\n%s updates.example.test\n' $S4B $S6B >"$HOSTS"
kill -HUP "$(cat "$NS_TMP/dnsmasq.pid")"
changed=$(date +%s.%N)
# the old address: answered within the last TTL, it stays for TTL + grace
t_check old-in-list-within-grace listed $S4
t_check new-within-ttl wait_until 5 listed $S4B
t_check new-passes [ "$(probe_from $C4 $S4B 7000)" = pass ]
t_check new-v6-passes [ "$(probe_from $C6 $S6B 7000)" = pass ]
# past TTL and grace after the change (2 s + 3 s, and the expiry's own
# second) the old address is dropped
left=$(fnum "$changed + 2 + 3 + 1.5 - $EPOCHREALTIME")
fholds "$left > 0" && sleep "$left"
t_check old-gone wait_until 3 not_listed $S4
t_check old-dropped [ "$(probe_from $C4 $S4 7000)" = drop ]
t_check new-still-passes [ "$(probe_from $C4 $S4B 7000)" = pass ]
t_check no-reload [ "$(reloads)" = "$r0" ]
t_check asked-again grep -q "query\[A\] updates.example.test" "$NS_TMP/dnsmasq.log"

out=$(nfbox_ctl set del updates $S4B 2>&1)
t_check set-del-refused grep -q "set 'updates' is filled from DNS (its host names) by the daemon" <<<"$out"
nfbox_stop
kill "$(cat "$NS_TMP/dnsmasq.pid")" 2>/dev/null
t_done
