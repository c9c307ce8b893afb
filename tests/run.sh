#!/bin/bash
# nfbox test runner: runs every suite and ends with "N passed, N failed, N skipped".
#
# Each suite is a program that prints one line per case: "ok NAME",
# "FAIL NAME: why" or "skip NAME: why" (tests/lib/check.h, tests/lib/lib.sh).
# A suite that exits non-zero without a FAIL line counts as one failure.
#
# Usage: tests/run.sh [SUITE-PATTERN...]   (e.g. tests/run.sh golden; with
#        several patterns a suite runs if its name contains any of them:
#        tests/run.sh unit/ fuzz/ bpf/)
# Environment: NFBOX_LONG=1 for the long runs (make check-long).
set -u
cd "$(dirname "$0")/.."

patterns=("$@")
B=build
passed=0 failed=0 skipped=0
failures=()
logdir=$(mktemp -d /tmp/nfbox-tests.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

export NFBOX_BIN=$PWD/$B/asan/nfbox
export NFBOX_BIN_RELEASE=$PWD/$B/nfbox
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_suite() {
	local name=$1
	shift
	if [ ${#patterns[@]} -gt 0 ]; then
		local p_ want=0
		for p_ in "${patterns[@]}"; do [[ "$name" == *"$p_"* ]] && want=1; done
		[ "$want" -eq 1 ] || return 0
	fi
	local log=$logdir/$(echo "$name" | tr '/ ' '__').log
	local start=$SECONDS rc
	"$@" >"$log" 2>&1 </dev/null
	rc=$?
	local p f s
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^FAIL ' "$log")
	s=$(grep -c '^skip ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "FAIL $name: exited with status $rc" >>"$log"
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		f=1
		echo "FAIL $name: ran no test case" >>"$log"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	printf '%-40s %4d passed %4d failed %4d skipped  (%ds)\n' "$name" "$p" "$f" "$s" $((SECONDS - start))
	grep '^skip ' "$log" | sed 's/^/    /'
	if [ "$f" -ne 0 ]; then
		failures+=("$name")
		echo "---- $name: failing cases and the end of its output ----"
		grep '^FAIL ' "$log" | head -n 40
		tail -n 60 "$log" | grep -v '^ok ' | sed 's/^/  | /'
		echo "----"
	fi
}

# Unit tests: no privileges; built under ASan+UBSan.
for t in $B/asan/test_*; do
	[ -x "$t" ] || continue
	case "$t" in *test_bpf_*) continue ;; esac
	run_suite "unit/$(basename "$t")" "$t"
done
for t in tests/unit/test_*.sh; do
	[ -x "$t" ] || continue
	run_suite "unit/$(basename "$t" .sh)" "$t"
done

# Fuzzing the loader for a bounded time.
run_suite "fuzz/policy" tests/fuzz/run.sh

# BPF fixtures through BPF_PROG_TEST_RUN (root).
for t in $B/asan/test_bpf_*; do
	[ -x "$t" ] || continue
	run_suite "bpf/$(basename "$t")" "$t"
done

# The Debian package installed by apt in a throw-away root (root).
for t in tests/distro/test_*.sh; do
	[ -x "$t" ] || continue
	run_suite "distro/$(basename "$t" .sh)" "$t"
done

# Real traffic in network namespaces (root). The engine suites run once
# per backend: the same cases against the BPF classifier and against the
# nftables backend (NFBOX_BACKEND, tests/lib/netns.sh).
BOTH_BACKENDS=" test_confirm test_dynset test_events test_metrics test_enforce test_frag test_l4key test_limit test_reload test_nat test_reject test_service test_udplite "
for t in tests/netns/test_*.sh; do
	[ -x "$t" ] || continue
	n=$(basename "$t" .sh)
	run_suite "netns/$n" env NFBOX_BACKEND=bpf "$t"
	[[ "$BOTH_BACKENDS" == *" $n "* ]] && run_suite "netns/$n[nftables]" env NFBOX_BACKEND=nftables "$t"
done

if [ ${#failures[@]} -gt 0 ]; then
	echo "failed suites: ${failures[*]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
