#!/bin/bash
# A fleet on etcd (nfbox run --fleet, nfbox fleet): a 3-member etcd cluster
# (the real etcd, TLS client certificates, RBAC made by
# packaging/fleet/nfbox-fleet-rbac) and 3 nodes of one group, with real
# traffic from a client. A push reaches every node; a push onto a revision
# that moved on is refused (compare-and-swap); a revision a node cannot
# load changes nothing there and is reported; a ban on one node is enforced
# on the others (IPv4 and IPv6), its delete too, a burst of 1,000 within
# seconds, recorded with its time on each node; a canary whose new policy
# cuts it off from etcd rolls back by itself and the push halts, while a
# good canary goes on to every node; a node partitioned from etcd keeps
# enforcing, starts without etcd on its last revision, and catches up; the
# fleet goes on without one etcd member; without quorum pushes are refused
# with a clear error and nodes keep enforcing; a node may not push. Under
# NFBOX_LONG also: a node that dies leaves the view when its lease ends.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/fleet.sh

command -v etcd >/dev/null || { t_fail setup "etcd is not installed (packaging/install-deps.sh installs etcd-server)"; t_done; }
fl_setup || { t_fail setup "cannot build the fleet: $(tail -n 3 "$FL_TMP"/e1.log 2>/dev/null)"; t_done; }
OP=$FL_TMP/operator.yaml
export NFBOX_TEST_FLEET_SAY_MS=1000 # etcd still lost: said again after 1 s, not 30 s
export NFBOX_TEST_FLEET_WRITES_FAIL=$FL_TMP/writes-fail # the nodes' writes fail while it is there
export NFBOX_TEST_FLEET_RACE=$FL_TMP/race # while it is there, its prefixes leave a pack between a node's read and write
push() { fl_fleet push --fleet "$OP" "$@"; }

# ---- the policies: a deny-list with a shared dynamic set ----
mkdir -p "$FL_TMP/op/sets"
fl_base_policy "$FL_TMP/base.yaml"
# v2: no pings (and a set file, which travels with the revision)
echo "203.0.113.99" >"$FL_TMP/op/sets/extra.txt"
cat >"$FL_TMP/op/policy.yaml" <<'YAML'
version: 1
sets:
  blocklist: { dynamic: true, shared: true }
  extra: { file: sets/extra.txt }
hooks:
  input: { default: accept }
rules:
  - { name: drop-blocked, hook: input, from: blocklist, action: drop }
  - { name: drop-extra, hook: input, from: extra, action: drop }
  - { name: no-ping, hook: input, proto: icmp, icmp-type: echo-request, action: drop }
YAML
for n in n1 n2 n3; do fl_node_start $n "$FL_TMP/base.yaml" nowait; done
for n in n1 n2 n3; do
	fl_node_ready $n || { t_fail start-$n "$(tail -n 3 "$FL_TMP/$n.err")"; t_done; }
done
node_rev_is() { [ "$(fl_status_field "$1" revision)" = "$2" ]; } # N REV
all_at() { for n in n1 n2 n3; do node_rev_is $n "$1" || return 1; done; }
reporting() { fl_fleet status --fleet "$OP" --json | jq '.nodes | length'; }
t_check nodes-report wait_until 5 eval '[ "$(reporting)" = 3 ]'
t_check bootstrap-policy-enforced fl_ping_is pass n1

# ---- a push reaches every node ----
push "$FL_TMP/op/policy.yaml" --wait 10s >"$FL_TMP/push1.out" 2>&1
rc=$?
t_check push-ok [ $rc -eq 0 ]
REV1=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP/push1.out")
t_check push-names-revision [ -n "$REV1" ]
t_check push-every-node-applied [ "$(grep -c ": applied $REV1" "$FL_TMP/push1.out")" = 3 ]
t_check push-enforced-n1 fl_ping_is drop n1
t_check push-enforced-n3 fl_ping_is drop n3
t_check status-in-sync eval 'fl_fleet status --fleet "$OP" | grep -c "in sync" | grep -qx 3'
t_check set-file-travelled test -s "$FL_TMP/state-n2/fleet/r$REV1/sets/extra.txt"

# ---- compare-and-swap: a push onto a revision that moved on ----
push "$FL_TMP/base.yaml" --base $((REV1 - 1)) --wait 0 >"$FL_TMP/cas.out" 2>&1
rc=$?
t_check cas-refused [ $rc -eq 1 ]
t_check cas-says grep -q "refused: group branches is at revision $REV1" "$FL_TMP/cas.out"
t_check cas-nothing-changed all_at "$REV1"
fl_fleet diff --fleet "$OP" "$FL_TMP/base.yaml" >"$FL_TMP/diff.out" 2>&1
rc=$?
t_check diff-says-change eval '[ $rc -eq 1 ] && grep -q "no-ping" "$FL_TMP/diff.out" && grep -q "revision $REV1" "$FL_TMP/diff.out"'
fl_fleet diff --fleet "$OP" "$FL_TMP/op/policy.yaml" >"$FL_TMP/diff0.out" 2>&1
t_check diff-same-nothing [ $? -eq 0 ]
# two operators at once: both read the same revision (the test build waits
# a second between the read and the write), one write must be refused
NFBOX_TEST_PLANT=push-race${NFBOX_TEST_PLANT:+,$NFBOX_TEST_PLANT} push "$FL_TMP/base.yaml" --wait 0 >"$FL_TMP/race1.out" 2>&1 &
r1=$!
NFBOX_TEST_PLANT=push-race${NFBOX_TEST_PLANT:+,$NFBOX_TEST_PLANT} push "$FL_TMP/op/policy.yaml" --wait 0 >"$FL_TMP/race2.out" 2>&1
rc2=$?
wait $r1
rc1=$?
t_check race-one-wins eval '[ $((rc1 + rc2)) -eq 1 ] && cat "$FL_TMP"/race?.out | grep -q "changed since revision $REV1"'
RACE=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP"/race?.out)
t_check race-winner-applied wait_until 5 all_at "$RACE"
fl_ctl n1 status --json >"$FL_TMP/status.json" 2>/dev/null
out=$(/usr/bin/python3 tests/lib/keysdoc.py docs/report.md "$FL_TMP/status.json" 2>&1) &&
	t_ok status-keys-documented || t_fail status-keys-documented "$out"
push "$FL_TMP/op/policy.yaml" --wait 10s >/dev/null 2>&1 # v2 again, whoever won

# ---- a policy that does not validate never leaves the operator ----
printf 'version: 1\nrules:\n  - { name: x, action: maybe }\n' >"$FL_TMP/bad.yaml"
push "$FL_TMP/bad.yaml" >"$FL_TMP/bad.out" 2>&1
rc=$?
t_check invalid-refused-locally eval '[ $rc -eq 3 ] && grep -q "bad.yaml:3:" "$FL_TMP/bad.out"'

# ---- a revision a node cannot load: nothing changes there, it says so ----
bad_rev=$(/usr/bin/python3 - "$FL_TMP" <<'PY'
import base64, json, sys
files = [{"name": "policy.yaml", "data": base64.b64encode(b"version: 1\nrules: [ { name: x, action: maybe } ]\n").decode()}]
print(json.dumps({"format": 1, "fingerprint": "0" * 64, "by": "root", "at": 0, "files": files, "canaries": []}))
PY
)
fl_etcdctl etcdctl --user "root:$(cat "$FL_TMP/pki/root.pw")" put /nfbox/branches/policy "$bad_rev" >/dev/null
t_check bad-revision-reported wait_until 5 eval 'fl_status_field n2 last_error | grep -q "refused, the policy in force stays"'
t_check bad-revision-changes-nothing fl_ping_is drop n2
t_check bad-revision-status-health eval 'fl_fleet status --fleet "$OP" | grep -q "error"'

# ---- a ban on one node is enforced on the others ----
push "$FL_TMP/base.yaml" --wait 10s >"$FL_TMP/push2.out" 2>&1
REV2=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP/push2.out")
t_check good-after-bad all_at "$REV2"
t_check clean-pings-pass fl_ping_is pass n2
fl_ctl n1 set add blocklist "$(fl_ip cl)" "$(fl_ip6 cl)" --timeout 60 >/dev/null
t_check ban-n2-within-2s wait_until 2 fl_ping_is drop n2
t_check ban-n3-within-2s wait_until 2 fl_ping_is drop n3
t_check ban-n3-v6 fl_ping_is drop n3 6
t_check ban-kept-with-timeout eval 'fl_ctl n3 set list blocklist | grep "$(fl_ip cl)" | grep -q "expires in"'
t_check ban-by-n1 eval 'fl_ctl n2 set list blocklist | grep -q "by fleet:n1"'
fl_ctl n2 set del blocklist "$(fl_ip cl)" "$(fl_ip6 cl)" >/dev/null
t_check unban-n1-within-2s wait_until 2 fl_ping_is pass n1
t_check unban-n3-v6 wait_until 2 fl_ping_is pass n3 6
fl_ctl n3 set add blocklist 198.51.100.77 --timeout 2 >/dev/null
t_check short-ban-shared wait_until 2 eval 'fl_ctl n1 set list blocklist | grep -q 198.51.100.77'
t_check short-ban-expires-everywhere wait_until 6 eval '! fl_ctl n2 set list blocklist | grep -q 198.51.100.77'
# A burst of shared entries (a blocklist loaded on one node): sent in few
# transactions, not a request each, so that the others hold all of them
# within seconds; each node records when it held them (its log, to the
# millisecond), after they were added and before they were seen.
for k in $(seq 1 1000); do printf '2001:db8:77::%x\n' "$k"; done >"$FL_TMP/burst.txt"
burst_t0=$(date -u +%Y-%m-%dT%H:%M:%S.%3N)
fl_ctl n1 set add blocklist --file "$FL_TMP/burst.txt" --timeout 60 >/dev/null
burst_on() { [ "$(fl_ctl "$1" set list blocklist | grep -c '^2001:db8:77::')" = 1000 ]; }
t_check burst-shared-within-5s wait_until 5 burst_on n3
burst_t1=$(date -u +%Y-%m-%dT%H:%M:%S.%3N)
# the records of n3: every burst entry named once, each line's time within [t0, t1]
recorded() {
	awk -v t0="$burst_t0" -v t1="$burst_t1" '
	/fleet: set blocklist: [0-9]+ shared entr(y|ies) in force at / {
		for (i = 1; i <= NF; i++) if ($i == "at") t = substr($(i + 1), 1, 23)
		for (i = 1; i <= NF; i++) if ($i ~ /^2001:db8:77::/) { n++; if (t < t0 || t > t1) bad++ }
	}
	END { print n + 0, bad + 0; exit !(n == 1000 && bad == 0) }' "$FL_TMP/n3.err"
}
t_check burst-recorded-with-times recorded
fl_ctl n1 set del blocklist --file "$FL_TMP/burst.txt" >/dev/null
t_check burst-deleted-everywhere wait_until 5 eval '! fl_ctl n2 set list blocklist | grep -q "^2001:db8:77::"'

# A shared ban renewed on another node as it expires: the kernel of every
# node (bpftool for the classifier's tries, nft for table inet nfbox: not
# set list) holds it again with the new timeout; with either backend.
holds_on() { # N PREFIX MIN-LEFT
	if [ "$FL_BACKEND" = nftables ]; then
		in_ns "$1" /usr/bin/python3 tests/lib/kset.py nft blocklist
	else
		/usr/bin/python3 tests/lib/kset.py bpf "$FL_TMP/bpf/$1" blocklist
	fi | awk -v p="$2" -v m="$3" '$1 == p && ($2 == "never" || $2 + 0 >= m) { f = 1 } END { exit !f }'
}
lists() { fl_ctl "$1" set list blocklist | grep -q "^$2[[:space:]]"; } # N ADDRESS
unlists() { ! lists "$@"; }
renew_at_expiry() { # LABEL: the client banned on n3, renewed on n2 as n1 lets it go
	local c
	c=$(fl_ip cl)
	fl_ctl n3 set add blocklist "$c" --timeout 2 >/dev/null
	t_check "$1-shared" wait_until 2 lists n1 "$c"
	t_check "$1-expired-on-n1" wait_until 5 unlists n1 "$c"
	fl_ctl n2 set add blocklist "$c" --timeout 8 >/dev/null
	t_check "$1-kernel-n1" wait_until 2 holds_on n1 "$c/32" 5
	t_check "$1-kernel-n3" wait_until 2 holds_on n3 "$c/32" 5
	t_check "$1-dropped-n1" fl_ping_is drop n1
	fl_ctl n2 set del blocklist "$c" >/dev/null
	t_check "$1-unbanned" wait_until 2 fl_ping_is pass n1
}
FL_BACKEND=bpf renew_at_expiry shared-renew
sed 's/^hooks:/options: { backend: nftables }\nhooks:/' "$FL_TMP/base.yaml" >"$FL_TMP/base-nft.yaml"
push "$FL_TMP/base-nft.yaml" --wait 10s >/dev/null 2>&1
FL_BACKEND=nftables renew_at_expiry shared-renew-nft
# A shared ban of a node's own address (as a forged alert on another node
# would make): the other nodes hold it, that node refuses it and counts it.
refused_on() { [ "$(fl_ctl "$1" status --json | jq -r .dynamic_sets_check.bans_refused)" -ge 1 ]; }
fl_ctl n1 set add blocklist "$(fl_ip n2)" --timeout 60 >/dev/null
t_check own-address-ban-shared wait_until 2 lists n3 "$(fl_ip n2)"
t_check own-address-ban-refused wait_until 2 refused_on n2
t_check own-address-not-banned-there unlists n2 "$(fl_ip n2)"
t_check own-address-refusal-logged grep -q "set blocklist: $(fl_ip n2) not banned (asked by fleet:n1): it is this appliance's own address" "$FL_TMP/n2.err"
fl_ctl n1 set del blocklist "$(fl_ip n2)" >/dev/null

# a limit's overload on n1 bans on every node: a ping flood over 5/s
cp "$FL_TMP/base.yaml" "$FL_TMP/limit.yaml"
echo "  - { name: ping-flood, hook: input, proto: icmp, icmp-type: echo-request, limit: { rate: 5/second, burst: 5, per: source, overload: blocklist, timeout: 30s }, action: accept }" >>"$FL_TMP/limit.yaml"
push "$FL_TMP/limit.yaml" --wait 10s >/dev/null 2>&1
t_check overload-n2-passes-before fl_ping_is pass n2
# one ping each: a ping's later echoes are its flow's (established: accept)
for _ in $(seq 12); do in_ns cl ping -c 1 -W 0.2 -q "$(fl_ip n1)" >/dev/null 2>&1; done
t_check overload-bans-n1 wait_until 2 eval 'fl_ctl n1 set list blocklist | grep "$(fl_ip cl)" | grep -q "rule ping-flood"'
t_check overload-enforced-n2 wait_until 2 fl_ping_is drop n2
t_check overload-enforced-n3 wait_until 2 fl_ping_is drop n3
fl_ctl n3 set del blocklist "$(fl_ip cl)" >/dev/null
t_check overload-unban-everywhere wait_until 2 fl_ping_is pass n2
push "$FL_TMP/base.yaml" --wait 10s >"$FL_TMP/push3.out" 2>&1
REV2=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP/push3.out")

# entries that are not one (written by hand, or by a hostile node): ignored, said
root_ctl() { fl_etcdctl etcdctl --user "root:$(cat "$FL_TMP/pki/root.pw")" "$@"; }
root_ctl put /nfbox/branches/sets/blocklist/not-an-address '{"expires":0}' >/dev/null
root_ctl put /nfbox/branches/sets/blocklist/198.51.100.5/24 '{"expires":0}' >/dev/null
t_check hostile-entries-ignored wait_until 2 eval '[ "$(grep -c "is not SET/PREFIX or a pack (SET/+ID): ignored" "$FL_TMP/n2.err")" = 2 ]'
t_check hostile-entries-not-taken eval '! fl_ctl n2 set list blocklist | grep -q 198.51.100'
root_ctl del /nfbox/branches/sets/blocklist/ --prefix >/dev/null

# ---- a canary cut off from etcd rolls back; the push halts ----
cp "$FL_TMP/base.yaml" "$FL_TMP/cut.yaml"
echo "  - { name: cut-etcd, hook: output, service: tcp/2379, action: drop }" >>"$FL_TMP/cut.yaml"
sed -i 's/^  input: { default: accept }/  input: { default: accept }\n  output: { default: accept }/' "$FL_TMP/cut.yaml"
push "$FL_TMP/cut.yaml" --canary 1 --confirm-within 3s --wait 10s >"$FL_TMP/canary.out" 2>&1
rc=$?
t_check canary-halts [ $rc -eq 1 ]
t_check canary-says-halted grep -q "the push halted" "$FL_TMP/canary.out"
t_check canary-n1-named grep -q "canary: n1" "$FL_TMP/canary.out"
t_check canary-rolled-back eval 'fl_status_field n1 candidate_state | grep -qx "rolled back"'
t_check canary-others-untouched eval 'node_rev_is n2 "$REV2" && node_rev_is n3 "$REV2"'
t_check canary-n1-back-in-sync wait_until 5 eval 'fl_fleet status --fleet "$OP" | grep "^n1 " | grep -q "in sync"'
t_check canary-group-unchanged eval 'fl_fleet status --fleet "$OP" | grep -q "revision $REV2"'
t_check canary-n1-reaches-etcd-again wait_until 5 eval '[ "$(fl_status_field n1 connected)" = true ]'
t_check candidate-key-gone eval '[ -z "$(root_ctl get /nfbox/branches/candidate)" ]'

# ---- a good canary goes on to every node ----
push "$FL_TMP/op/policy.yaml" --canary 1 --confirm-within 5s --wait 10s >"$FL_TMP/canary2.out" 2>&1
rc=$?
REV3=$(sed -n 's/^revision \([0-9]*\) to every node.*/\1/p' "$FL_TMP/canary2.out")
t_check canary-confirms eval '[ $rc -eq 0 ] && grep -q "n1: confirmed" "$FL_TMP/canary2.out"'
t_check canary-then-all wait_until 5 all_at "$REV3"
t_check canary-enforced-n3 fl_ping_is drop n3

# ---- etcd does not take the nodes' writes (as a loaded member times
# out): the watch goes on (no reconnection, no full read of the group, the
# load that once made 500 nodes time out again and again), the writes wait
# and go once etcd takes them (the test build fails them while the file is
# there) ----
down0=$(grep -c "fleet: etcd not reached" "$FL_TMP/n2.err")
touch "$FL_TMP/writes-fail"
fl_ctl n1 set add blocklist 198.51.100.77 >/dev/null
cp -r "$FL_TMP/op" "$FL_TMP/opw" && echo "# the same rules, other files" >>"$FL_TMP/opw/policy.yaml"
push "$FL_TMP/opw/policy.yaml" --wait 0 >"$FL_TMP/pushw.out" 2>&1
REVW=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP/pushw.out")
t_check writes-fail-said wait_until 5 grep -q "fleet: etcd did not take this node's writes; the watch goes on, and they are tried again: writing" "$FL_TMP/n2.err"
t_check writes-fail-watch-goes-on wait_until 5 node_rev_is n2 "$REVW"
t_check writes-fail-reported eval '[ "$(fl_status_field n2 connected)" = true ] && fl_status_field n2 last_error | grep -q "did not take this node"'
t_check writes-fail-ban-waits eval '! fl_ctl n2 set list blocklist | grep -q 198.51.100.77'
rm -f "$FL_TMP/writes-fail"
t_check writes-back-ban-sent wait_until 8 eval 'fl_ctl n2 set list blocklist | grep -q 198.51.100.77'
t_check writes-back-said wait_until 8 eval 'grep -q "fleet: etcd takes this node.s writes again" "$FL_TMP/n2.err" && [ "$(fl_status_field n2 last_error)" = null ]'
t_check writes-fail-no-reconnection eval '[ "$(grep -c "fleet: etcd not reached" "$FL_TMP/n2.err")" = "$down0" ]'
t_check writes-back-reported wait_until 8 eval 'fl_fleet status --fleet "$OP" | grep "^n2 " | grep -q "in sync"'
REV3=$REVW # the same rules as REV3's: what the cases below expect

# ---- a node partitioned from etcd keeps enforcing, then catches up ----
fl_ctl n1 set add blocklist 198.51.100.88 >/dev/null # no timeout
t_check ban-for-good-shared wait_until 2 eval 'fl_ctl n3 set list blocklist | grep -q 198.51.100.88'
ip -n "$(fl_ns br)" link set vn3 down
push "$FL_TMP/base.yaml" --wait 2s >"$FL_TMP/push4.out" 2>&1
rc=$?
REV4=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP/push4.out")
# a wait that ends with a node behind: each node named once, as it stands
# (the wait's early rounds once named a node at every poll)
t_check partition-push-fails [ $rc -ne 0 ]
t_check partition-push-names-each-once eval '[ "$(grep -c "^  n1: applied $REV4$" "$FL_TMP/push4.out")" = 1 ] &&
	[ "$(grep -c "^  n2: applied $REV4$" "$FL_TMP/push4.out")" = 1 ] &&
	[ "$(grep -c "^  n3: has not applied $REV4$" "$FL_TMP/push4.out")" = 1 ]'
t_check partition-push-counts grep -q "1 of 3 nodes did not report revision $REV4 within 2s" "$FL_TMP/push4.out"
t_check partition-others-apply wait_until 5 eval 'node_rev_is n1 "$REV4" && node_rev_is n2 "$REV4"'
# (noticed by the watch's TCP keepalive, ~5 s, or a lease renewal that
# times out, every 3.3 s: within the lease's 10 s, plus the time to ask;
# asked every 0.5 s, not 20 times a second: each is a sanitizer build's
# CLI and a jq: asked so through these waits of seconds, they cost the
# suite 9 CPU-seconds of its 45)
t_check partition-n3-says wait_every 0.5 15 eval '[ "$(fl_status_field n3 connected)" = false ]'
t_check partition-n3-keeps node_rev_is n3 "$REV3"
# it goes on trying, and says so: the log again (at most every
# NFBOX_TEST_FLEET_SAY_MS here) with its attempts and each endpoint's
# reason; the status at every attempt (a node once said only its first
# failure, then nothing while it tried for minutes)
still_said() { grep -q "fleet: etcd still not reached after [0-9]* attempts in [0-9]*s, the policy in force stays; the last: [a-z' ]*: https://" "$FL_TMP/n3.err"; }
t_check partition-said-again wait_until 15 still_said
t_check partition-status-current eval '[ "$(fl_status_field n3 attempts)" -ge 2 ] &&
	fl_status_field n3 last_error | grep -q "^etcd not reached (attempt [0-9]*): "'
t_check partition-status-text eval 'fl_ctl n3 status | grep -q "etcd NOT reached since .* ([0-9]* attempts; the policy in force stays)"'
t_check partition-metrics eval 'fl_ctl n3 metrics | grep -qx "nfbox_fleet_etcd_connected 0" && fl_ctl n3 metrics | grep -qx "nfbox_fleet_revision $REV3"'
# a restart without etcd: the last revision applied, from disk
fl_node_stop n3
fl_node_start n3 "$FL_TMP/base.yaml"
t_check restart-without-etcd-keeps-revision eval 'node_rev_is n3 "$REV3" && fl_ctl n3 status | grep -q "r$REV3/policy.yaml"'
t_check restart-without-etcd-keeps-bans eval 'sleep 1; fl_ctl n3 set list blocklist | grep -q 198.51.100.88'
ip -n "$(fl_ns br)" link set vn3 up
t_check partition-heals-n3-catches-up wait_until 8 node_rev_is n3 "$REV4"
t_check caught-up-enforced wait_until 2 fl_ping_is pass n3

# ---- a node away and back: it resumes its watch from the revision after
# the last it saw, and gets what changed meanwhile (a push, a ban, a ban
# lifted) from the watch, with no read of the group ----
last_reached() { grep "fleet: etcd reached (" "$FL_TMP/$1.err" | tail -n 1; }
ip -n "$(fl_ns br)" link set vn2 down
t_check resume-n2-away wait_every 0.5 15 eval '[ "$(fl_status_field n2 connected)" = false ]'
push "$FL_TMP/op/policy.yaml" --wait 0 >"$FL_TMP/push-r.out" 2>&1
REVR=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP/push-r.out")
fl_ctl n1 set add blocklist 198.51.100.86 >/dev/null
fl_ctl n1 set del blocklist 198.51.100.88 >/dev/null
ip -n "$(fl_ns br)" link set vn2 up
t_check resume-n2-catches-up wait_until 10 node_rev_is n2 "$REVR"
t_check resume-n2-gets-the-ban wait_until 5 lists n2 198.51.100.86
t_check resume-n2-lifts-the-ban wait_until 5 unlists n2 198.51.100.88
t_check resume-n2-no-read eval 'last_reached n2 | grep -q "after [0-9]* failed attempts*: the watch resumed from revision [0-9]*$"'
t_check resume-n2-enforces wait_until 2 fl_ping_is drop n2

# ---- a node away while etcd compacted past what it had seen: etcd ends
# the resumed watch ("compacted"), and the node reads the group again
# whole (a watch resumed again would be refused again, and the node would
# never catch up) ----
ip -n "$(fl_ns br)" link set vn2 down
t_check compact-n2-away wait_every 0.5 15 eval '[ "$(fl_status_field n2 connected)" = false ]'
push "$FL_TMP/base.yaml" --wait 0 >"$FL_TMP/push5.out" 2>&1 # the same files, a new revision
REV5=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP/push5.out")
fl_ctl n1 set add blocklist 198.51.100.89 >/dev/null
ETCD_REV=$(fl_etcdctl etcdctl endpoint status -w json 2>/dev/null |
	jq 'map(.Status.header.revision) | max')
out=$(fl_etcdctl etcdctl compact "$ETCD_REV" 2>&1) && t_ok compact-done || t_fail compact-done "revision '$ETCD_REV': $out"
ip -n "$(fl_ns br)" link set vn2 up
t_check compact-n2-catches-up wait_until 10 node_rev_is n2 "$REV5"
t_check compact-n2-gets-the-ban wait_until 5 eval 'fl_ctl n2 set list blocklist | grep -q 198.51.100.89'
t_check compact-all-at wait_until 5 all_at "$REV5"
t_check compact-said grep -q "fleet: etcd ended the watch (its revision was compacted) after revision [0-9]*: the group is read whole again" "$FL_TMP/n2.err"
t_check compact-read-whole eval 'last_reached n2 | grep -q ": the group read whole at revision [0-9]* ([0-9]* keys)$"'
REV4=$REV5 # what every node is at now

# ---- a burst of bans goes into etcd as few transactions (share-window),
# each a response etcd makes for every node and a change each node
# applies; a ban after a quiet window goes at once ----
leases() { root_ctl lease list | sed -n 's/^found \([0-9]*\) leases$/\1/p'; }
txns() { fl_status_field "$1" transactions; }
# n1 (the default window, 200ms): bans further apart than it each go at
# once, and with the same timeout, under one lease (not one each)
l0=$(leases) x0=$(txns n1)
for k in 1 2 3 4 5; do
	fl_ctl n1 set add blocklist "203.0.113.$k" --timeout 300 >/dev/null
	sleep 0.3
done
t_check window-spaced-bans-shared wait_until 2 lists n2 203.0.113.5
t_check window-spaced-bans-each-at-once eval '[ $(($(txns n1) - x0)) = 5 ]'
# (two when the five end either side of a 10 s bucket's end)
t_check shared-bans-one-lease eval 'l=$(leases); [ $((l - l0)) -le 2 ] || { echo "$((l - l0)) leases for 5 bans" >&2; false; }'
# that lease gone (revoked by hand; an etcd restored from a backup): the
# next ban of the same 10 s goes under a new one, not refused
# (the pack that holds 203.0.113.5: each went at once, so a pack each)
key5=$(root_ctl get /nfbox/branches/sets/blocklist/+ --prefix | grep -B1 '"203.0.113.5"' | head -1)
# (sed, not jq: a lease's id is a 64-bit integer, more than a double holds)
lease5=$(root_ctl get "$key5" -w json | sed -n 's/.*"lease":\([0-9]*\).*/\1/p')
exp5=$(root_ctl get "$key5" --print-value-only | jq -r '.entries["203.0.113.5"]')
root_ctl lease revoke "$(printf '%x' "$lease5")" >/dev/null
t_check lease-revoked-bans-lifted wait_until 3 unlists n2 203.0.113.5
# (its expiry 5 s before the end of that lease's 10 s)
left=$(((((exp5 + 9999) / 10000) * 10000 - 5000 - ${EPOCHREALTIME/./} / 1000) / 1000))
fl_ctl n1 set add blocklist 203.0.113.6 --timeout "$left" >/dev/null
t_check lease-gone-ban-shared wait_until 3 lists n2 203.0.113.6
t_check lease-gone-not-refused eval '! grep -q "shared set blocklist: .*203.0.113.6" "$FL_TMP/n1.err"'
# n3 with a window of 2s: the first of a burst at once, the rest together
fl_node_stop n3
echo "share-window: 2s" >>"$FL_TMP/n3.yaml"
fl_node_start n3 "$FL_TMP/base.yaml"
t_check window-n3-back wait_every 0.3 10 eval '[ "$(fl_status_field n3 connected)" = true ]'
x0=$(txns n3)
t0=${EPOCHREALTIME/./}
fl_ctl n3 set add blocklist 203.0.113.10 --timeout 300 >/dev/null
t_check window-first-at-once wait_until 1.5 lists n1 203.0.113.10
for k in $(seq 11 20); do fl_ctl n3 set add blocklist "203.0.113.$k" --timeout 300 >/dev/null; done
span=$(((${EPOCHREALTIME/./} - t0) / 1000))
t_check window-burst-shared wait_until 5 lists n1 203.0.113.20
# the first, then one a window at most (11 without the window)
t_check window-burst-few-transactions eval 'x=$(($(txns n3) - x0)); [ "$x" -le $((2 + span / 2000)) ] ||
	{ echo "$x transactions for 11 bans in ${span} ms" >&2; false; }'
t_check window-status-text eval 'fl_ctl n3 status | grep -q "shared entries: [0-9]* sent (in [0-9]* transactions), "'
t_check window-metric eval 'fl_ctl n3 metrics | grep -q "^nfbox_fleet_shared_transactions_total [0-9]"'
for k in 6 $(seq 10 20); do echo "203.0.113.$k"; done >"$FL_TMP/window.txt" # (1-5 went with their lease)
fl_ctl n1 set del blocklist --file "$FL_TMP/window.txt" >/dev/null

# ---- packs: the entries a node shares in one transaction are one key in
# etcd (one event for each node's watch); a delete, or a shorter timeout,
# takes them out of every record that holds them ----
sets_dir=/nfbox/branches/sets/blocklist/
packs_with() { root_ctl get "$sets_dir+${2:-}" --prefix --print-value-only | grep -c -- "$1"; } # TEXT [NODE]: packs holding it
for k in $(seq 1 600); do printf '2001:db8:88::%x\n' "$k"; done >"$FL_TMP/pack.txt"
fl_ctl n1 set add blocklist --file "$FL_TMP/pack.txt" --timeout 120 >/dev/null
pack_on() { [ "$(fl_ctl "$1" set list blocklist | grep -c '^2001:db8:88::')" = "$2" ]; }
t_check pack-shared wait_until 5 pack_on n2 600
# (512 entries a pack at most)
t_check pack-600-in-two eval 'n=$(packs_with "2001:db8:88::"); [ "$n" = 2 ] || { echo "$n packs" >&2; false; }'
t_check pack-by-n1 eval 'fl_ctl n3 set list blocklist | grep "^2001:db8:88::1[[:space:]]" | grep -q "by fleet:n1"'
# one entry deleted on another node: its pack is written again without it
fl_ctl n2 set del blocklist 2001:db8:88::5 >/dev/null
t_check pack-entry-deleted-everywhere wait_until 3 unlists n3 2001:db8:88::5
t_check pack-rest-kept eval 'lists n3 2001:db8:88::6 && pack_on n1 599'
t_check pack-entry-out-of-etcd eval '[ "$(packs_with "\"2001:db8:88::5\"")" = 0 ] && [ "$(packs_with "2001:db8:88::")" = 2 ]'
# a shorter timeout on another node, and one for an entry that had none:
# the longer records give them up, and they end everywhere
fl_ctl n1 set add blocklist 198.51.100.120 >/dev/null
t_check pack-permanent-shared wait_until 3 lists n3 198.51.100.120
fl_ctl n2 set add blocklist 2001:db8:88::1 198.51.100.120 --timeout 3 >/dev/null
t_check pack-shortened-ends wait_until 8 eval 'unlists n3 2001:db8:88::1 && unlists n3 198.51.100.120 && unlists n1 198.51.100.120'
t_check pack-shortened-out-of-the-longer eval '[ "$(packs_with "\"2001:db8:88::1\"" n1.)" = 0 ] && [ "$(packs_with "\"198.51.100.120\"" n1.)" = 0 ]'
# an add and a delete within n3's window (2s) go as nothing (.121 opens
# the window; .125 goes with the rest at its end)
fl_ctl n3 set add blocklist 198.51.100.121 --timeout 60 >/dev/null
fl_ctl n3 set add blocklist 198.51.100.122 --timeout 60 >/dev/null
fl_ctl n3 set del blocklist 198.51.100.122 >/dev/null
fl_ctl n3 set add blocklist 198.51.100.125 --timeout 60 >/dev/null
t_check pack-window-add-shared wait_until 5 lists n1 198.51.100.125
t_check pack-window-add-del-nothing eval 'unlists n1 198.51.100.122 && [ "$(packs_with 198.51.100.122)" = 0 ]'
# a pack written by hand (or a hostile node): its entries that are not
# prefixes are skipped and said; the rest taken, and gone with it
root_ctl put "$sets_dir+evil.1" '{"by":"../x","entries":{"198.51.100.123":0,"not-an-address":0,"198.51.100.5/24":0}}' >/dev/null
t_check pack-hostile-rest-taken wait_until 3 eval 'fl_ctl n2 set list blocklist | grep "^198.51.100.123[[:space:]]" | grep -q "by fleet:?"'
t_check pack-hostile-said grep -q "shared pack 'blocklist/+evil.1': 2 of its entries are not prefixes: skipped" "$FL_TMP/n2.err"
root_ctl del "$sets_dir+evil.1" >/dev/null
t_check pack-hostile-gone-with-it wait_until 3 unlists n2 198.51.100.123
# a key of one entry (by hand, or a node before packs): taken, and a
# delete on a node deletes the key
root_ctl put "${sets_dir}198.51.100.124" '{"expires":0,"by":"n9"}' >/dev/null
t_check one-entry-key-taken wait_until 3 lists n1 198.51.100.124
fl_ctl n2 set del blocklist 198.51.100.124 >/dev/null
t_check one-entry-key-deleted wait_until 3 eval 'unlists n1 198.51.100.124 && [ -z "$(root_ctl get "${sets_dir}198.51.100.124")" ]'
# two deletes of one pack at once: n2's lands between n3's read of the
# pack and n3's write of it without its own; n3's write is refused (the
# pack changed since), and n3 reads it again: neither entry comes back
fl_ctl n1 set add blocklist 2001:db8:89::1 2001:db8:89::2 2001:db8:89::3 --timeout 120 >/dev/null
t_check pack-race-shared wait_until 3 lists n3 2001:db8:89::3
echo 2001:db8:89::2 >"$FL_TMP/race"
fl_ctl n3 set del blocklist 2001:db8:89::1 >/dev/null
t_check pack-race-both-gone wait_until 5 eval 'unlists n2 2001:db8:89::1 && unlists n2 2001:db8:89::2'
rm -f "$FL_TMP/race"
sleep 1
t_check pack-race-none-back eval 'unlists n2 2001:db8:89::2 && lists n2 2001:db8:89::3 && [ "$(packs_with "\"2001:db8:89::")" = 1 ] && [ "$(packs_with "\"2001:db8:89::2\"")" = 0 ]'
fl_ctl n1 set del blocklist 2001:db8:89::3 >/dev/null
grep -vx '2001:db8:88::[15]' "$FL_TMP/pack.txt" >"$FL_TMP/pack-left.txt"
fl_ctl n1 set del blocklist --file "$FL_TMP/pack-left.txt" >/dev/null
fl_ctl n1 set del blocklist 198.51.100.121 198.51.100.125 >/dev/null
t_check pack-all-deleted wait_until 3 eval '[ "$(packs_with "2001:db8:88::" n1.)" = 0 ] && pack_on n3 0'

# ---- a node may not push: etcd's RBAC refuses it ----
fl_fleet push --fleet "$FL_TMP/n1.yaml" "$FL_TMP/op/policy.yaml" --wait 0 >"$FL_TMP/rbac.out" 2>&1
rc=$?
t_check node-push-refused eval '[ $rc -eq 1 ] && grep -q "permission denied" "$FL_TMP/rbac.out"'
t_check node-push-changed-nothing all_at "$REV4"
n1_ctl() {
	ETCDCTL_CERT=$FL_TMP/pki/n1.crt ETCDCTL_KEY=$FL_TMP/pki/n1.key fl_etcdctl etcdctl --user "n1:$(cat "$FL_TMP/pki/n1.pw")" "$@"
}
t_check node-may-not-write-others-status eval 'n1_ctl put /nfbox/branches/nodes/n2 forged 2>&1 | grep -q "permission denied"'
t_check node-may-write-shared-sets n1_ctl put /nfbox/branches/sets/blocklist/198.51.100.99 '{"expires":0}'
n1_ctl del /nfbox/branches/sets/blocklist/198.51.100.99 >/dev/null
t_check no-certificate-refused eval '! in_ns cl curl -sS --max-time 3 --cacert "$FL_TMP/pki/ca.crt" https://$(fl_ip e1):2379/v3/kv/range -d "{}"'

# ---- one etcd member lost: the fleet goes on (n3 asked e3 first) ----
fl_etcd_stop e3
push "$FL_TMP/op/policy.yaml" --wait 15s >"$FL_TMP/push5.out" 2>&1
rc=$?
REV5=$(sed -n 's/^revision \([0-9]*\) of group.*/\1/p' "$FL_TMP/push5.out")
t_check member-lost-push-ok [ $rc -eq 0 ]
t_check member-lost-all-apply wait_until 10 all_at "$REV5"

# ---- quorum lost: pushes refused clearly, nodes keep enforcing ----
fl_etcd_stop e2
push "$FL_TMP/base.yaml" --wait 0 >"$FL_TMP/noquorum.out" 2>&1
rc=$?
t_check no-quorum-refused [ $rc -eq 4 ]
t_check no-quorum-says grep -q "etcd has no quorum" "$FL_TMP/noquorum.out"
t_check no-quorum-nodes-enforce eval 'fl_ping_is drop n1 && fl_ping_is drop n2'
# a node goes on trying, and says so: the log again (at most every
# NFBOX_TEST_FLEET_SAY_MS here) with its attempts and each endpoint's
# reason; the status at every attempt (a node once said only its first
# failure, then nothing while it tried for minutes)
# (a node whose member is up keeps its watch, and says that etcd does not
# take its writes)
t_check no-quorum-said wait_until 10 eval 'fl_status_field n1 last_error | grep -Eq "^etcd (did not take this node.s writes; .*keeping the lease|not reached)"'

# ---- etcd wholly down (every member refuses the connection): the node
# waits between attempts as it should (its status changes with each
# failure, and that woke it to try again at once: hundreds a second) ----
fl_etcd_stop e1
t_check all-down-said wait_every 0.5 15 eval '[ "$(fl_status_field n1 connected)" = false ]'
a0=$(fl_status_field n1 attempts)
sleep 5
a1=$(fl_status_field n1 attempts)
t_check all-down-attempts-spaced eval '[ $((a1 - a0)) -ge 1 ] && [ $((a1 - a0)) -le 6 ] || { echo "attempts in 5 s: $a0 to $a1"; false; }'

# ---- every member started again: they lost the nodes' tokens (etcd
# keeps them in memory), and a watch sent with one is refused; the nodes
# get new ones and resume their watch, with no read of the group ----
reached_n() { grep -c "fleet: etcd reached (" "$FL_TMP/$1.err"; }
declare -A before
for n in n1 n2 n3; do before[$n]=$(reached_n $n); done
for m in e1 e2 e3; do fl_etcd_start $m; done
all_reached_again() { for n in n1 n2 n3; do [ "$(reached_n $n)" -gt "${before[$n]}" ] || return 1; done; }
t_check all-back-reached wait_until 25 all_reached_again
for n in n1 n2 n3; do
	t_check all-back-$n-resumed eval 'last_reached $n | grep -q ": the watch resumed from revision [0-9]*$" || { last_reached $n; grep "ended the watch" "$FL_TMP/$n.err" | tail -n 2; false; }'
done
fl_ctl n1 set add blocklist 198.51.100.91 >/dev/null # new here: .89 is held since the compact cases
t_check all-back-ban-shared wait_until 5 eval 'lists n2 198.51.100.91 && lists n3 198.51.100.91'

# ---- a node stopped just after a shared entry came: saved at the stop (a
# change from etcd is saved within 10 s, and was lost by a stop before) ----
fl_ctl n1 set add blocklist 198.51.100.90 >/dev/null
t_check stop-save-arrived wait_until 5 lists n3 198.51.100.90
fl_node_stop n3
t_check stop-save-kept grep -q "198.51.100.90" "$FL_TMP/state-n3/dynsets"
fl_node_start n3 "$FL_TMP/base.yaml"

if [ -n "${NFBOX_LONG:-}" ]; then
	t_check quorum-back wait_until 20 eval 'push "$FL_TMP/base.yaml" --wait 10s >/dev/null 2>&1'
	t_check quorum-back-error-cleared wait_until 10 eval '[ "$(fl_status_field n1 last_error)" = null ] && [ "$(fl_status_field n1 attempts)" = 0 ]'
	fl_node_stop n2 KILL
	t_check dead-node-leaves-view wait_until 20 eval '[ "$(reporting)" = 2 ]'
fi

t_done
