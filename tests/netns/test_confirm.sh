#!/bin/bash
# reload --confirm: a change that comes back by itself unless confirmed,
# seen by real traffic. The new policy is enforced at once; without `nfbox
# confirm` the last confirmed one returns at the deadline; confirmed, it
# stays; two --confirm in a row roll back to the last confirmed policy, not
# the one between; a daemon killed (SIGKILL) during the window, the
# configured file edited in place, is followed by a daemon that rolls back
# at its start. `nfbox diff [FILE]` compares with the policy in force. Runs
# with either backend (NFBOX_BACKEND).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
open_policy() {
	printf 'version: 1\nhooks: { forward: { default: drop } }\nrules:\n  - { name: web, service: tcp/80, action: accept }\n'
}
closed_policy() {
	printf 'version: 1\nhooks: { forward: { default: drop } }\nrules:\n  - { name: %s, service: tcp/81, action: accept }\n' "$1"
}
open_policy >"$NS_TMP/policy.yaml"
closed_policy closed >"$NS_TMP/closed.yaml"
closed_policy between >"$NS_TMP/between.yaml"
for f in policy closed between; do backend_policy "$NS_TMP/$f.yaml"; done

# web: "open" if a connection to the server's port 80 gets through.
ip netns exec "$NS_S" "$NET" tcp-whoami 80 300 1000 >/dev/null 2>&1 &
wait_listen in_s 80 || { t_fail setup "no listener on tcp/80"; t_done; }
web() { in_c "$NET" tcp-probe $S4 80 1 | awk '{ print $1 }'; }
pending() {
	nfbox_ctl status --json | jq -r 'if .pending == null then "none" else "yes" end'
}
web_is() { [ "$(web)" = "$1" ]; }

nfbox_start "$NS_TMP/policy.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check open-at-start [ "$(web)" = open ]

# status: the fingerprint of the policy in force (sha256 over each file read:
# its path, a NUL, its length as 8 bytes little endian, its bytes) and
# whether the files on disk are still those.
field() { nfbox_ctl status --json | jq -r --arg k "$1" '.[$k]'; }
expect_fp() {
	/usr/bin/python3 -c '
import hashlib, struct, sys
h = hashlib.sha256()
for p in sys.argv[1:]:
    b = open(p, "rb").read()
    h.update(p.encode() + b"\0" + struct.pack("<Q", len(b)) + b)
print(h.hexdigest())' "$@"
}
fp0=$(field fingerprint)
t_check fingerprint-is-sha256-of-the-files [ "$fp0" = "$(expect_fp "$NS_TMP/policy.yaml")" ]
t_check on-disk-same [ "$(field on_disk)" = same ]
t_check version-shown [ "$(field version)" = "$("$NFBOX" --version | awk '{ print $2 }')" ]
cp "$NS_TMP/policy.yaml" "$NS_TMP/policy.keep"
echo "# an edit" >>"$NS_TMP/policy.yaml"
t_check on-disk-changed [ "$(field on_disk)" = changed ]
cp "$NS_TMP/policy.keep" "$NS_TMP/policy.yaml"
# the daemon hashes the files again only when their stat changed: an edit
# in place that keeps the size and the modification time (touch -r) is
# still seen (its change time moved), and the file put back is "same"
t_check on-disk-same-again [ "$(field on_disk)" = same ]
touch -r "$NS_TMP/policy.yaml" "$NS_TMP/policy.ref"
/usr/bin/python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(0); b = f.read(1); f.seek(0); f.write(b" " if b != b" " else b"#"); f.close()' "$NS_TMP/policy.yaml"
touch -r "$NS_TMP/policy.ref" "$NS_TMP/policy.yaml"
t_check on-disk-edit-in-place-seen [ "$(field on_disk)" = changed ]
cp "$NS_TMP/policy.keep" "$NS_TMP/policy.yaml"
t_check on-disk-same-after-restore [ "$(field on_disk)" = same ]

# nfbox diff [FILE]: what a reload would change against the policy in force.
out=$("$NFBOX" diff --socket "$NFBOX_SOCK" 2>&1); rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] && t_ok diff-running-same || t_fail diff-running-same "exit $rc: $out"
out=$("$NFBOX" diff --socket "$NFBOX_SOCK" "$NS_TMP/closed.yaml" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "rule forward web: removed" <<<"$out" && grep -q "rule forward closed: added" <<<"$out" &&
	t_ok diff-running-changes || t_fail diff-running-changes "exit $rc: $out"
# exit status 3: a policy that cannot be read or is invalid (nfbox(8), EXIT STATUS)
out=$("$NFBOX" diff --socket "$NFBOX_SOCK" "$NS_TMP/none.yaml" 2>&1); rc=$?
[ $rc -eq 3 ] && t_ok diff-running-missing-file || t_fail diff-running-missing-file "exit $rc: $out"
printf 'version: 1\nrules: [\n' >"$NS_TMP/broken.yaml"
out=$("$NFBOX" diff --socket "$NFBOX_SOCK" "$NS_TMP/broken.yaml" 2>&1); rc=$?
[ $rc -eq 3 ] && grep -q "broken.yaml:" <<<"$out" && t_ok diff-running-invalid || t_fail diff-running-invalid "exit $rc: $out"
# --json: the document, on stdout, also of an invalid file
out=$("$NFBOX" diff --json --socket "$NFBOX_SOCK" "$NS_TMP/closed.yaml" 2>/dev/null); rc=$?
t_check diff-running-json /usr/bin/python3 -c '
import json, sys
doc = json.loads(sys.argv[1])
assert sys.argv[2] == "1" and doc["valid"], sys.argv[1:]
assert {(c["kind"], c["hook"], c["name"], c["change"]) for c in doc["changes"]} >= {("rule", "forward", "web", "removed"), ("rule", "forward", "closed", "added")}, doc
' "$out" "$rc"
out=$("$NFBOX" diff --json --socket "$NFBOX_SOCK" "$NS_TMP/broken.yaml" 2>/dev/null); rc=$?
t_check diff-running-json-invalid /usr/bin/python3 -c '
import json, sys
doc = json.loads(sys.argv[1])
assert sys.argv[2] == "3" and not doc["valid"] and doc["changes"] == [], sys.argv[1:]
assert any(d["severity"] == "error" and d["file"].endswith("broken.yaml") for d in doc["diagnostics"]), doc
' "$out" "$rc"

# Unconfirmed: enforced at once, back at the deadline. (The status while
# it is pending is taken at once: under the load of the other suites, a
# probe that waits for its timeout once outlasted a window of 3 s.)
nfbox_ctl reload --policy "$NS_TMP/closed.yaml" --confirm 6s >"$NS_TMP/r1" 2>&1 || t_fail reload-confirm "$(cat "$NS_TMP/r1")"
nfbox_ctl status >"$NS_TMP/pending.txt"
nfbox_ctl status --json >"$NS_TMP/pending.json"
t_check new-policy-at-once [ "$(web)" = timeout ]
t_check status-pending [ "$(pending)" = yes ]
grep -q "pending:" "$NS_TMP/pending.txt" && t_ok status-text-pending || t_fail status-text-pending "$(cat "$NS_TMP/pending.txt")"
out=$(/usr/bin/python3 tests/lib/keysdoc.py docs/report.md "$NS_TMP/pending.json" 2>&1) &&
	t_ok pending-keys-documented || t_fail pending-keys-documented "$out"
t_check rolled-back wait_until 11 web_is open
t_check status-not-pending [ "$(pending)" = none ]
t_check rollback-same-fingerprint [ "$(field fingerprint)" = "$fp0" ]
grep -q "rolled back to the last confirmed policy" "$NS_TMP/nfbox.err" && t_ok rollback-logged ||
	t_fail rollback-logged "$(tail -n 5 "$NS_TMP/nfbox.err")"

# Rolled back on request (nfbox rollback), long before the deadline.
t_check reload-confirm-60s nfbox_ctl reload --policy "$NS_TMP/closed.yaml" --confirm 60s
t_check closed-before-rollback [ "$(web)" = timeout ]
t_check configured-policy-kept [ "$(field configured_policy)" = "$NS_TMP/policy.yaml" ]
t_check status-says-configured grep -q "^configured: $NS_TMP/policy.yaml" <(nfbox_ctl status)
out=$(nfbox_ctl rollback 2>&1) && t_ok rollback-asked || t_fail rollback-asked "$out"
t_check rollback-says grep -q "rolled back: .* (the last confirmed policy) is in force" <<<"$out"
t_check rollback-open-again [ "$(web)" = open ]
t_check rollback-nothing-pending [ "$(pending)" = none ]
t_check rollback-asked-logged grep -q "nfbox rollback (control socket, uid 0): rolled back" "$NS_TMP/nfbox.err"
out=$(nfbox_ctl rollback 2>&1); rc=$?
t_check rollback-nothing-pending-fails [ "$rc" -eq 1 ]
t_check rollback-nothing-pending-says grep -q "nothing to roll back" <<<"$out"

# Confirmed: it stays past the deadline.
t_check reload-confirm-4s nfbox_ctl reload --policy "$NS_TMP/closed.yaml" --confirm 4s
nfbox_ctl confirm >"$NS_TMP/c1" 2>&1 && t_ok confirm || t_fail confirm "$(cat "$NS_TMP/c1")"
sleep 5.5 # fixed: what is under test is that nothing happens past the 4 s deadline
t_check confirmed-stays [ "$(web)" = timeout ]
out=$(nfbox_ctl confirm 2>&1); rc=$?
t_check confirm-nothing-pending-fails [ "$rc" -eq 1 ]
t_check confirm-nothing-pending-says grep -q "no change is waiting for a confirmation" <<<"$out"

# Back to open (a plain reload is confirmed), then two --confirm in a row:
# the rollback goes to the last confirmed policy, not the one between.
nfbox_ctl reload >/dev/null 2>&1
t_check plain-reload [ "$(web)" = open ]
t_check reload-between nfbox_ctl reload --policy "$NS_TMP/between.yaml" --confirm 60s
t_check reload-second nfbox_ctl reload --policy "$NS_TMP/closed.yaml" --confirm 4s
t_check second-pending [ "$(web)" = timeout ]
t_check back-to-confirmed wait_until 10 web_is open
t_check status-clean [ "$(nfbox_ctl status | grep -c "^policy: .*policy.yaml")" -eq 1 ]

# A bad reload with --confirm changes nothing and leaves nothing pending.
printf 'version: 1\nrules: [\n' >"$NS_TMP/bad.yaml"
out=$(nfbox_ctl reload --policy "$NS_TMP/bad.yaml" --confirm 60s 2>&1); rc=$?
t_check bad-confirm-fails [ "$rc" -eq 3 ]
t_check bad-confirm-unchanged grep -q "policy in force is unchanged" <<<"$out"
t_check bad-leaves-nothing-pending [ "$(pending)" = none ]
t_check bad-duration [ "$(nfbox_ctl reload --confirm 0s >/dev/null 2>&1; echo $?)" -eq 2 ]

# The configured file edited in place, reloaded with --confirm, the daemon
# killed in the window: the next daemon rolls back at its start.
closed_policy closed >"$NS_TMP/policy.yaml"
backend_policy "$NS_TMP/policy.yaml"
nfbox_ctl reload --confirm 600s >/dev/null 2>&1
t_check edited-in-force [ "$(web)" = timeout ]
kill -9 "$NFBOX_PID"
wait "$NFBOX_PID" 2>/dev/null
NFBOX_PID=
t_check killed-still-enforced [ "$(web)" = timeout ]
nfbox_start "$NS_TMP/policy.yaml" || t_fail restart "$(cat "$NS_TMP/nfbox.err")"
t_check restart-rolls-back [ "$(web)" = open ]
t_check restart-not-pending [ "$(pending)" = none ]
grep -q "pending confirmation when the last daemon stopped" "$NS_TMP/nfbox.err" && t_ok restart-logged ||
	t_fail restart-logged "$(tail -n 5 "$NS_TMP/nfbox.err")"
t_done
