#!/bin/bash
# The state directory on a machine where the package was never installed:
# `nfbox run` from the build tree, with the default paths, makes
# /var/lib/nfbox (0755) and its state directory (root's, 0700) itself, and
# then every feature that needs it works: reload --confirm, dynamic sets
# and counters that survive a SIGKILL and an adoption. A parent or a state
# directory that someone else could change is refused with the reason and
# the fix, and nothing is enforced; a state directory others may read is
# made 0700.
#
# /var/lib is a tmpfs of this test's own mount namespace: the host's
# /var/lib/nfbox is neither read nor made.
set -u
cd "$(dirname "$0")/../.."
if [ -z "${NFBOX_STATE_MNTNS:-}" ]; then
	NFBOX_STATE_MNTNS=1 exec unshare -m --propagation private "$0" "$@"
fi
. tests/lib/lib.sh
. tests/lib/netns.sh
mount -t tmpfs -o mode=0755 nfbox-test-varlib /var/lib || { t_fail setup "cannot mount a tmpfs on /var/lib"; t_done; }

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
STATE=/var/lib/nfbox/state-$NS_A
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
sets:
  banned: { dynamic: true }
hooks:
  forward: { default: accept }
rules:
  - { name: drop-banned, from: banned, action: drop }
YAML

# start_default: the daemon with the default state directory; 0 once ready.
start_default() {
	: >"$NS_TMP/nfbox.out"
	ip netns exec "$NS_A" "$NFBOX" run --policy "$NS_TMP/policy.yaml" --socket "$NFBOX_SOCK" --pin-dir "$NFBOX_PINS" \
		>"$NS_TMP/nfbox.out" 2>"$NS_TMP/nfbox.err" &
	NFBOX_PID=$!
	nfbox_wait_ready 2>/dev/null
}
# refused WHAT: the start fails, the message has WHAT, and nothing is left
# enforcing.
refused() {
	start_default && return 1
	wait "$NFBOX_PID"
	local rc=$?
	NFBOX_PID=
	[ "$rc" -ne 0 ] && grep -qF -- "$1" "$NS_TMP/nfbox.err" && ! [ -e "$NFBOX_PINS" ] || {
		echo "exit $rc"
		cat "$NS_TMP/nfbox.err"
		return 1
	}
}
mode_of() { stat -c '%a %u' "$1"; }
absent() { ! [ -e "$1" ]; }
not_in() { ! grep -qF -- "$1" "$2"; }
status_field() { nfbox_ctl status --json | jq -r --arg k "$1" '.[$k]'; }
listed() { nfbox_ctl set list "$1" | cut -f1 | grep -qx "$2"; }

t_check no-state-dir-before absent /var/lib/nfbox
if start_default; then
	t_ok starts-without-var-lib-nfbox
else
	t_fail starts-without-var-lib-nfbox "$(cat "$NS_TMP/nfbox.err")"
	t_done
fi
t_check parent-made-0755-root [ "$(mode_of /var/lib/nfbox)" = "755 0" ]
t_check state-dir-made-0700-root [ "$(mode_of "$STATE")" = "700 0" ]
t_check no-warning-about-it not_in "state directory" "$NS_TMP/nfbox.err"
t_check status-names-it [ "$(status_field state_dir)" = "$STATE" ]
t_check reload-confirm-works nfbox_ctl reload --confirm 60
t_check confirm-works nfbox_ctl confirm
t_check set-add nfbox_ctl set add banned 192.0.2.7
kill -9 "$NFBOX_PID"
wait "$NFBOX_PID" 2>/dev/null
NFBOX_PID=
if start_default; then
	t_check entry-survives-sigkill-and-adoption listed banned 192.0.2.7
	t_check adopted grep -q "adopted the enforcing state" "$NS_TMP/nfbox.err"
else
	t_fail restart-after-sigkill "$(cat "$NS_TMP/nfbox.err")"
fi
nfbox_stop

# Refusals: the start fails, saying why and how to fix it.
rm -rf "$NFBOX_PINS"
chown 65534 /var/lib/nfbox
t_check parent-of-another-user-refused refused "chown root /var/lib/nfbox"
chown 0 /var/lib/nfbox
chmod 0775 /var/lib/nfbox
t_check parent-group-writable-refused refused "chmod go-w /var/lib/nfbox"
chmod 0755 /var/lib/nfbox
chown 65534 "$STATE"
t_check state-dir-of-another-user-refused refused "chown root $STATE"
chown 0 "$STATE"
chmod 0770 "$STATE"
t_check state-dir-group-writable-refused refused "chmod go-w $STATE"
mv "$STATE" "$STATE.real"
ln -s "$STATE.real" "$STATE"
t_check state-dir-symlink-refused refused "not a directory but a symbolic link"
rm "$STATE"
mv "$STATE.real" "$STATE"
# Readable by others: made private, with a warning, and used.
chmod 0755 "$STATE"
if start_default; then
	t_check readable-state-dir-made-0700 [ "$(mode_of "$STATE")" = "700 0" ]
	t_check readable-state-dir-warned grep -q "was mode 0755; it is now 0700" "$NS_TMP/nfbox.err"
	t_check readable-state-dir-entries-kept listed banned 192.0.2.7
else
	t_fail readable-state-dir-used "$(cat "$NS_TMP/nfbox.err")"
fi
nfbox_stop
t_done
