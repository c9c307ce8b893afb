#!/bin/bash
# The BPF engine's interface map at its capacity (NFB_IFACE_MAX_ENTRIES,
# 16,384: an entry for each interface, hook and direction whose rules name
# it). A policy whose wildcard takes 5,461 interfaces on three hooks and
# directions, and lan0 on one (16,384 entries), loads; with one interface
# more it is refused with a message that names the limit. Interfaces that go and come in numbers at the limit
# are followed: the entries of those that went make room for those that
# came (regression, issue 25: new entries were added before stale ones were
# taken out, so churn at the limit failed and left the map wrong); one more
# than fits is said in the log.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
hooks:
  forward: { default: drop }
  input: { default: accept }
  output: { default: accept }
rules:
  - { name: dummies-fwd, hook: forward, in: "dm*", out: "dm*", action: accept }
  - { name: dummies-in, hook: input, in: "dm*", action: drop }
  - { name: lan, in: lan0, service: tcp/80, action: accept }
YAML
# dummies FIRST LAST add|del: interfaces dmFIRST..dmLAST (ifb: the kernel has no
# dummy), in one batch.
dummies() {
	seq "$1" "$2" | awk -v op="$3" '{ print (op == "add" ? "link add dm" $1 " type ifb" : "link del dm" $1) }' |
		ip -n "$NS_A" -batch - 2>&1 | head -n 3
}
count_dm() { ip -n "$NS_A" -o link show type ifb | wc -l; }

dummies 1 5462 add
t_check created [ "$(count_dm)" -eq 5462 ]
if nfbox_start "$NS_TMP/policy.yaml"; then
	t_fail over-limit-refused "nfbox started with 3 x 5,462 + 1 interface entries"
	nfbox_stop
else
	grep -q "need 16387 entries .*the BPF engine holds 16384" "$NS_TMP/nfbox.err" &&
		t_ok over-limit-refused || t_fail over-limit-refused "$(tail -n 3 "$NS_TMP/nfbox.err")"
fi
NFBOX_PID=

dummies 5462 5462 del
nfbox_start "$NS_TMP/policy.yaml" || { t_fail at-limit-loads "$(tail -n 3 "$NS_TMP/nfbox.err")"; t_done; }
t_ok at-limit-loads
listen in_s 80 5 && t_check traffic-at-limit in_c "$NET" tcp-connect $S4 80 2

# 300 go, 300 others come: all followed, nothing said. (Before, the new
# entries went in before the stale ones came out, and at the limit the
# update failed: "could not be updated: Argument list too long".)
dummies 1 300 del
dummies 6001 6300 add
sleep 2 # what the change would log, within 2 s: a fixed wait for nothing to come
grep -q "now need\|could not be updated" "$NS_TMP/nfbox.err" &&
	t_fail churn-at-limit-followed "$(grep -m 2 'now need\|could not' "$NS_TMP/nfbox.err")" || t_ok churn-at-limit-followed
# One more than fits: the log says so, with the numbers.
dummies 7000 7000 add
wait_until 5 grep -q "now need 16387 entries and the BPF engine holds 16384" "$NS_TMP/nfbox.err" &&
	t_ok over-limit-said || t_fail over-limit-said "$(tail -n 3 "$NS_TMP/nfbox.err")"
listen in_s 80 5 && t_check traffic-after in_c "$NET" tcp-connect $S4 80 2
t_done
