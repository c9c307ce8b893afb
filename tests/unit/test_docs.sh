#!/bin/bash
# The documentation says what the code does: nfbox(8)'s SYNOPSIS lists
# every command with exactly the options its option table declares (the
# same text `nfbox --help` prints); the page has a section for every
# command, and for no other, that names and describes every option of its
# --help, short forms too, and defines no option the --help lacks
# (tests/lib/mancheck.py; nfbox-fleet-rbac(8) against its --help alike);
# every policy example of policy/README.md and
# nfbox-policy(5) validates, and where the docs show what validate or plan
# prints for it, it prints exactly that (tests/lib/docexamples.py).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
NFBOX=${NFBOX_BIN_RELEASE:-$NFBOX}

page=packaging/man/nfbox.8
rendered=$(MANWIDTH=1000 man -l "$page" 2>/dev/null | col -b) || { t_fail render "man -l $page failed"; t_done; }
man_synopsis=$(sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' <<<"$rendered" | sed 's/^ *//' | grep '^nfbox [a-z]')
help_synopsis=$("$NFBOX" --help | sed -n 's/^  \(nfbox [a-z][a-z]*\( .*\)\{0,1\}\)$/\1/p')
commands=$(awk '{print $2}' <<<"$help_synopsis")

[ -n "$commands" ] || { t_fail commands "no command in 'nfbox --help'"; t_done; }
for cmd in $commands; do
	want=$(grep "^nfbox $cmd\( \|$\)" <<<"$help_synopsis")
	have=$(grep "^nfbox $cmd\( \|$\)" <<<"$man_synopsis")
	if [ "$want" = "$have" ]; then
		t_ok "synopsis-$cmd"
	else
		t_fail "synopsis-$cmd" "nfbox(8) says '$have', the code '$want'"
	fi
done
extra=$(grep -v -F -x -f <(printf '%s\n' "$help_synopsis") <<<"$man_synopsis")
[ -z "$extra" ] && t_ok synopsis-no-extra || t_fail synopsis-no-extra "nfbox(8) lists what the code lacks: $extra"
# Both ways: every command and option of the --help is in the man page
# (short forms beside long ones), every one the page defines in the --help.
/usr/bin/python3 tests/lib/mancheck.py nfbox "$page" "$NFBOX" || T_FAILED=$((T_FAILED + 1))
/usr/bin/python3 tests/lib/mancheck.py script packaging/man/nfbox-fleet-rbac.8 packaging/fleet/nfbox-fleet-rbac || T_FAILED=$((T_FAILED + 1))
/usr/bin/python3 tests/lib/docexamples.py "$NFBOX" policy/README.md packaging/man/nfbox-policy.5 || T_FAILED=$((T_FAILED + 1))
# and the README's own example (its ten-line policy)
/usr/bin/python3 tests/lib/docexamples.py "$NFBOX" README.md || T_FAILED=$((T_FAILED + 1))
t_done
