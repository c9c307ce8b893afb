#!/bin/bash
# Every make target the documents name works from a fresh clone, and CI
# runs it:
#  - the test build's objects call no sanitizer function by a strong
#    reference: make coverage builds the same code without sanitizers, and
#    such a call did not link there (test_enomem's stack trace).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
OBJ=$(dirname "$NFBOX")/obj

if [ ! -d "$OBJ" ]; then
	t_fail sanitizer-calls-weak "no objects in $OBJ (make unit)"
else
	strong=$(find "$OBJ" -name '*.o' -exec nm -A {} + 2>/dev/null | awk '$(NF-1) == "U" && $NF ~ /^__sanitizer_/ { print $1 " " $NF }')
	[ -z "$strong" ] && t_ok sanitizer-calls-weak ||
		t_fail sanitizer-calls-weak "make coverage's build has no sanitizer to link these with (declare them weak): $strong"
fi
t_done
