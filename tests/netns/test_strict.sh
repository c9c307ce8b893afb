#!/bin/bash
# nfbox run --strict: a policy with warnings is not loaded, as validate
# --strict refuses it. The warning here: a set defined but not used.
# - the start with such a policy: refused (exit 78, what nfbox.service does
#   not restart on), each warning an error at FILE:LINE:COL, then why;
#   nothing enforced;
# - without --strict the same policy starts, the warning printed, and is
#   enforced;
# - a daemon started --strict on a clean policy: a reload (control socket)
#   to one with a warning is refused (exit 3, the warning at its place),
#   what status says is in force unchanged (the BPF classifier's
#   generation, the fingerprint, the reloads that went through), the
#   refusal counted, and the old policy still enforced (traffic); the same through SIGHUP; a clean reload then goes through.
# Positive control (NFBOX_TEST_PLANT): run-strict-ignored (--strict does
# nothing) makes start-refused, reload-refused and sighup-refused fail.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
policy() { # FILE PORT [warn]: drops udp/PORT; "warn": with a set no rule uses
	{
		printf 'version: 1\n'
		[ "${3:-}" = warn ] && printf 'sets:\n  spare: [192.0.2.9]\n'
		printf 'hooks:\n  forward: { default: accept }\nrules:\n  - { name: drop-%s, service: udp/%s, action: drop }\n' "$2" "$2"
	} >"$1"
}
policy "$NS_TMP/clean.yaml" 7000
policy "$NS_TMP/warn.yaml" 7001 warn
W="$NS_TMP/warn.yaml:3:3: error: set 'spare' is defined but not used"
refused="refused: nfbox runs with --strict, and the policy has 1 warning"
# what is in force, by status: the classifier's generation (BPF), the
# policy's fingerprint, the reloads that went through
in_force() {
	nfbox_ctl status --json | jq -r '"\(.generation) \(.fingerprint) \(.reloads_ok)"'
}
reloads_failed() { nfbox_ctl status --json | jq -r .reloads_failed; }

# ---- the start ----
backend_policy "$NS_TMP/warn.yaml"
in_a timeout 30 "$NFBOX" run --strict --policy "$NS_TMP/warn.yaml" --state-dir "$NS_TMP/state" \
	--socket "$NFBOX_SOCK" --pin-dir "$NFBOX_PINS" >"$NS_TMP/strict.out" 2>"$NS_TMP/strict.err"
rc=$?
t_check start-refused [ $rc = 78 ]
t_check start-names-warning grep -qF "$W" "$NS_TMP/strict.err"
t_check start-says-why grep -qF "$refused" "$NS_TMP/strict.err"
t_check start-nothing-enforced [ "$(probe_from $C4 $S4 7001)" = pass ]

nfbox_start "$NS_TMP/warn.yaml" || { t_fail start-without-strict "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check start-without-strict-warns grep -qF "$NS_TMP/warn.yaml:3:3: warning: set 'spare' is defined but not used" "$NS_TMP/nfbox.err"
t_check start-without-strict-enforced [ "$(probe_from $C4 $S4 7001)" = drop ]
nfbox_stop

# ---- reloads of a daemon run --strict ----
nfbox_start "$NS_TMP/clean.yaml" --strict || { t_fail start-strict-clean "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check clean-enforced [ "$(probe_from $C4 $S4 7000)" = drop ]
g=$(in_force)
out=$(nfbox_ctl reload --policy "$NS_TMP/warn.yaml" 2>&1)
rc=$?
t_check reload-refused [ $rc = 3 ]
t_check reload-names-warning grep -qF "$W" <<<"$out"
t_check reload-says-why grep -qF "$refused" <<<"$out"
t_check reload-keeps-in-force [ "$(in_force)" = "$g" ]
t_check reload-counted-failed [ "$(reloads_failed)" = 1 ]
t_check reload-keeps-old [ "$(probe_from $C4 $S4 7000)" = drop ]
t_check reload-new-not-in-force [ "$(probe_from $C4 $S4 7001)" = pass ]

cp "$NS_TMP/clean.yaml" "$NS_TMP/clean.orig"
cp "$NS_TMP/warn.yaml" "$NS_TMP/clean.yaml"
said() { grep -cF "$refused" "$NS_TMP/nfbox.err"; }
n0=$(said) # the refused reload above is in the log too
kill -HUP "$NFBOX_PID"
said_again() { [ "$(said)" -gt "$n0" ]; }
t_check sighup-refused wait_until 10 said_again
t_check sighup-names-warning grep -qF "$NS_TMP/clean.yaml:3:3: error: set 'spare'" "$NS_TMP/nfbox.err"
t_check sighup-keeps-in-force [ "$(in_force)" = "$g" ]
t_check sighup-keeps-old [ "$(probe_from $C4 $S4 7001)" = pass ]

cp "$NS_TMP/clean.orig" "$NS_TMP/clean.yaml"
policy "$NS_TMP/clean2.yaml" 7002
t_check clean-reload-loads nfbox_ctl reload --policy "$NS_TMP/clean2.yaml"
t_check clean-reload-in-force [ "$(in_force)" != "$g" ]
t_check clean-reload-enforced [ "$(probe_from $C4 $S4 7002)" = drop ]
nfbox_stop

# ---- a rollback is never refused ----
/usr/bin/python3 tests/lib/mmdbwrite.py "$NS_TMP/c.mmdb" 192.0.2.0/24=DE
cat >"$NS_TMP/geo.yaml" <<YAML
version: 1
sets:
  geo: { country: [de], database: $NS_TMP/c.mmdb }
hooks:
  forward: { default: accept }
rules:
  - { name: drop-geo, from: geo, action: drop }
  - { name: drop-7003, service: udp/7003, action: drop }
YAML
nfbox_start "$NS_TMP/geo.yaml" --strict || { t_fail start-strict-geo "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check geo-enforced [ "$(probe_from $C4 $S4 7003)" = drop ]
t_check confirm-reload nfbox_ctl reload --confirm 2s --policy "$NS_TMP/clean2.yaml"
t_check confirm-reload-in-force [ "$(probe_from $C4 $S4 7003)" = pass ]
rm "$NS_TMP/c.mmdb"
t_check rollback-not-refused wait_until 10 grep -q "rolled back to the last confirmed policy" "$NS_TMP/nfbox.err"
t_check rollback-in-force [ "$(probe_from $C4 $S4 7003)" = drop ]
nfbox_stop
t_done
