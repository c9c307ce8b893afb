#!/bin/bash
# Every make target the documents name works from a fresh clone, and CI
# runs it:
#  - every `make TARGET` of README.md, CONTRIBUTING.md and docs/testing.md
#    is a target of the Makefile, and CI runs it: .ci/run (check,
#    check-debian13) or .ci/targets (the rest, each from a fresh clone, in
#    a short form where the full one is long); make install alone is left
#    to the packaging's tests (make deb, the .deb in Debian roots);
#  - the test build's objects call no sanitizer function by a strong
#    reference: make coverage builds the same code without sanitizers, and
#    such a call did not link there (test_enomem's stack trace).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
OBJ=$(dirname "$NFBOX")/obj

# The targets the documents name ("make" alone is "all"), lines joined: a
# name may follow `make on the next line.
named=$(cat README.md CONTRIBUTING.md docs/testing.md | tr '\n' ' ' | grep -oE '`make( +[a-z][a-z0-9-]*)?`' |
	sed -E 's/`make +([a-z0-9-]+)`/\1/; s/`make`/all/' | sort -u)
[ "$(wc -w <<<"$named")" -ge 10 ] || t_fail targets-named "only these make targets found in the documents: $named"
for t in $named; do
	if ! grep -qE "^$t:" Makefile; then
		t_fail "target-$t" "the documents name make $t, which the Makefile lacks"
	elif grep -qE "^target $t( |$)" .ci/targets || grep -qE "^make $t( |\$|$)" .ci/run; then
		t_ok "target-$t"
	else
		t_fail "target-$t" "the documents name make $t, which CI runs nowhere (.ci/run, .ci/targets)"
	fi
done

if [ ! -d "$OBJ" ]; then
	t_fail sanitizer-calls-weak "no objects in $OBJ (make unit)"
else
	strong=$(find "$OBJ" -name '*.o' -exec nm -A {} + 2>/dev/null | awk '$(NF-1) == "U" && $NF ~ /^__sanitizer_/ { print $1 " " $NF }')
	[ -z "$strong" ] && t_ok sanitizer-calls-weak ||
		t_fail sanitizer-calls-weak "make coverage's build has no sanitizer to link these with (declare them weak): $strong"
fi
t_done
