#!/bin/bash
# nfbox test runner: runs every suite and ends with "N passed, N failed, N skipped".
#
# Each suite is a program that prints one line per case: "ok NAME",
# "FAIL NAME: why" or "skip NAME: why" (tests/lib/check.h, tests/lib/lib.sh).
# The runner holds every suite to these rules, so that no suite can pass by
# not running:
#  - a suite that exits non-zero without a FAIL line counts as one failure,
#    and so does a suite that reports no case at all;
#  - a suite file that is not executable fails (it would otherwise be left
#    out without a word), and so does a C test that was not built;
#  - every suite has a time limit (300 s; 3600 s under NFBOX_LONG, or its
#    own "# runner: timeout SECONDS"): one that hangs is killed and fails
#    with its name;
#  - a skip must say why in one of three words: "skip NAME: kernel: ..."
#    (the kernel lacks a feature), "skip NAME: machine: ..." (this machine
#    lacks the hardware, e.g. a second CPU) or "skip NAME: build: ..." (the
#    build tested cannot tell, e.g. a sanitizer check on make coverage's
#    gcov build). Any other skip, such as a missing tool, is a failure:
#    packaging/install-deps.sh installs them.
#
# A suite whose header says "# runner: long" (two booted roots, say) runs
# only under NFBOX_LONG (make check-long).
#
# Suites run in parallel (NFBOX_TEST_JOBS at a time, default 8: a suite
# waits on timers and traffic a good part of its time; on a 2-core machine
# 6 left it 11% idle, mostly in the first 40 s, and 8 left 4.5% (the suites
# took 214 and 219 s against 236 s; 10 took 208 s): each has its own namespaces,
# pins, sockets and state directories. A suite whose
# header says "# runner: alone" (it measures the whole machine, such as
# memory or timing) runs after the others, by itself; one whose header says
# "# runner: long" runs only under NFBOX_LONG (make check-long). The longest suites
# of the last run (build/test-times; in a fresh tree, tests/lib/suite-times)
# start first.
#
# Usage: tests/run.sh [SUITE-PATTERN...]   (e.g. tests/run.sh golden; with
#        several patterns a suite runs if its name contains any of them:
#        tests/run.sh unit/ fuzz/ bpf/)
# Environment: NFBOX_LONG=1 for the long runs (make check-long);
#              NFBOX_TEST_JOBS=N suites at a time (1: one after the other);
#              NFBOX_BUILD=DIR the build tree (build; make coverage: build/cov);
#              NFBOX_TEST_CPU=1 each suite in a cpuacct group (cgroup v1):
#              the CPU seconds of each, and their total, at the end (where
#              the time of make check goes; kept in build/test-cpu);
#              NFBOX_UNIT_RELEASE=bookworm|trixie the one release the
#              suites that boot a Debian root use (see BOTH_RELEASES).
set -u
shopt -s nullglob
cd "$(dirname "$0")/.."

patterns=("$@")
B=${NFBOX_BUILD:-build}
[[ "$B" == /* ]] || B=$PWD/$B
JOBS=${NFBOX_TEST_JOBS:-8}
LIMIT=$([ -n "${NFBOX_LONG:-}" ] && echo 3600 || echo 300)
TIMES=$B/test-times
logdir=$(mktemp -d /tmp/nfbox-tests.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

export NFBOX_BIN=$B/asan/nfbox
export NFBOX_BIN_RELEASE=$B/nfbox
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# ---- the suites: "NAME<TAB>FILE<TAB>COMMAND..." ----

names=() files=() cmds=()
add() { # NAME FILE COMMAND...
	local name=$1 file=$2 p want
	shift 2
	# "# runner: long": only in the long runs (make check-long)
	[ -n "${NFBOX_LONG:-}" ] || ! grep -q '^# runner: long$' "$file" 2>/dev/null || return 0
	if [ ${#patterns[@]} -gt 0 ]; then
		want=0
		for p in "${patterns[@]}"; do [[ "$name" == *"$p"* ]] && want=1; done
		[ "$want" -eq 1 ] || return 0
	fi
	# a suite too costly for make check says so; make check-long runs it
	[ -z "${NFBOX_LONG:-}" ] && grep -q '^# runner: long$' "$file" 2>/dev/null && return 0
	names+=("$name")
	files+=("$file")
	cmds+=("$*")
}

# C tests of a kind: built under ASan+UBSan by make unit. add_c KIND SOURCE...
add_c() {
	local kind=$1 src
	shift
	for src in "$@"; do add "$kind/$(basename "$src" .c)" "$src" "$B/asan/$(basename "$src" .c)"; done
}
# Unit tests: no privileges.
add_c unit tests/unit/test_*.c
for t in tests/unit/test_*.sh; do
	add "unit/$(basename "$t" .sh)" "$t" "$t"
done
# Fuzzing the loader for a bounded time.
add "fuzz/policy" tests/fuzz/run.sh tests/fuzz/run.sh
# BPF fixtures through BPF_PROG_TEST_RUN (root).
add_c bpf tests/bpf/test_bpf_*.c
# The Debian package installed by apt in a throw-away root (root). A suite
# of BOTH_RELEASES boots a root of this machine's release, and runs a second
# time, as "distro/NAME[RELEASE]", on the other release it supports
# (NFBOX_UNIT_RELEASE): Debian 13 on a Debian 12 machine and 12 on 13. They
# are long suites, so make check-long tests both and make check neither.
# With NFBOX_UNIT_RELEASE set, the one release it names.
BOTH_RELEASES=" test_cockpit "
case $(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") in
bookworm) other_release=trixie ;;
trixie) other_release=bookworm ;;
*) other_release= ;;
esac
[ -z "${NFBOX_UNIT_RELEASE:-}" ] || other_release=
for t in tests/distro/test_*.sh; do
	n=$(basename "$t" .sh)
	add "distro/$n" "$t" "$t"
	[ -n "$other_release" ] && [[ "$BOTH_RELEASES" == *" $n "* ]] &&
		add "distro/$n[$other_release]" "$t" env NFBOX_UNIT_RELEASE=$other_release "$t"
done
# Real traffic in network namespaces (root). The engine suites run once
# per backend: the same cases against the BPF classifier and against the
# nftables backend (NFBOX_BACKEND, tests/lib/netns.sh).
BOTH_BACKENDS=" test_usage test_strict test_schedule test_schedule_full test_country test_urlset test_hostset test_ids test_early test_connlimit test_synproxy test_mapped test_confirm test_dynset test_dynset_crash test_dynset_renew test_neverban test_events test_metrics test_enforce test_frag test_l4key test_limit test_reload test_nat test_reject test_service test_udplite test_iface_limits test_trace_live "
for t in tests/netns/test_*.sh; do
	n=$(basename "$t" .sh)
	add "netns/$n" "$t" env NFBOX_BACKEND=bpf "$t"
	[[ "$BOTH_BACKENDS" == *" $n "* ]] && add "netns/$n[nftables]" "$t" env NFBOX_BACKEND=nftables "$t"
done

# ---- one suite ----

logname() { echo "$logdir/$(echo "$1" | tr '/ []' '____').log"; }

# run_one INDEX: the suite's output into its log, its status, and its time.
run_one() {
	local i=$1 name=${names[$1]} file=${files[$1]} log limit start rc bin
	log=$(logname "$name")
	limit=$(sed -n 's/^# runner: timeout \([0-9]*\)$/\1/p' "$file" 2>/dev/null | head -n 1)
	[ -n "$limit" ] && [ -z "${NFBOX_LONG:-}" ] || limit=$LIMIT
	start=$(date +%s)
	cg=
	if [ -n "${NFBOX_TEST_CPU:-}" ] && [ -w /sys/fs/cgroup/cpuacct ]; then
		# Measuring: the suite and everything it starts in a cpuacct group
		cg=/sys/fs/cgroup/cpuacct/nfbox-tests.$$/$(echo "$name" | tr '/ []' '____')
		mkdir -p "$cg" && echo "$BASHPID" >"$cg/cgroup.procs" || cg=
	fi
	bin=${cmds[$i]##* } # the program itself: the last word
	if [ ! -e "$bin" ]; then
		echo "FAIL $name: $bin was not built (make unit builds every test)" >"$log"
		rc=1
	elif [ ! -x "$bin" ]; then
		echo "FAIL $name: $bin is not executable (chmod +x $bin; otherwise it is never run)" >"$log"
		rc=1
	else
		# A hung suite: TERM (its trap cleans up), then KILL 20 s later.
		timeout -k 20 "$limit" ${cmds[$i]} >"$log" 2>&1 </dev/null
		rc=$?
		[ "$rc" -eq 124 ] && echo "FAIL $name: timed out after ${limit} s (killed)" >>"$log"
	fi
	if [ -n "$cg" ]; then
		echo "$(($(cat "$cg/cpuacct.usage") / 1000000000)) $name" >>"$logdir/cpu"
		echo "$BASHPID" >/sys/fs/cgroup/cpuacct/cgroup.procs
	fi
	echo "$rc $(($(date +%s) - start))" >"$log.done"
}

# Report the suite of index i from its log; adds to the totals.
passed=0 failed=0 skipped=0
failures=()
report() {
	local i=$1 name=${names[$1]} log rc secs p f s bad
	log=$(logname "$name")
	read -r rc secs <"$log.done"
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^FAIL ' "$log")
	s=$(grep -c '^skip ' "$log")
	# A skip for anything but a missing kernel feature, hardware or a build
	# that cannot tell is a failure.
	bad=$(grep '^skip ' "$log" | grep -cvE '^skip [^:]*: (kernel|machine|build): ')
	if [ "$bad" -gt 0 ]; then
		grep '^skip ' "$log" | grep -vE '^skip [^:]*: (kernel|machine|build): ' |
			sed 's/^skip \([^:]*\): /FAIL \1: skipped for a reason that is not the kernel, the machine or the build: /' >>"$log"
		f=$((f + bad))
		s=$((s - bad))
	fi
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
	printf '%-40s %4d passed %4d failed %4d skipped  (%ds)\n' "$name" "$p" "$f" "$s" "$secs"
	grep '^skip ' "$log" | sed 's/^/    /'
	echo "$name $secs" >>"$logdir/times"
	if [ "$f" -ne 0 ]; then
		failures+=("$name")
		echo "---- $name: failing cases and the end of its output ----"
		grep '^FAIL ' "$log" | head -n 40
		tail -n 60 "$log" | grep -v '^ok ' | sed 's/^/  | /'
		echo "----"
	fi
}

# ---- the order: the longest of the last run first; "alone" suites last ----

order=() alone=()
# This build tree's last times, else those of a CI run kept in the tree.
times_in=$TIMES
[ -s "$times_in" ] || times_in=tests/lib/suite-times
for i in "${!names[@]}"; do
	if grep -q '^# runner: alone' "${files[$i]}" 2>/dev/null; then
		alone+=("$i")
	else
		# The last run's time; without one (a fresh clone), a guess by kind:
		# namespaces and packages take long, unit tests do not.
		guess=5
		case ${names[$i]} in netns/* | distro/* | fuzz/*) guess=30 ;; esac
		order+=("$(awk -v n="${names[$i]}" -v g=$guess '$1 == n { t = $2 } END { print (t == "" ? g : t) + 0 }' "$times_in" 2>/dev/null || echo $guess) $i")
	fi
done
mapfile -t order < <(printf '%s\n' "${order[@]}" | sort -k1,1nr -k2,2n | awk 'NF { print $2 }')

running=()
finish_one() { # wait for any suite, report every one that is done
	local k left=()
	wait -n 2>/dev/null || sleep 0.1
	for k in "${running[@]}"; do
		if [ -e "$(logname "${names[$k]}").done" ]; then
			wait "${pids[$k]}" 2>/dev/null
			report "$k"
		else
			left+=("$k")
		fi
	done
	running=("${left[@]}")
}

declare -A pids
for i in "${order[@]}"; do
	while [ ${#running[@]} -ge "$JOBS" ]; do finish_one; done
	run_one "$i" &
	pids[$i]=$!
	running+=("$i")
done
while [ ${#running[@]} -gt 0 ]; do finish_one; done
for i in "${alone[@]}"; do
	run_one "$i"
	report "$i"
done

if [ -s "$logdir/cpu" ]; then
	echo "CPU seconds by suite (NFBOX_TEST_CPU):"
	sort -rn "$logdir/cpu" | head -n 40 | sed 's/^/    /'
	awk '{ s += $1 } END { print "    total " s " s" }' "$logdir/cpu"
	cp "$logdir/cpu" "$B/test-cpu"
fi

# Keep this run's times for the next one's order (a pattern run adds to them).
if [ -s "$logdir/times" ]; then
	mkdir -p "$B"
	{ cat "$logdir/times"; [ -f "$TIMES" ] && cat "$TIMES"; } | awk '!seen[$1]++' >"$TIMES.tmp" && mv "$TIMES.tmp" "$TIMES"
fi

# The host as the suites found it: a suite that removed /dev/null (a tool
# told to write its report there did once) breaks everything after it.
if [ ! -c /dev/null ]; then
	echo "FAIL host: /dev/null is no longer a character device: a suite removed it (mknod -m 666 /dev/null c 1 3)"
	failed=$((failed + 1))
	failures+=("host")
fi
if [ ${#failures[@]} -gt 0 ]; then
	echo "failed suites: ${failures[*]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
